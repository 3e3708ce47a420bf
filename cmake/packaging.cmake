# Debian package with CPack: scripts/package.sh → icl-workbench_<version>_<arch>.deb. Runtime dependencies come
# from dpkg-shlibdeps on the installed executables (CPACK_DEBIAN_PACKAGE_SHLIBDEPS), never from a hand-written list.
# tests/install/package_and_check.sh checks the package (lintian where it is installed: no errors).

# The Python reader python/icl_workbench, where Debian's python3 finds it with the prefix /usr
# (/usr/lib/python3/dist-packages, the folder of every python3 version); postinst byte-compiles it.
set(ICL_INSTALL_PYTHONDIR "lib/python3/dist-packages" CACHE STRING
    "folder of the Python package icl_workbench, relative to the install prefix")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/icl_workbench DESTINATION ${ICL_INSTALL_PYTHONDIR}
        FILES_MATCHING PATTERN "*.py" PATTERN "py.typed" PATTERN "__pycache__" EXCLUDE)
# Debian's copyright file and, for a native package, a changelog.gz in Debian's format (the changes themselves are
# in CHANGELOG.md). SOURCE_DATE_EPOCH, when set, dates the entry (reproducible builds).
string(TIMESTAMP _icl_changelog_date "%a, %d %b %Y %H:%M:%S +0000" UTC)
file(WRITE ${PROJECT_BINARY_DIR}/debian/changelog
     "icl-workbench (${PROJECT_VERSION}) unstable; urgency=medium\n\n"
     "  * Version ${PROJECT_VERSION}. The changes by area are in CHANGELOG.md of the source tree.\n\n"
     " -- ICL Workbench <dev@icl-workbench.invalid>  ${_icl_changelog_date}\n")
execute_process(COMMAND gzip -9n -c ${PROJECT_BINARY_DIR}/debian/changelog
                OUTPUT_FILE ${PROJECT_BINARY_DIR}/debian/changelog.gz RESULT_VARIABLE _icl_gzip)
if(NOT _icl_gzip EQUAL 0)
    message(FATAL_ERROR "gzip -9n debian/changelog failed")
endif()
install(FILES ${PROJECT_SOURCE_DIR}/cmake/debian/copyright ${PROJECT_BINARY_DIR}/debian/changelog.gz
        DESTINATION ${ICL_INSTALL_DOCDIR})

set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "icl-workbench")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_VENDOR "ICL Workbench")
set(CPACK_PACKAGE_CONTACT "ICL Workbench <dev@icl-workbench.invalid>")
# Debian's Description: the synopsis, then the extended description in lines of at most 79 characters; CPack
# indents each line by one space and writes an empty line as " .". One string (string(CONCAT)), not a CMake list,
# whose ";" separators would end up in the control file.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "workbench for in-context learning in small transformers")
string(CONCAT CPACK_PACKAGE_DESCRIPTION
    "ICL Workbench trains small transformers on synthetic in-context-learning\n"
    "tasks (on the CPU or with CUDA), compares them with gradient descent, ridge\n"
    "regression and least squares on the same prompts, and inspects them:\n"
    "attention patterns, probes, activation patching, layer pasting. Every\n"
    "experiment is one HDF5 file.\n"
    "\n"
    "This package contains the Qt GUI icl-workbench, the command line icl-cli and\n"
    "the Python module icl_workbench, which reads experiment files into NumPy\n"
    "arrays.")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_DEBIAN_FILE_NAME "DEB-DEFAULT")  # <name>_<version>-<release>_<arch>.deb; no release: <name>_<version>_<arch>
set(CPACK_DEBIAN_PACKAGE_SECTION "science")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# LibTorch runs ~20× faster on matrix products with OpenBLAS than with the reference BLAS (docs/architecture.md); a BLAS
# implementation is chosen through Debian's alternatives at run time, so it is a recommendation, not a dependency.
# The Python reader needs python3 with h5py and NumPy; the programs do not, so these are recommendations too (apt
# installs them by default).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libopenblas0-openmp, python3, python3-h5py, python3-numpy")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA "${PROJECT_SOURCE_DIR}/cmake/debian/postinst;${PROJECT_SOURCE_DIR}/cmake/debian/prerm")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# Compresses the man pages and drops RUNPATH entries into /usr/lib in the staged files (cmake/debian/finish-package.cmake).
set(CPACK_PRE_BUILD_SCRIPTS "${PROJECT_SOURCE_DIR}/cmake/debian/finish-package.cmake")
set(CPACK_DEBIAN_COMPRESSION_TYPE "gzip")  # fast; xz saves little on LibTorch-linked binaries
set(CPACK_STRIP_FILES ON)
include(CPack)
