# The native torch backend (python/braid/csrc): a torch C++ extension, built for one
# interpreter's torch at a time, into the package beside the Python code:
#   build/python/braid/_pg_torch<major>_<minor><EXT_SUFFIX>
# Builds for several torches (Debian's 1.13 and a 2.x in a virtual environment, both on
# Python 3.11) have different names, so they sit side by side; braid/_torch_native.py
# imports the one for the running torch. The flags follow that torch: its headers and
# libraries, its _GLIBCXX_USE_CXX11_ABI, its C++ standard (17 for 1.13, 20 for 2.x) and
# the pybind11 it was built with (bundled in a pip torch; Debian's pybind11-dev for
# Debian's torch). Only braid.h is included: the library's functions are resolved at
# import from the libbraid.so the package loaded (braid_api.cc), so nothing links libbraid.

set(BRAID_TORCH_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/braid_api.cc
    ${CMAKE_CURRENT_LIST_DIR}/cuda_order.cc
    ${CMAKE_CURRENT_LIST_DIR}/module.cc
    ${CMAKE_CURRENT_LIST_DIR}/process_group_braid.cc
    ${CMAKE_CURRENT_LIST_DIR}/process_group_extra.cc
    ${CMAKE_CURRENT_LIST_DIR}/tensor_args.cc
    ${CMAKE_CURRENT_LIST_DIR}/work.cc)
set(BRAID_TORCH_INFO ${CMAKE_CURRENT_LIST_DIR}/torch_build_info.py)

# braid_torch_extension(<python> <target> <out_dir>): the extension for <python>'s torch
# as <target>, or a status line saying why there is none. Appends the module's file name
# to the cache list BRAID_TORCH_NATIVE_BUILT.
function(braid_torch_extension python target out_dir)
  execute_process(COMMAND ${python} ${BRAID_TORCH_INFO} OUTPUT_VARIABLE info
                  RESULT_VARIABLE rc ERROR_QUIET)
  if(NOT rc EQUAL 0)
    message(STATUS "braid: no native torch backend for ${python} (torch_build_info.py failed)")
    return()
  endif()
  string(REPLACE "\n" ";" lines "${info}")
  foreach(line IN LISTS lines)
    if(line MATCHES "^([A-Z0-9_]+)=(.*)$")
      set(T_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
    endif()
  endforeach()
  if(DEFINED T_NONE)
    message(STATUS "braid: no native torch backend for ${python}: ${T_NONE}")
    return()
  endif()
  if(NOT T_PYBIND11_BUNDLED AND NOT EXISTS /usr/include/pybind11/pybind11.h)
    message(STATUS "braid: no native torch backend for ${python}: no pybind11 headers "
                   "(Debian: pybind11-dev, the version torch was built with)")
    return()
  endif()
  string(REPLACE "|" ";" includes "${T_INCLUDES}")
  string(REPLACE "|" ";" libdirs "${T_LIBDIRS}")
  set(libs)
  set(names torch_python torch torch_cpu c10)
  if(T_CUDA_INCLUDE)
    list(APPEND names torch_cuda c10_cuda)
  endif()
  foreach(name IN LISTS names)
    find_library(lib_${target}_${name} ${name} PATHS ${libdirs} NO_DEFAULT_PATH)
    if(NOT lib_${target}_${name})
      message(STATUS "braid: no native torch backend for ${python}: no lib${name} in ${libdirs}")
      return()
    endif()
    list(APPEND libs ${lib_${target}_${name}})
  endforeach()

  add_library(${target} MODULE ${BRAID_TORCH_SOURCES})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/include)
  target_include_directories(${target} SYSTEM PRIVATE ${includes} ${T_PYTHON_INCLUDE})
  target_compile_definitions(${target} PRIVATE BRAID_TORCH_MODULE=${T_MODULE}
                             _GLIBCXX_USE_CXX11_ABI=${T_CXX11_ABI})
  if(T_CUDA_INCLUDE)
    target_include_directories(${target} SYSTEM PRIVATE ${T_CUDA_INCLUDE})
    target_compile_definitions(${target} PRIVATE BRAID_TORCH_CUDA=1)
  endif()
  target_link_libraries(${target} PRIVATE ${libs})
  set_target_properties(${target} PROPERTIES
    PREFIX "" OUTPUT_NAME ${T_MODULE} SUFFIX ${T_EXT_SUFFIX}
    CXX_STANDARD ${T_CXX_STANDARD} CXX_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${out_dir}
    # torch's libraries where the interpreter's torch keeps them (a venv moves, and
    # importing torch first loads them anyway).
    BUILD_RPATH "${libdirs}" INSTALL_RPATH "${libdirs}")
  set(note "torch ${T_VERSION}, CPU tensors")
  if(T_CUDA_INCLUDE)
    set(note "torch ${T_VERSION}, CPU and CUDA tensors")
  endif()
  set(built ${BRAID_TORCH_NATIVE_BUILT})
  list(APPEND built "${T_MODULE} (${note})")
  set(BRAID_TORCH_NATIVE_BUILT "${built}" CACHE INTERNAL "native torch backends built")
  message(STATUS "braid: native torch backend ${T_MODULE} for ${python} (${note})")
endfunction()
