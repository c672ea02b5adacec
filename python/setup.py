"""pip install ./python (from a Braid checkout): the braid package with its own libbraid.so.

The package ships libbraid.so in braid/lib/ and braidrun in braid/bin/. With
BRAID_PREFIX=<an installed Braid> (cmake --install's prefix, or /usr for the
Debian package) they are copied from there and nothing is compiled:

    BRAID_PREFIX=/opt/braid pip wheel --no-build-isolation ./python

Otherwise building runs the checkout's CMake (cmake and a C++20 compiler are
needed) for those two targets and the native torch backend of the interpreter
running pip (where its torch has C++ headers); BRAID_CMAKE_BUILD_DIR reuses a
build directory, else a temporary one is made. The Python code itself needs no
compiler: it calls the library through ctypes.

The native torch backend (braid/_pg_torch<major>_<minor>.*.so, one per torch it
was built for) travels in the wheel when it was built: from the CMake build, or,
with BRAID_PREFIX, from BRAID_TORCH_EXT_DIR (a build's build/python/braid).
Without it, braid.torch serves "braid" with its Python group.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent


def version():
    text = (CHECKOUT / "CMakeLists.txt").read_text()
    return re.search(r"project\(braid VERSION ([0-9.]+)", text).group(1)


class BuildWithLibrary(build_py):
    """build_py, plus libbraid.so and braidrun (installed, or built by CMake) in the package."""

    def run(self):
        super().run()
        package = Path(self.build_lib) / "braid"
        prefix = os.environ.get("BRAID_PREFIX")
        if prefix:
            self.copy_installed(Path(prefix), package)
        else:
            self.build_with_cmake(package)

    @staticmethod
    def copy_installed(prefix, package):
        """libbraid.so and braidrun from an install tree, as they are (no rebuild)."""
        libs = sorted(prefix.glob("lib*/libbraid.so.*")) + sorted(prefix.glob("lib/*/libbraid.so.*"))
        braidrun = prefix / "bin" / "braidrun"
        if not libs or not braidrun.is_file():
            raise RuntimeError(f"braid: BRAID_PREFIX={prefix} holds no lib/libbraid.so.* and "
                               "bin/braidrun; run cmake --install build --prefix DIR first")
        (package / "lib").mkdir(parents=True, exist_ok=True)
        (package / "bin").mkdir(parents=True, exist_ok=True)
        shutil.copy2(libs[0], package / "lib" / "libbraid.so")
        shutil.copy2(braidrun, package / "bin" / "braidrun")
        ext_dir = os.environ.get("BRAID_TORCH_EXT_DIR")
        if ext_dir:
            BuildWithLibrary.copy_torch_extensions(Path(ext_dir), package)

    @staticmethod
    def copy_torch_extensions(staged, package):
        """The native torch backends built into staged (a build's python/braid)."""
        for ext in sorted(staged.glob("_pg_torch*.so")):
            shutil.copy2(ext, package / ext.name)

    def build_with_cmake(self, package):
        if not (CHECKOUT / "include" / "braid" / "braid.h").is_file():
            raise RuntimeError(f"braid: {CHECKOUT} is not a Braid checkout; run pip from it")
        build = Path(os.environ.get("BRAID_CMAKE_BUILD_DIR") or
                     tempfile.mkdtemp(prefix="braid-pip-"))
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        subprocess.check_call(["cmake", "-S", str(CHECKOUT), "-B", str(build), *generator,
                               "-DCMAKE_BUILD_TYPE=Release", "-DBRAID_BUILD_TESTS=OFF",
                               "-DBRAID_BUILD_PERF=OFF", f"-DBRAID_PYTHON={sys.executable}"])
        subprocess.check_call(["cmake", "--build", str(build), "--target", "braid_python",
                               "-j", str(len(os.sched_getaffinity(0)))])
        staged = build / "python" / "braid"
        for part in ("lib", "bin"):
            shutil.copytree(staged / part, package / part, dirs_exist_ok=True)
        BuildWithLibrary.copy_torch_extensions(staged, package)


class BinaryDistribution(Distribution):
    """The wheel carries a native library, so it is tagged for this platform."""

    def has_ext_modules(self):
        return True


setup(
    name="braid",
    version=version(),
    description="Braid collective communication from Python, and a torch.distributed backend",
    packages=["braid", "braid.algorithms"],
    package_data={"braid": ["py.typed", "*.pyi"]},
    python_requires=">=3.8",
    install_requires=["numpy"],
    extras_require={"torch": ["torch>=1.13"]},
    cmdclass={"build_py": BuildWithLibrary},
    distclass=BinaryDistribution,
)
