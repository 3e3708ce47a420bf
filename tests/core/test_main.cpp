// GoogleTest main for the core tests: one LibTorch thread, so that ctest can run suites in parallel on
// a 2-core machine without oversubscribing it (tests that need a thread count set it themselves).
#include <gtest/gtest.h>
#include <torch/torch.h>

int main(int argc, char** argv)
{
    torch::set_num_threads(1);
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
