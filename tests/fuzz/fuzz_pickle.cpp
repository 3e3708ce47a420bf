// Fuzz harness: the restricted unpickler of PyTorch checkpoints (icl::torch_pickle::unpickle, core/io/torch_pickle.h)
// on the input as a pickle stream, in memory. Seeds: corpus/pickle (data.pkl of small checkpoints).
#include "core/io/torch_pickle.h"
#include "tests/fuzz/fuzz_file_driver.h"

const char* const icl::fuzz::kInputName = nullptr;

void icl::fuzz::fuzzInput(const std::string&, const uint8_t* data, size_t size)
{
    icl::fuzz::readOrRefuse("unpickle", [&] {
        const icl::torch_pickle::Unpickled u = icl::torch_pickle::unpickle(data, size, "fuzz.pkl");
        if (u.root() != nullptr)
            (void)icl::torch_pickle::describeKind(*u.root());
    });
}
