// Sanitizer defaults of the sanitize preset's programs (io_tests, the fuzz harnesses), compiled into them so that they
// hold however the programs are started (ctest, scripts/fuzz.sh, by hand); the environment's ASAN_OPTIONS,
// UBSAN_OPTIONS and LSAN_OPTIONS still add to them.

extern "C" {

/// UBSan prints where (the preset compiles with -fno-sanitize-recover=all, so a report stops the program).
const char* __ubsan_default_options()
{
    return "print_stacktrace=1";
}

/// libhdf5 (Debian's 1.10, not instrumented, no frame pointers) leaks memory it allocates itself on some error paths
/// of damaged files (ExperimentFileIntegrity.FlippedBitsAreNeverReadSilently: ~140 KB in 574 blocks over 600 damaged
/// copies). The stacks end inside libhdf5, so nothing of the workbench can be told apart in them; handles the
/// workbench fails to close are not reported as leaks anyway (HDF5's ID table keeps them reachable).
/// docs/security.md ("What is not promised": HDF5's own bugs).
const char* __lsan_default_suppressions()
{
    return "leak:libhdf5_serial.so\n";
}

} // extern "C"
