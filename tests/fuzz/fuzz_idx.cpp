// Fuzz harness: the IDX readers (core/io/idx.h: readIdx, readIdxImages, readIdxLabels) on the input as a file,
// plain or gzip-compressed (zlib reads both). Seeds: corpus/idx.
#include "core/io/idx.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    icl::fuzz::initialize();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string path = icl::fuzz::writeInput("data.idx", data, size);
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
    return 0;
}
