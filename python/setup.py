"""pip install ./python (from a Braid checkout): the braid package with its own libbraid.so.

Building runs the checkout's CMake (cmake and a C++20 compiler are needed) for
the targets the package ships: libbraid.so into braid/lib/ and braidrun into
braid/bin/. BRAID_CMAKE_BUILD_DIR reuses a build directory; otherwise a
temporary one is made. The Python code itself needs no compiler: it calls the
library through ctypes.
"""

import os
import re
import shutil
import subprocess
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
    """build_py, plus libbraid.so and braidrun built by CMake and copied into the package."""

    def run(self):
        super().run()
        if not (CHECKOUT / "include" / "braid" / "braid.h").is_file():
            raise RuntimeError(f"braid: {CHECKOUT} is not a Braid checkout; run pip from it")
        build = Path(os.environ.get("BRAID_CMAKE_BUILD_DIR") or
                     tempfile.mkdtemp(prefix="braid-pip-"))
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        subprocess.check_call(["cmake", "-S", str(CHECKOUT), "-B", str(build), *generator,
                               "-DCMAKE_BUILD_TYPE=Release", "-DBRAID_BUILD_TESTS=OFF",
                               "-DBRAID_BUILD_PERF=OFF"])
        subprocess.check_call(["cmake", "--build", str(build), "--target", "braid_python",
                               "-j", str(len(os.sched_getaffinity(0)))])
        staged = build / "python" / "braid"
        for part in ("lib", "bin"):
            shutil.copytree(staged / part, Path(self.build_lib) / "braid" / part,
                            dirs_exist_ok=True)


class BinaryDistribution(Distribution):
    """The wheel carries a native library, so it is tagged for this platform."""

    def has_ext_modules(self):
        return True


setup(
    name="braid",
    version=version(),
    description="Braid collective communication from Python, and a torch.distributed backend",
    packages=["braid"],
    package_data={"braid": ["py.typed", "*.pyi"]},
    python_requires=">=3.8",
    install_requires=["numpy"],
    extras_require={"torch": ["torch>=1.13"]},
    cmdclass={"build_py": BuildWithLibrary},
    distclass=BinaryDistribution,
)
