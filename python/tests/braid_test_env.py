"""Shared by the multi-process tests: where braid and the job's ranks are.

The tests run as ranks under braidrun, which sets BRAID_RANK, BRAID_WORLD_SIZE
and BRAID_SECRET; torch.distributed rendezvous through a FileStore named by the
job's secret, so parallel test jobs never meet.
"""

import os
import sys
import tempfile

# The package from this checkout, unless BRAID_PYTHONPATH points elsewhere (the
# CMake build's copy).
sys.path.insert(0, os.environ.get("BRAID_PYTHONPATH",
                                  os.path.join(os.path.dirname(__file__), "..")))

RANK = int(os.environ.get("BRAID_RANK", "0"))
WORLD = int(os.environ.get("BRAID_WORLD_SIZE", "1"))


def torch_init_method(tag):
    """A file:// init_method unique to this job and tag."""
    secret = os.environ.get("BRAID_SECRET", str(os.getppid()))[:16]
    return "file://" + os.path.join(tempfile.gettempdir(), f"braid-torch-{tag}-{secret}")
