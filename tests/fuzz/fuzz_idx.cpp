// Fuzz harness: the IDX readers (core/io/idx.h: readIdx, readIdxImages, readIdxLabels) on the input as a file,
// plain or gzip-compressed (zlib reads both). Seeds: corpus/idx.
#include "core/io/idx.h"
#include "tests/fuzz/fuzz_file_driver.h"

const char* const icl::fuzz::kInputName = "data.idx";

void icl::fuzz::fuzzInput(const std::string& path, const uint8_t*, size_t)
{
    icl::fuzz::readOrRefuse("readIdx", [&] {
        const icl::IdxArray a = icl::readIdx(path);
        size_t n = 1;
        for (int64_t d : a.shape)
            n *= static_cast<size_t>(d);
        if (n != a.data.size())
            icl::fuzz::finding("readIdx", "shape and data disagree");
    });
    icl::fuzz::readOrRefuse("readIdxImages", [&] { (void)icl::readIdxImages(path); });
    icl::fuzz::readOrRefuse("readIdxLabels", [&] { (void)icl::readIdxLabels(path); });
}
