#include "core/runtime/allocator.h"

#include <cstdlib>
#include <cstring>
#include <gtest/gtest.h>
#include <malloc.h>
#include <optional>
#include <string>
#include <thread>

#include "tests/support/scoped_env.h"

namespace {

using icl::test::ScopedEnv;

// glibc's own account of the bytes it holds in mmapped blocks.
std::size_t mappedBytes()
{
    return mallinfo2().hblkhd;
}

} // namespace

TEST(CpuAllocator, BlocksBelowTheThresholdComeFromTheHeapAfterConfiguring)
{
    ScopedEnv a("MALLOC_MMAP_THRESHOLD_", std::nullopt), b("MALLOC_TRIM_THRESHOLD_", std::nullopt),
        c("MALLOC_TOP_PAD_", std::nullopt), d("GLIBC_TUNABLES", std::nullopt);
    ASSERT_TRUE(icl::configureCpuAllocator());
    EXPECT_TRUE(icl::cpuAllocatorInfo().configured);
    // 24 MiB: above glibc's default starting threshold (128 KiB), below kMmapThresholdBytes. With the
    // defaults this block is mmapped; configured, the heap serves it and glibc maps nothing new.
    const std::size_t bytes = std::size_t(24) << 20;
    ASSERT_LT(bytes, icl::kMmapThresholdBytes);
    const std::size_t before = mappedBytes();
    void* p = nullptr;
    ASSERT_EQ(posix_memalign(&p, 64, bytes), 0);  // as LibTorch's CPU allocator asks
    std::memset(p, 1, bytes);
    EXPECT_LT(mappedBytes(), before + bytes);
    std::free(p);
    const std::string s = icl::cpuAllocatorInfo().summary();
    EXPECT_NE(s.find("64 MiB"), std::string::npos) << s;
    EXPECT_NE(s.find("256 MiB"), std::string::npos) << s;
}

// One arena for every thread: a thread started after configuring allocates from the main thread's heap
// (glibc would otherwise give it an arena of its own, whose heaps it unmaps whenever they empty).
// Arenas are counted in malloc_info's report (one <heap nr="…"> element per arena).
TEST(CpuAllocator, ThreadsShareTheMainArenaAfterConfiguring)
{
    ScopedEnv a("MALLOC_MMAP_THRESHOLD_", std::nullopt), b("MALLOC_TRIM_THRESHOLD_", std::nullopt),
        c("MALLOC_TOP_PAD_", std::nullopt), d("GLIBC_TUNABLES", std::nullopt), e("MALLOC_ARENA_MAX", std::nullopt);
    auto arenas = [] {
        char* text = nullptr;
        size_t size = 0;
        FILE* f = open_memstream(&text, &size);
        malloc_info(0, f);
        fclose(f);
        const std::string report(text, size);
        std::free(text);
        size_t n = 0;
        for (size_t at = report.find("<heap nr="); at != std::string::npos; at = report.find("<heap nr=", at + 1))
            ++n;
        return n;
    };
    ASSERT_TRUE(icl::configureCpuAllocator());
    const size_t before = arenas();
    if (before != 1)  // never under ctest, which runs every test in a process of its own
        GTEST_SKIP() << "earlier tests in this process started " << before - 1 << " other arenas, which a new thread "
                     << "may reuse whatever the setting; run this test on its own (as ctest does)";
    size_t during = 0;
    std::thread t([&] {
        void* p = nullptr;
        ASSERT_EQ(posix_memalign(&p, 64, std::size_t(1) << 20), 0);
        std::memset(p, 1, std::size_t(1) << 20);
        during = arenas();
        std::free(p);
    });
    t.join();
    EXPECT_EQ(during, before);
    EXPECT_NE(icl::cpuAllocatorInfo().summary().find("one arena"), std::string::npos);
}

TEST(CpuAllocator, LeavesTheUsersSettingsAlone)
{
    ScopedEnv e("MALLOC_TRIM_THRESHOLD_", std::string("1048576"));
    EXPECT_FALSE(icl::configureCpuAllocator());
    EXPECT_TRUE(icl::cpuAllocatorInfo().from_environment);
}
