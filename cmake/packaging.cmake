# Debian package with CPack: scripts/package.sh → icl-workbench_<version>_<arch>.deb. Runtime dependencies come
# from dpkg-shlibdeps on the installed executables (CPACK_DEBIAN_PACKAGE_SHLIBDEPS), never from a hand-written list.
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "icl-workbench")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_VENDOR "ICL Workbench")
set(CPACK_PACKAGE_CONTACT "ICL Workbench <dev@icl-workbench.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "workbench for in-context learning in small transformers")
set(CPACK_PACKAGE_DESCRIPTION
    "Trains small transformers on synthetic in-context-learning tasks (CPU or CUDA), compares them with gradient\n"
    "descent, ridge and least squares on the same prompts, and inspects them: attention patterns, probes,\n"
    "activation patching, layer pasting. Every experiment is one HDF5 file. Contains the Qt GUI icl-workbench\n"
    "and the command line icl-cli.")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_DEBIAN_FILE_NAME "DEB-DEFAULT")  # <name>_<version>-<release>_<arch>.deb; no release: <name>_<version>_<arch>
set(CPACK_DEBIAN_PACKAGE_SECTION "science")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# LibTorch runs ~20× faster on matrix products with OpenBLAS than with the reference BLAS (docs/architecture.md); a BLAS
# implementation is chosen through Debian's alternatives at run time, so it is a recommendation, not a dependency.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libopenblas0-openmp")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-h5py, python3-numpy")
set(CPACK_DEBIAN_COMPRESSION_TYPE "gzip")  # fast; xz saves little on LibTorch-linked binaries
set(CPACK_STRIP_FILES ON)
include(CPack)
