#include "core/runtime/blas.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <dlfcn.h>
#include <thread>

#include <torch/torch.h>

namespace icl {

namespace {

/// An OpenBLAS function of the loaded library, or nullptr when the BLAS is not OpenBLAS. Looked up
/// at run time so that the core also works over MKL or the reference BLAS.
template <typename Fn>
Fn openBlasFunction(const char* name)
{
    return reinterpret_cast<Fn>(::dlsym(RTLD_DEFAULT, name));
}

std::string envOr(const char* name, const std::string& fallback)
{
    const char* v = std::getenv(name);
    return v != nullptr ? std::string(v) : fallback;
}

} // namespace

int defaultThreads()
{
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void configureThreads(int threads)
{
    torch::set_num_threads(threads > 0 ? threads : defaultThreads());
}

namespace {

using OmpSetThreads = void (*)(int);
using OmpGetThreads = int (*)();

// LibTorch's OpenMP runtime, looked up at run time (LibTorch may ship its own).
OmpSetThreads ompSetNumThreads()
{
    static const auto f = reinterpret_cast<OmpSetThreads>(::dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
    return f;
}

OmpGetThreads ompGetMaxThreads()
{
    static const auto f = reinterpret_cast<OmpGetThreads>(::dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
    return f;
}

} // namespace

void useOneIntraOpThreadOnThisThread()
{
    // LibTorch reads its process-wide default into this thread's OpenMP count the first time it asks for
    // the count (at::get_num_threads); doing that first means the count set below is not overwritten later.
    (void)torch::get_num_threads();
    // OpenMP's count is per thread.
    if (const OmpSetThreads set = ompSetNumThreads())
        set(1);
    else
        torch::set_num_threads(1);
}

ThisThreadIntraOpThreads::ThisThreadIntraOpThreads(int threads)
{
    const OmpSetThreads set = ompSetNumThreads();
    const OmpGetThreads get = ompGetMaxThreads();
    if (threads <= 0 || set == nullptr || get == nullptr)
        return;
    (void)torch::get_num_threads();  // LibTorch's lazy initialisation first: it would overwrite the count later
    const int before = get();
    if (before == threads)
        return;
    set(threads);
    m_before = before;
}

ThisThreadIntraOpThreads::~ThisThreadIntraOpThreads()
{
    if (m_before > 0)
        ompSetNumThreads()(m_before);
}

ScopedThreads::ScopedThreads(int threads)
    : m_before(torch::get_num_threads())
{
    if (threads > 0 && threads != m_before)
        torch::set_num_threads(threads);
}

ScopedThreads::~ScopedThreads()
{
    if (torch::get_num_threads() != m_before)
        torch::set_num_threads(m_before);
}

std::string BlasInfo::summary() const
{
    std::string s = library;
    if (!core.empty())
        s += ", core " + core + " (" + core_source + ")";
    s += ", " + std::to_string(intra_op_threads) + (intra_op_threads == 1 ? " thread" : " threads");
    return s;
}

BlasInfo blasInfo()
{
    BlasInfo info;
    info.best_core = bestOpenBlasCore(cpuVectorFeatures());
    info.intra_op_threads = defaultThreads();
    auto config = openBlasFunction<char* (*)()>("openblas_get_config");
    if (config == nullptr) {
        info.library = "not OpenBLAS (no openblas_get_config in the process)";
        return info;
    }
    // "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY USE_OPENMP Haswell MAX_THREADS=64"
    const std::string full = config() != nullptr ? std::string(config()) : std::string("OpenBLAS");
    size_t cut = full.find(' ');
    cut = cut == std::string::npos ? cut : full.find(' ', cut + 1);
    info.library = full.substr(0, cut);
    info.config = cut == std::string::npos ? std::string() : full.substr(cut + 1);
    info.core = loadedOpenBlasCore();
    if (auto threads = openBlasFunction<int (*)()>("openblas_get_num_threads"))
        info.blas_threads = threads();
    const std::string fallback = envOr("ICL_OPENBLAS_FALLBACK", "");
    if (std::getenv("OPENBLAS_CORETYPE") == nullptr)
        info.core_source = "detected by OpenBLAS";
    else if (!fallback.empty())
        info.core_source = "set by ICL Workbench: OpenBLAS had fallen back to " + fallback;
    else
        info.core_source = "OPENBLAS_CORETYPE from the environment";
    if (openBlasCoreLevel(info.core) < openBlasCoreLevel(info.best_core))
        info.core_source += "; this CPU could run " + info.best_core;
    return info;
}

} // namespace icl
