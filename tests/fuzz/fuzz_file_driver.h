#pragma once
// The shared driver of the harnesses that hand each input to readers as one file (or as bytes in memory): the
// libFuzzer entry points, which set up the process once (initialize()) and then, for each input, write it to
// scratchDir()/kInputName and call the harness's fuzzInput. Included by exactly one source file per harness
// executable (it defines the extern "C" entry points); a harness defines kInputName and fuzzInput.

#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_common.h"

namespace icl::fuzz {

/// The file name the input is written under in scratchDir(); nullptr for a harness that reads the bytes in memory
/// (fuzzInput then gets an empty path).
extern const char* const kInputName;

/// Hands one input to the harness's readers: `path` is the file holding it (see kInputName), `data` and `size` the
/// same bytes. Runs each reader through readOrRefuse; calls finding() where a property beyond "no crash" fails.
void fuzzInput(const std::string& path, const uint8_t* data, size_t size);

} // namespace icl::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    icl::fuzz::initialize();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const char* name = icl::fuzz::kInputName;
    icl::fuzz::fuzzInput(name ? icl::fuzz::writeInput(name, data, size) : std::string(), data, size);
    return 0;
}
