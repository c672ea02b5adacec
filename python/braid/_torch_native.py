"""Finds and loads the native "braid" backend built for the running torch (see braid.torch).

The C++ backend (python/braid/csrc) is a torch C++ extension: it works only with the
torch it was compiled against. Each build is its own module, named by torch's major and
minor version, so builds for several torches (Debian's 1.13, a 2.x in a virtual
environment) sit side by side in one package even on one Python version:

    braid/_pg_torch1_13.cpython-311-x86_64-linux-gnu.so
    braid/_pg_torch2_15.cpython-311-x86_64-linux-gnu.so

BRAID_TORCH_IMPL chooses: "auto" (the default: native where it loads, else Python),
"python" (always the Python group), "native" (the native one or an ImportError).
"""

import importlib
import logging
import os
import sys

import torch

from . import _lib

log = logging.getLogger("braid.torch")

_CHOICES = ("auto", "native", "python")


def module_name(version=None):
    """The native module's name for a torch version ("2.15.0+cu132" -> _pg_torch2_15)."""
    major, minor = (version or torch.__version__).split("+")[0].split(".")[:2]
    return f"_pg_torch{int(major)}_{int(minor)}"


def load():
    """(module, None) with the native backend loaded, or (None, why it is not)."""
    choice = os.environ.get("BRAID_TORCH_IMPL", "auto").strip().lower() or "auto"
    if choice not in _CHOICES:
        raise ValueError(f"braid: BRAID_TORCH_IMPL={choice!r}: use one of {', '.join(_CHOICES)}")
    if choice == "python":
        return None, "BRAID_TORCH_IMPL=python"
    name = f"{__package__}.{module_name()}"
    try:
        module = importlib.import_module(name)
        module.load(_lib.path)
    except (ImportError, OSError, RuntimeError) as e:
        if choice == "native":
            raise ImportError(f"braid: BRAID_TORCH_IMPL=native, but {name} does not load "
                              f"for torch {torch.__version__}: {e}") from e
        return None, f"{name} did not load for torch {torch.__version__}: {e}"
    return module, None


def announce(module, why_not):
    """Says at INFO which implementation serves "braid" (and on stderr with BRAID_DEBUG or
    NCCL_DEBUG at INFO or TRACE, as Braid's own log)."""
    if module is not None:
        text = (f"torch backend: native ProcessGroupBraid ({module.__name__}, built against "
                f"torch {module.TORCH_VERSION})")
    else:
        text = f"torch backend: Python ProcessGroupBraid ({why_not})"
    log.info("braid: %s", text)
    level = os.environ.get("BRAID_DEBUG") or os.environ.get("NCCL_DEBUG") or ""
    if level.upper() in ("INFO", "TRACE"):
        print(f"braid INFO {text}", file=sys.stderr, flush=True)
