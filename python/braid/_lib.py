"""Loads libbraid.so and declares the C API (include/braid/braid.h) for ctypes.

Nothing here knows about arrays or tensors: this module is the ABI, one
prototype per C function, and the one place that turns a braidResult_t into a
Python exception carrying braidGetLastError's text.

The library is looked for, in order: $BRAID_LIBRARY; libbraid.so shipped inside
the package (pip install, or the CMake build's copy of the package); the build
trees of a source checkout (build-py/, build/); the system loader's path.
"""

import ctypes
import os
from pathlib import Path

from . import errors

UNIQUE_ID_BYTES = 128
CONFIG_MAGIC = 0xB4A1D001
CONFIG_UNDEF_INT = -(2**31)
SPLIT_NOCOLOR = -1


class UniqueId(ctypes.Structure):
    """braidUniqueId: 128 opaque bytes, passed by value."""

    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


class Config(ctypes.Structure):
    """braidConfig_t (v1). Fields at CONFIG_UNDEF_INT / None take the default."""

    _fields_ = [
        ("size", ctypes.c_size_t),
        ("magic", ctypes.c_uint),
        ("version", ctypes.c_uint),
        ("blocking", ctypes.c_int),
        ("timeoutMs", ctypes.c_int),
        ("netName", ctypes.c_char_p),
    ]


def make_config(timeout_ms=None, transports=None):
    """A braidConfig_t as BRAID_CONFIG_INITIALIZER, with the given overrides."""
    cfg = Config()
    cfg.size = ctypes.sizeof(Config)
    cfg.magic = CONFIG_MAGIC
    cfg.version = _version_code()
    cfg.blocking = CONFIG_UNDEF_INT
    cfg.timeoutMs = CONFIG_UNDEF_INT if timeout_ms is None else int(timeout_ms)
    cfg.netName = None if transports is None else transports.encode()
    return cfg


Comm = ctypes.c_void_p
Stream = ctypes.c_void_p
_size_t_p = ctypes.POINTER(ctypes.c_size_t)

# (name, argument types). Every function returns braidResult_t (int), except
# the two string functions declared separately below.
# Leading (sendbuff, recvbuff, count, datatype) and trailing (comm, stream)
# arguments that the collectives share.
_BUFS = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_ON = [Comm, Stream]
_INT = [ctypes.c_int]

# (name, argument types). Every function returns braidResult_t (int), except
# the two string functions declared separately below.
_PROTOTYPES = [
    ("braidGetVersion", [ctypes.POINTER(ctypes.c_int)]),
    ("braidGetUniqueId", [ctypes.POINTER(UniqueId)]),
    ("braidCommInitRankConfig",
     [ctypes.POINTER(Comm), ctypes.c_int, UniqueId, ctypes.c_int, ctypes.POINTER(Config)]),
    ("braidCommInitFromEnv", [ctypes.POINTER(Comm), ctypes.POINTER(Config)]),
    ("braidCommFinalize", [Comm]),
    ("braidCommDestroy", [Comm]),
    ("braidCommAbort", [Comm]),
    ("braidCommCount", [Comm, ctypes.POINTER(ctypes.c_int)]),
    ("braidCommUserRank", [Comm, ctypes.POINTER(ctypes.c_int)]),
    ("braidCommGetAsyncError", [Comm, ctypes.POINTER(ctypes.c_int)]),
    ("braidTraceMarker", [Comm, ctypes.c_char_p]),
    ("braidCommSplit",
     [Comm, ctypes.c_int, ctypes.c_int, ctypes.POINTER(Comm), ctypes.POINTER(Config)]),
    ("braidAllReduce", _BUFS + _INT + _ON),  # op
    ("braidAllGather", _BUFS + _ON),
    ("braidReduceScatter", _BUFS + _INT + _ON),  # op
    ("braidBroadcast", _BUFS + _INT + _ON),  # root
    ("braidReduce", _BUFS + _INT + _INT + _ON),  # op, root
    ("braidGather", _BUFS + _INT + _ON),  # root
    ("braidScatter", _BUFS + _INT + _ON),  # root
    ("braidAlltoAll", _BUFS + _ON),
    ("braidAlltoAllv",
     [ctypes.c_void_p, _size_t_p, _size_t_p, ctypes.c_void_p, _size_t_p, _size_t_p,
      ctypes.c_int] + _ON),
    ("braidSend", [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int] + _ON),
    ("braidRecv", [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int] + _ON),
    ("braidBarrier", _ON),
    ("braidGroupStart", []),
    ("braidGroupEnd", []),
    ("braidRedOpCreatePreMulSum",
     [ctypes.POINTER(ctypes.c_int), ctypes.c_void_p, ctypes.c_int, ctypes.c_int, Comm]),
    ("braidRedOpDestroy", [ctypes.c_int, Comm]),
]


def _candidates():
    env = os.environ.get("BRAID_LIBRARY")
    if env:
        yield Path(env)
    here = Path(__file__).resolve().parent
    yield here / "lib" / "libbraid.so"
    checkout = here.parent.parent
    for build in ("build", "build-py"):
        yield checkout / build / "src" / "api" / "libbraid.so"


def _load():
    tried = []
    for path in _candidates():
        if path.is_file():
            return ctypes.CDLL(str(path)), str(path)
        tried.append(str(path))
    try:
        return ctypes.CDLL("libbraid.so.0"), "libbraid.so.0"
    except OSError as e:
        tried.append(f"libbraid.so.0 ({e})")
    raise ImportError("braid: libbraid.so not found; build it (cmake --build build --target "
                      "braid) or set BRAID_LIBRARY. Tried: " + ", ".join(tried))


lib, path = _load()
for _name, _args in _PROTOTYPES:
    _fn = getattr(lib, _name)
    _fn.argtypes = _args
    _fn.restype = ctypes.c_int
lib.braidGetErrorString.argtypes = [ctypes.c_int]
lib.braidGetErrorString.restype = ctypes.c_char_p
lib.braidGetLastError.argtypes = [Comm]
lib.braidGetLastError.restype = ctypes.c_char_p


def _version_code():
    v = ctypes.c_int()
    lib.braidGetVersion(ctypes.byref(v))
    return v.value


def last_error(comm=None):
    """braidGetLastError: the comm's last error, or this thread's when comm is None."""
    return lib.braidGetLastError(comm).decode(errors="replace")


def check(result, comm=None, what=""):
    """Raises the BraidError subclass for a non-zero braidResult_t.

    Must run on the thread that made the failing call: with comm None the text
    comes from that thread's last error.
    """
    if result == 0:
        return
    text = last_error(comm)
    if not text:
        text = lib.braidGetErrorString(result).decode(errors="replace")
    raise errors.from_code(result, f"{what}: {text}" if what else text)
