// Fuzz harness: readWeightsFile (core/io/weights_file.h) on the input as a file named ICL_FUZZ_FILE_NAME. One source,
// four targets that differ in their seeds: fuzz_torch_zip (the .pt zip container and its pickle), fuzz_safetensors
// (the header and the data), fuzz_npy, fuzz_npz. The format is detected from the bytes, so a mutation may cross
// from one to another. fuzz_torch_zip and fuzz_npz (ICL_FUZZ_ZIP_AWARE) also mutate the entries inside the archive
// (zip_mutator.h).
#include "core/io/weights_file.h"
#include "tests/fuzz/fuzz_file_driver.h"

#ifndef ICL_FUZZ_FILE_NAME
#error "define ICL_FUZZ_FILE_NAME (tests/fuzz/CMakeLists.txt)"
#endif

#if defined(ICL_FUZZ_ZIP_AWARE) && defined(ICL_FUZZ_LIBFUZZER)
#include "tests/fuzz/zip_mutator.h"

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed)
{
    return icl::fuzz::mutateZip(data, size, max_size, seed);
}
#endif

const char* const icl::fuzz::kInputName = ICL_FUZZ_FILE_NAME;

void icl::fuzz::fuzzInput(const std::string& path, const uint8_t*, size_t)
{
    icl::fuzz::readOrRefuse("detectWeightsFormat", [&] { (void)icl::detectWeightsFormat(path); });
    icl::fuzz::readOrRefuse("readWeightsFile", [&] {
        const icl::WeightsFile f = icl::readWeightsFile(path);
        for (const icl::NamedArray& t : f.tensors) {
            size_t n = 1;
            for (int64_t d : t.shape)
                n *= static_cast<size_t>(d);
            if (n != t.data.size())
                icl::fuzz::finding("readWeightsFile", "tensor " + t.name + ": shape and data disagree");
        }
    });
}
