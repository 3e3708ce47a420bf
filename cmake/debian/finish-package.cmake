# CPack pre-build script (CPACK_PRE_BUILD_SCRIPTS): runs on the staged files of the .deb before they are packed.
# - Man pages are compressed with gzip -9n (Debian policy 12.1; `cmake --install` leaves them uncompressed).
# - The executables lose their .comment section (compiler versions), as dh_strip does.
# - A RUNPATH entry into /usr/lib is dropped: CMAKE_INSTALL_RPATH_USE_LINK_PATH records Debian's
#   /usr/lib/<triplet>/hdf5/serial (the folder of the libhdf5.so link), but the library the executables need
#   (libhdf5_serial.so.103) is in the linker's default path; entries elsewhere (a CUDA LibTorch in /opt) stay.
file(GLOB_RECURSE _icl_pages "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*.1")
foreach(_page IN LISTS _icl_pages)
    if(_page MATCHES "/usr/share/man/")
        execute_process(COMMAND gzip -9nf "${_page}" RESULT_VARIABLE _rc)
        if(NOT _rc EQUAL 0)
            message(FATAL_ERROR "gzip -9n ${_page} failed")
        endif()
    endif()
endforeach()
file(GLOB _icl_exes "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/usr/bin/*" "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*/usr/bin/*"
     "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/usr/libexec/icl-workbench/*"
     "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*/usr/libexec/icl-workbench/*")
foreach(_exe IN LISTS _icl_exes)
    file(READ_ELF "${_exe}" RUNPATH _runpath RPATH _rpath CAPTURE_ERROR _not_elf)
    if(_not_elf)
        continue()
    endif()
    # The compiler's version strings, which dh_strip removes too (lintian: binary-has-unneeded-section).
    execute_process(COMMAND objcopy --remove-section=.comment "${_exe}" RESULT_VARIABLE _rc)
    if(NOT _rc EQUAL 0)
        message(FATAL_ERROR "objcopy --remove-section=.comment ${_exe} failed")
    endif()
    foreach(_old IN ITEMS "${_runpath}" "${_rpath}")
        if(_old STREQUAL "")
            continue()
        endif()
        string(REPLACE ":" ";" _entries "${_old}")
        set(_kept)
        foreach(_entry IN LISTS _entries)
            if(NOT _entry STREQUAL "" AND NOT _entry MATCHES "^/usr/lib(/|$)")
                list(APPEND _kept "${_entry}")
            endif()
        endforeach()
        list(JOIN _kept ":" _new)
        if(_new STREQUAL "")
            file(RPATH_REMOVE FILE "${_exe}")
        elseif(NOT _new STREQUAL _old)
            file(RPATH_SET FILE "${_exe}" NEW_RPATH "${_new}")
        endif()
    endforeach()
endforeach()
