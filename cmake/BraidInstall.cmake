# Install rules, the CMake package (find_package(Braid)), pkg-config and the Debian
# package. Included last from the top-level CMakeLists.txt; it refers to the targets by
# name, so moving a source between src/ folders leaves it alone.
#
# The install tree:
#   include/braid/braid.h, braid.hpp       the C API (the only ABI) and its C++ wrapper
#   <libdir>/libbraid.so.0                 the library (SONAME libbraid.so.0)
#   <libdir>/libbraid.a                    the same, self-contained, to link statically
#   <libdir>/cmake/Braid/                  BraidConfig.cmake: Braid::braid, Braid::braid_static
#   <libdir>/pkgconfig/braid.pc
#   <libdir>/braid/nccl/libnccl.so.2       the NCCL drop-in, in a directory of its own so
#                                          installing Braid never shadows a real NCCL
#   bin/                                   braidrun, braid-topo, braid-info, braid-tune
#   libexec/braid/perf/                    all_reduce_perf ... under nccl-tests' names,
#                                          apart from bin/ for the same reason
# Everything is relocatable: the CMake and pkg-config files find the prefix from their
# own location, and the one RPATH (the perf tools' to libbraid) is relative to $ORIGIN.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(BRAID_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/Braid)
set(BRAID_INSTALL_NCCLDIR ${CMAKE_INSTALL_LIBDIR}/braid/nccl)
set(BRAID_INSTALL_PERFDIR ${CMAKE_INSTALL_LIBEXECDIR}/braid/perf)

# Users of the build tree (add_subdirectory) spell the target as installed users do.
add_library(Braid::braid ALIAS braid)
# The headers come from the source tree when building and from include/ once installed.
set_target_properties(braid PROPERTIES INTERFACE_INCLUDE_DIRECTORIES
                      "$<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>")

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/braid
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")
install(TARGETS braid EXPORT BraidTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# libbraid.a: self-contained, for programs that link Braid statically. Braid's own
# archives (every static library braid_static reaches, found by walking its links, so
# targets added or moved inside src/ are picked up) and the CUDA runtime merged into one.
option(BRAID_BUILD_STATIC_LIBRARY "Also build and install a self-contained libbraid.a" ON)
function(braid_collect_archives target)
  get_property(seen GLOBAL PROPERTY BRAID_ARCHIVES_SEEN)
  if(target IN_LIST seen)
    return()
  endif()
  set_property(GLOBAL APPEND PROPERTY BRAID_ARCHIVES_SEEN ${target})
  get_target_property(type ${target} TYPE)
  get_target_property(imported ${target} IMPORTED)
  if(type STREQUAL "STATIC_LIBRARY" AND NOT imported)
    set_property(GLOBAL APPEND PROPERTY BRAID_ARCHIVES "$<TARGET_FILE:${target}>")
    set_property(GLOBAL APPEND PROPERTY BRAID_ARCHIVE_TARGETS ${target})
  elseif(imported AND type MATCHES "^(STATIC|UNKNOWN)_LIBRARY$")  # CUDA::cudart_static
    get_target_property(location ${target} IMPORTED_LOCATION)
    if(location MATCHES "\\.a$")
      set_property(GLOBAL APPEND PROPERTY BRAID_ARCHIVES "${location}")
    endif()
  endif()
  foreach(prop LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
    get_target_property(deps ${target} ${prop})
    foreach(dep IN LISTS deps)
      string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" dep "${dep}")
      if(TARGET ${dep})
        braid_collect_archives(${dep})
      endif()
    endforeach()
  endforeach()
endfunction()
if(BRAID_BUILD_STATIC_LIBRARY)
  braid_collect_archives(braid_static)
  get_property(_braid_archives GLOBAL PROPERTY BRAID_ARCHIVES)
  get_property(_braid_archive_targets GLOBAL PROPERTY BRAID_ARCHIVE_TARGETS)
  set(_braid_a ${PROJECT_BINARY_DIR}/lib/libbraid.a)
  # An ar MRI script: ADDLIB keeps members of the same name from different archives.
  file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/cmake/libbraid.mri CONTENT
       "CREATE ${_braid_a}\nADDLIB $<JOIN:${_braid_archives},\nADDLIB >\nSAVE\nEND\n")
  add_custom_command(OUTPUT ${_braid_a}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/lib
    COMMAND ${CMAKE_COMMAND} -E rm -f ${_braid_a}
    COMMAND sh -c "${CMAKE_AR} -M < ${PROJECT_BINARY_DIR}/cmake/libbraid.mri"
    DEPENDS ${_braid_archive_targets} ${PROJECT_BINARY_DIR}/cmake/libbraid.mri
    COMMENT "libbraid.a: Braid's archives and the CUDA runtime in one" VERBATIM)
  add_custom_target(braid_archive ALL DEPENDS ${_braid_a})
  install(FILES ${_braid_a} DESTINATION ${CMAKE_INSTALL_LIBDIR})
  # Stripped installs (cpack) drop the archive's debug information, as for the rest.
  install(CODE "if(CMAKE_INSTALL_DO_STRIP)
    execute_process(COMMAND ${CMAKE_STRIP} --strip-debug
                    \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/libbraid.a\")
  endif()")
endif()
# What a program linking libbraid.a also needs (BraidConfig's Braid::braid_static, and
# braid.pc's Libs.private for pkg-config --static).
set(BRAID_STATIC_DEPS ${HWLOC_LIBRARIES} ${UCX_LIBRARIES})
if(BRAID_HAVE_IBVERBS)
  list(APPEND BRAID_STATIC_DEPS ibverbs)
endif()
list(APPEND BRAID_STATIC_DEPS stdc++ m ${CMAKE_DL_LIBS} rt pthread)
list(TRANSFORM BRAID_STATIC_DEPS PREPEND "-l" OUTPUT_VARIABLE _braid_pc_private)
list(JOIN _braid_pc_private " " BRAID_PC_LIBS_PRIVATE)

install(TARGETS braidrun braid-topo braid-info RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(PROGRAMS ${PROJECT_BINARY_DIR}/tools/braid-tune ${PROJECT_BINARY_DIR}/tools/braid-trace
        DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET nccl_dropin)
  install(TARGETS nccl_dropin LIBRARY DESTINATION ${BRAID_INSTALL_NCCLDIR})
endif()
set(_braid_perf_tools)
foreach(tool all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf
        gather_perf scatter_perf alltoall_perf alltoallv_perf sendrecv_perf hypercube_perf)
  if(TARGET ${tool})
    list(APPEND _braid_perf_tools ${tool})
  endif()
endforeach()
if(_braid_perf_tools)
  file(RELATIVE_PATH _braid_perf_to_lib ${CMAKE_INSTALL_PREFIX}/${BRAID_INSTALL_PERFDIR}
       ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR})
  set_target_properties(${_braid_perf_tools} PROPERTIES
                        INSTALL_RPATH "$ORIGIN/${_braid_perf_to_lib}")
  install(TARGETS ${_braid_perf_tools} RUNTIME DESTINATION ${BRAID_INSTALL_PERFDIR})
endif()

# CMake package: BraidConfig.cmake finds its prefix from its own path (PACKAGE_PREFIX_DIR).
install(EXPORT BraidTargets NAMESPACE Braid:: DESTINATION ${BRAID_INSTALL_CMAKEDIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/BraidConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/BraidConfig.cmake
  INSTALL_DESTINATION ${BRAID_INSTALL_CMAKEDIR}
  PATH_VARS BRAID_INSTALL_NCCLDIR BRAID_INSTALL_PERFDIR CMAKE_INSTALL_BINDIR
            CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_INCLUDEDIR)
# 0.x: the SONAME is libbraid.so.0, and any 0.y serves a request for 0.x.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/BraidConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/BraidConfig.cmake
        ${PROJECT_BINARY_DIR}/cmake/BraidConfigVersion.cmake
        DESTINATION ${BRAID_INSTALL_CMAKEDIR})

# pkg-config: the prefix is found from the .pc file's own directory (${pcfiledir}).
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(BRAID_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _braid_pc_to_prefix ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig
       ${CMAKE_INSTALL_PREFIX})
  string(REGEX REPLACE "/$" "" _braid_pc_to_prefix "${_braid_pc_to_prefix}")
  set(BRAID_PC_PREFIX "\${pcfiledir}/${_braid_pc_to_prefix}")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/braid.pc.in ${PROJECT_BINARY_DIR}/cmake/braid.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cmake/braid.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# Debian package: cpack -G DEB in the build directory.
set(CPACK_PACKAGE_NAME braid)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "Braid developers <braid@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Collective communication library for host and CUDA memory (NCCL alternative)")
set(CPACK_PACKAGE_DESCRIPTION
    "Braid runs all-reduce and the other collectives between the processes of a job, on host\n\
and CUDA memory, with NCCL's C API under braid* names. The package holds libbraid, its\n\
headers, CMake and pkg-config files, braidrun and the other tools, the perf tools under\n\
their nccl-tests names and an NCCL drop-in (libnccl.so.2) in a directory of its own.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
# The ldconfig trigger, and a shlibs file naming libbraid only: the drop-in's libnccl.so.2
# lives off the loader's path and must not be offered to other packages as NCCL.
get_target_property(BRAID_SOVERSION braid SOVERSION)
configure_file(${CMAKE_CURRENT_LIST_DIR}/debian/shlibs.in ${PROJECT_BINARY_DIR}/cmake/debian/shlibs
               @ONLY)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/cmake/debian/shlibs
    ${CMAKE_CURRENT_LIST_DIR}/debian/triggers)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)  # debug info stays in the build tree
# The shared objects need only these at run time (libcuda is loaded by cudart if present).
set(_braid_deb_depends "libc6 (>= 2.34)" "libstdc++6 (>= 12)" "libgcc-s1")
if(BRAID_HAVE_HWLOC)
  list(APPEND _braid_deb_depends libhwloc15)
endif()
if(BRAID_HAVE_UCX)
  list(APPEND _braid_deb_depends libucx0)
endif()
if(BRAID_HAVE_IBVERBS)
  list(APPEND _braid_deb_depends libibverbs1)
endif()
list(JOIN _braid_deb_depends ", " CPACK_DEBIAN_PACKAGE_DEPENDS)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3")  # braid-tune
set(CPACK_GENERATOR DEB)
include(CPack)
