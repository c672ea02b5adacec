"""Prints what CMake needs to build the native backend against this interpreter's torch.

One KEY=VALUE per line (lists joined with "|"); prints NONE=<reason> and exits 0 where
torch or its C++ headers are missing, so the build goes on without the extension.
"""

import glob
import os
import sys
import sysconfig


def main():
    try:
        import torch
        from torch.utils import cpp_extension
    except ImportError as e:
        print(f"NONE=torch does not import ({e})")
        return
    includes = cpp_extension.include_paths()
    if not any(os.path.isfile(os.path.join(d, "torch", "csrc", "distributed", "c10d",
                                           "Types.hpp")) for d in includes):
        print(f"NONE=torch {torch.__version__} has no C++ headers (Debian: libtorch-dev)")
        return
    major, minor = torch.__version__.split("+")[0].split(".")[:2]
    pybind = [d for d in includes if os.path.isfile(os.path.join(d, "pybind11", "pybind11.h"))]
    print(f"VERSION={torch.__version__}")
    print(f"MODULE=_pg_torch{int(major)}_{int(minor)}")
    print(f"CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}")
    print(f"CXX_STANDARD={20 if int(major) >= 2 else 17}")
    print(f"INCLUDES={'|'.join(includes)}")
    print(f"PYBIND11_BUNDLED={1 if pybind else 0}")
    print(f"LIBDIRS={'|'.join(cpp_extension.library_paths())}")
    print(f"PYTHON_INCLUDE={sysconfig.get_paths()['include']}")
    print(f"EXT_SUFFIX={sysconfig.get_config_var('EXT_SUFFIX')}")
    cuda = cuda_runtime_include() if torch.version.cuda else None
    has_aten_cuda = any(os.path.isfile(os.path.join(d, "ATen", "cuda", "CUDAContext.h"))
                        for d in includes)
    print(f"CUDA_INCLUDE={cuda if cuda and has_aten_cuda else ''}")


def cuda_runtime_include():
    """A directory with cuda_runtime_api.h (the CUDA toolkit, or NVIDIA's pip packages)."""
    roots = [os.environ.get("CUDA_HOME", ""), "/usr/local/cuda", *glob.glob("/usr/local/cuda-*")]
    dirs = [os.path.join(r, "include") for r in roots if r]
    dirs += glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages", "nvidia",
                                   "*", "include"))
    for d in dirs:
        if os.path.isfile(os.path.join(d, "cuda_runtime_api.h")):
            return d
    return None


if __name__ == "__main__":
    main()
