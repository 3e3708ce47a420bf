// Fuzz harness: the PNG reader of image folders (core/io/image_folder.h: readPngGray) on the input as a file.
// Seeds: corpus/png (every colour type and bit depth, interlaced, with a palette and transparency).
#include "core/io/image_folder.h"
#include "tests/fuzz/fuzz_file_driver.h"

const char* const icl::fuzz::kInputName = "image.png";

void icl::fuzz::fuzzInput(const std::string& path, const uint8_t*, size_t)
{
    icl::fuzz::readOrRefuse("readPngGray", [&] {
        const icl::GrayImage image = icl::readPngGray(path);
        if (image.rows < 0 || image.cols < 0 || image.pixels.size() != size_t(image.rows) * size_t(image.cols))
            icl::fuzz::finding("readPngGray", "rows × cols and the pixels disagree");
    });
}
