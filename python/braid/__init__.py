"""Braid from Python: collectives on NumPy arrays, buffers and DLPack tensors.

    import braid, numpy as np
    comm = braid.init()                 # from braidrun's (or torchrun's) environment
    x = np.full(4, comm.rank, np.float32)
    comm.all_reduce(x)                  # in place: every rank now holds the sum
    w = comm.all_gather(x, async_op=True)
    gathered = w.result()

Run it with ``python -m braid.run -n 4 script.py``. ``import braid.torch``
registers the torch.distributed backend "braid".
"""

import atexit
import ctypes

from . import _lib
from .communicator import Communicator, PreMulSum, group, OPS, _live
from .errors import (BraidError, InternalError, InvalidArgumentError, InvalidUsageError,
                     RemoteError, BraidTimeoutError, BraidSystemError)
from . import work
from .work import Work

__all__ = ["init", "init_rank", "get_unique_id", "Communicator", "PreMulSum", "Work", "group",
           "OPS", "SPLIT_NOCOLOR", "version", "BraidError", "InvalidArgumentError",
           "InvalidUsageError", "RemoteError", "BraidTimeoutError", "BraidSystemError",
           "InternalError"]

SPLIT_NOCOLOR = _lib.SPLIT_NOCOLOR
library_path = _lib.path


def version():
    """Braid's version as (major, minor, patch)."""
    code = _lib._version_code()
    return (code // 10000, code // 100 % 100, code % 100)


def init(timeout_ms=None, transports=None):
    """The world communicator, from the launcher's environment.

    Reads braidrun's BRAID_RANK / BRAID_WORLD_SIZE / BRAID_ROOT / BRAID_SECRET,
    torchrun's RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT, or OpenMPI's and
    Slurm's variables. timeout_ms overrides BRAID_TIMEOUT_MS; transports
    overrides BRAID_TRANSPORTS ("shm,socket"). Every rank must call it.
    """
    cfg = _lib.make_config(timeout_ms, transports)
    comm = _lib.Comm()
    _lib.check(_lib.lib.braidCommInitFromEnv(ctypes.byref(comm), ctypes.byref(cfg)), None,
               "braid.init")
    return Communicator(comm.value)


def get_unique_id():
    """A new unique id (bytes) for init_rank; serves the rendezvous from this process.

    This process must stay alive until every rank has joined. Pass the bytes
    to the other ranks by any means (a file, a store, a socket).
    """
    uid = _lib.UniqueId()
    _lib.check(_lib.lib.braidGetUniqueId(ctypes.byref(uid)), None, "braid.get_unique_id")
    return bytes(uid)  # not uid.internal: a c_char array stops at the first zero byte


def init_rank(size, unique_id, rank, timeout_ms=None, transports=None, name="world"):
    """Joins the communicator of ``size`` ranks that unique_id (from get_unique_id) names."""
    if len(unique_id) != _lib.UNIQUE_ID_BYTES:
        raise InvalidArgumentError(
            f"braid: unique_id must be {_lib.UNIQUE_ID_BYTES} bytes, got {len(unique_id)}", 4)
    uid = _lib.UniqueId()
    ctypes.memmove(ctypes.addressof(uid), bytes(unique_id), _lib.UNIQUE_ID_BYTES)
    cfg = _lib.make_config(timeout_ms, transports)
    comm = _lib.Comm()
    _lib.check(_lib.lib.braidCommInitRankConfig(ctypes.byref(comm), int(size), uid, int(rank),
                                                ctypes.byref(cfg)), None, "braid.init_rank")
    return Communicator(comm.value, name)


@atexit.register
def _close_all():
    # Peers see a rank that exits without a goodbye as dead: say it for every
    # communicator still open, after its queued operations.
    for comm in list(_live):
        try:
            comm.close()
        except BraidError:
            pass
    # Then every worker thread ends while the interpreter still runs (a daemon
    # thread releasing a tensor during finalization would abort the process); one
    # stuck in a call is left after a few seconds.
    for executor in list(work._executors):
        executor.close()
        executor.join(5)
