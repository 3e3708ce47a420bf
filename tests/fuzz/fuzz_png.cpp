// Fuzz harness: the PNG reader of image folders (core/io/image_folder.h: readPngGray) on the input as a file.
// Seeds: corpus/png (every colour type and bit depth, interlaced, with a palette and transparency).
#include "core/io/image_folder.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    icl::fuzz::initialize();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string path = icl::fuzz::writeInput("image.png", data, size);
    icl::fuzz::readOrRefuse("readPngGray", [&] {
        const icl::GrayImage image = icl::readPngGray(path);
        if (image.rows < 0 || image.cols < 0 || image.pixels.size() != size_t(image.rows) * size_t(image.cols))
            icl::fuzz::finding("readPngGray", "rows × cols and the pixels disagree");
    });
    return 0;
}
