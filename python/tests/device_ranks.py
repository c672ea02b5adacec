"""Device buffers through the Python package (run under braidrun), on the emulated GPU.

BRAID_LIBRARY names tests/gpu_emu's libbraid_emu.so: Braid over an emulated GPU
(device memory, streams, CUDA IPC over host memory and threads) with C entry points
for its memory and streams. Buffers here expose __cuda_array_interface__ as CuPy's
do; every collective takes them with a stream, in order with host calls. Exit code
77 (skipped) under any other library.
"""

import ctypes
import sys

from braid_test_env import RANK, WORLD
import numpy as np

import braid
from braid import _lib

lib = _lib.lib
if not hasattr(lib, "braidEmuMalloc"):
    print(f"skipped: {_lib.path} is not the emulated GPU's library (set BRAID_LIBRARY)")
    sys.exit(77)
for name, args in [("braidEmuMalloc", [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]),
                   ("braidEmuFree", [ctypes.c_void_p]),
                   ("braidEmuMemcpy", [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]),
                   ("braidEmuStreamCreate", [ctypes.POINTER(ctypes.c_void_p)]),
                   ("braidEmuStreamSynchronize", [ctypes.c_void_p]),
                   ("braidEmuStreamDestroy", [ctypes.c_void_p]),
                   ("braidEmuPinnedAlloc", [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]),
                   ("braidEmuStreamWaitValue", [ctypes.c_void_p, ctypes.c_void_p,
                                                ctypes.c_uint64])]:
    getattr(lib, name).argtypes = args
    getattr(lib, name).restype = ctypes.c_int


def ok(result):
    assert result == 0, result


class DeviceArray:
    """Emulated device memory, described as CuPy describes its arrays."""

    def __init__(self, shape, dtype, fill=None):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.nbytes = int(np.prod(self.shape)) * self.dtype.itemsize
        p = ctypes.c_void_p()
        ok(lib.braidEmuMalloc(ctypes.byref(p), max(self.nbytes, 1)))
        self.ptr = p.value
        if fill is not None:
            self.set(fill)

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False),
                "strides": None, "version": 3}

    def set(self, host):
        host = np.ascontiguousarray(host, self.dtype)
        assert host.nbytes == self.nbytes
        ok(lib.braidEmuMemcpy(self.ptr, host.ctypes.data, self.nbytes))

    def get(self):
        out = np.empty(self.shape, self.dtype)
        ok(lib.braidEmuMemcpy(out.ctypes.data, self.ptr, self.nbytes))
        return out


class TorchLikeStream:
    """A stream object as torch.cuda.Stream shows its handle."""

    def __init__(self, handle):
        self.cuda_stream = handle


def main():
    comm = braid.init()
    r, n = comm.rank, comm.size
    assert (r, n) == (RANK, WORLD)
    s = ctypes.c_void_p()
    ok(lib.braidEmuStreamCreate(ctypes.byref(s)))
    stream = s.value

    def synced(arr):
        ok(lib.braidEmuStreamSynchronize(stream))
        return arr.get()

    # The first device call sets the device windows up (it maps and page-locks memory,
    # which CUDA may make wait for the device): not on a held stream.
    warm = DeviceArray((1,), np.float32, [1.0])
    assert synced(comm.all_reduce(warm, stream=stream))[0] == n

    # In place on a stream held by a gate: the call returns with the stream still held
    # (the data untouched), and the stream runs it once the gate opens.
    base = np.arange(1000, dtype=np.float32)
    x = DeviceArray((1000,), np.float32, base * (r + 1))
    gate = ctypes.c_void_p()
    ok(lib.braidEmuPinnedAlloc(ctypes.byref(gate), 4096))
    word = ctypes.c_uint64.from_address(gate.value)
    word.value = 0
    ok(lib.braidEmuStreamWaitValue(stream, gate.value, 1))
    assert comm.all_reduce(x, stream=stream) is x
    assert (x.get() == base * (r + 1)).all(), "the all-reduce ran before its stream got there"
    word.value = 1
    assert (synced(x) == base * n * (n + 1) / 2).all()

    # Out of place, max, async: the Work is done once the call is on the stream.
    y = DeviceArray((1000,), np.float32, base * 0)
    work = comm.all_reduce(DeviceArray((1000,), np.float32, base + r), out=y, op="max",
                           async_op=True, stream=TorchLikeStream(stream))
    assert work.is_completed()
    work.wait()
    assert (synced(y) == base + n - 1).all()

    # Host calls queued before a device call still run first (one order on every rank).
    h = np.full(7, r + 1, np.int64)
    hw = comm.all_reduce(h, async_op=True)
    z = DeviceArray((5,), np.int32, np.full(5, 10 * (r + 1)))
    comm.all_reduce(z, op="sum", stream=stream)
    hw.wait()
    assert (h == n * (n + 1) // 2).all() and (synced(z) == 10 * n * (n + 1) // 2).all()

    # The other collectives on device memory.
    g = DeviceArray((n, 3), np.int32)
    comm.all_gather(DeviceArray((3,), np.int32, [r, 2 * r, 3 * r]), out=g, stream=stream)
    assert synced(g).tolist() == [[p, 2 * p, 3 * p] for p in range(n)]

    rs = DeviceArray((4,), np.float64)
    comm.reduce_scatter(DeviceArray((n * 4,), np.float64, np.arange(n * 4) + r), out=rs,
                        stream=stream)
    want = sum(np.arange(n * 4) + p for p in range(n))[r * 4:(r + 1) * 4]
    assert (synced(rs) == want).all()

    b = DeviceArray((6,), np.uint8, np.full(6, r))
    comm.broadcast(b, root=n - 1, stream=stream)
    assert (synced(b) == n - 1).all()

    red = DeviceArray((3,), np.int64, [r, r, r])
    comm.reduce(red, root=0, op="max", stream=stream)
    if r == 0:
        assert (synced(red) == n - 1).all()

    a2a = DeviceArray((n, 2), np.int32, [[100 * r + p] * 2 for p in range(n)])
    comm.all_to_all(a2a, stream=stream)
    assert synced(a2a).tolist() == [[100 * p + r] * 2 for p in range(n)]

    counts = [(r + p) % 3 for p in range(n)]
    recv_counts = [(p + r) % 3 for p in range(n)]
    sendv = DeviceArray((sum(counts),), np.int32,
                        np.concatenate([np.full(c, 100 * r + p) for p, c in enumerate(counts)]))
    recvv = DeviceArray((sum(recv_counts),), np.int32)
    comm.all_to_allv(sendv, counts, recvv, recv_counts, stream=stream)
    want = np.concatenate([np.full(c, 100 * p + r) for p, c in enumerate(recv_counts)])
    assert (synced(recvv) == want).all()

    gat = DeviceArray((n, 2), np.float32) if r == 1 % n else None
    comm.gather(DeviceArray((2,), np.float32, [r, -r]), root=1 % n, out=gat, stream=stream)
    if gat is not None:
        assert synced(gat).tolist() == [[p, -p] for p in range(n)]

    sc = DeviceArray((2,), np.int64)
    src = DeviceArray((n, 2), np.int64, [[p, 7] for p in range(n)]) if r == 0 else None
    comm.scatter(src, sc, root=0, stream=stream)
    assert synced(sc).tolist() == [r, 7]

    # A ring exchange of send/recv in a group.
    out = DeviceArray((9,), np.float32)
    with braid.group():
        comm.send(DeviceArray((9,), np.float32, np.full(9, r)), (r + 1) % n, stream=stream)
        comm.recv(out, (r - 1) % n, stream=stream)
    assert (synced(out) == (r - 1) % n).all()

    # A premul-sum op whose scalar is in device memory: read on the device by each call.
    ds = DeviceArray((1,), np.float32, [r + 2])
    with comm.premul_sum(ds, np.float32) as op:
        pm = DeviceArray((8,), np.float32, np.arange(8) + r)
        comm.all_reduce(pm, op=op, stream=stream)
        want = sum((p + 2) * (np.arange(8) + p) for p in range(n))
        assert (synced(pm) == want).all(), synced(pm)

    comm.barrier(stream=stream)

    # No stream: CUDA's legacy default stream, complete on return.
    w = DeviceArray((3,), np.float32, [1, 2, 3])
    comm.all_reduce(w, op="avg")
    assert (w.get() == [1, 2, 3]).all()

    # What the package cannot do for device memory is refused by name.
    try:
        comm.all_gather(DeviceArray((3,), np.int32))
        raise AssertionError("an all_gather without out= on device memory was accepted")
    except ValueError as e:
        assert "out=" in str(e), e
    try:
        comm.all_reduce(x, stream="default")
        raise AssertionError("a string stream was accepted")
    except TypeError as e:
        assert "stream" in str(e), e

    ok(lib.braidEmuStreamSynchronize(stream))
    ok(lib.braidEmuStreamDestroy(stream))
    comm.close()
    print(f"rank {r}: device buffers ok")


if __name__ == "__main__":
    main()
