#pragma once
// Makes idle OpenMP worker threads sleep instead of spin (OMP_WAIT_POLICY=PASSIVE).
//
// LibTorch and OpenBLAS share libgomp, which reads OMP_WAIT_POLICY once, when it is loaded, i.e.
// before main(). With the default (spinning) policy, a training run on a 2-core machine loses more
// than half its speed as soon as anything else needs a core (measured: 300 LSA steps take 10 s with
// PASSIVE and 23 s with ACTIVE while a compiler runs; equal when idle), and the GUI thread competes with
// spinning workers. So each executable re-executes itself once with the variable set, unless the user
// chose a policy. Call first thing in main(); returns normally when nothing needs doing or exec fails.

#include <cstdlib>
#include <unistd.h>

namespace icl::app {

inline void ensurePassiveOpenMpWait(char** argv)
{
    if (std::getenv("OMP_WAIT_POLICY") != nullptr)
        return;
    ::setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    ::execv("/proc/self/exe", argv);
    // exec failed (no /proc?): carry on with the default policy.
}

} // namespace icl::app
