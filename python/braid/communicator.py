"""Communicator: a group of ranks and the collectives they call together.

Every collective takes host buffers (NumPy arrays, buffer-protocol objects,
DLPack objects) and runs blocking by default; with ``async_op=True`` it
returns a Work at once. Device buffers (CUDA memory through DLPack or
``__cuda_array_interface__``: CuPy, Numba, PyTorch) take ``stream=``, a CUDA
stream (its handle as an int, or a torch / CuPy / Numba stream object): the
call is enqueued on that stream in this communicator's order and returns, as
NCCL's do; what the caller puts on the stream afterwards sees the result.
Without a stream, device buffers use CUDA's legacy default stream and the
call returns complete. ``out=None`` means in place where the output has the
size of the input (all_reduce, broadcast, reduce, all_to_all), and a new NumPy
array where it does not (all_gather, reduce_scatter). Operations of one
communicator run in the order they are called, which must be the same on
every rank.

Thread-safety: a Communicator may be used from several threads; its calls are
run one at a time in the order they were made. ``abort()`` may be called from
any thread at any time.
"""

import ctypes
import threading
import weakref

import numpy as np

from . import _buffers
from . import _lib
from . import errors
from .work import Executor, Work

# braidRedOp_t values, by the names Python callers use.
OPS = {"sum": 0, "prod": 1, "product": 1, "max": 2, "min": 3, "avg": 4, "mean": 4}

_group_state = threading.local()
_live = weakref.WeakSet()


def _op_code(op):
    if isinstance(op, PreMulSum):
        return op.code
    if isinstance(op, int) and 0 <= op < 5:
        return op
    code = OPS.get(str(op).lower())
    if code is None:
        raise ValueError(f"braid: unknown reduction {op!r}; one of sum, prod, max, min, avg")
    return code


class PreMulSum:
    """A premul-sum reduction of one communicator (braidRedOpCreatePreMulSum): pass it as
    ``op=`` to all_reduce, reduce or reduce_scatter on its datatype; the result is the sum
    of every rank's input times that rank's own scalar. Make it with
    Communicator.premul_sum; destroy() (or leaving a ``with`` block) frees it, and calls
    already made keep their scalar."""

    def __init__(self, comm, code, dtype, keep):
        self._comm, self.code, self.dtype, self._keep = comm, code, dtype, keep

    def destroy(self):
        if self.code is None:
            return
        code, self.code = self.code, None
        if self._comm.handle is not None:  # else it went with its communicator
            self._comm._executor.drain()  # calls queued with it are issued first
            _lib.check(_lib.lib.braidRedOpDestroy(code, self._comm._handle), self._comm._handle,
                       "braidRedOpDestroy")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    def __repr__(self):
        return f"<braid.PreMulSum {_buffers.DTYPE_NAMES[self.dtype]} op {self.code}>"


def _scalar_bytes(value, dtype):
    """One element of Braid datatype `dtype` holding `value` (bfloat16: rounded to nearest
    even from float32)."""
    if dtype == _buffers.BFLOAT16:
        bits = int(np.array([value], np.float32).view(np.uint32)[0])
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        return bits.to_bytes(2, "little")
    return np.array([value], dtype=_buffers.DTYPE_NAMES[dtype]).tobytes()


def _in_group():
    return getattr(_group_state, "depth", 0) > 0


def _stream_handle(stream):
    """The cudaStream_t of ``stream`` as an int (None: the NULL stream)."""
    if stream is None or isinstance(stream, int):
        return stream
    for attr in ("cuda_stream", "ptr", "handle"):  # torch, CuPy, Numba
        value = getattr(stream, attr, None)
        if isinstance(value, ctypes.c_void_p):
            value = value.value
        if isinstance(value, int):
            return value
    raise TypeError(f"braid: stream {stream!r} is neither an int (a cudaStream_t) nor a torch, "
                    "CuPy or Numba stream")


def _on_device(*bufs):
    return any(b is not None and b.device in _buffers.DEVICE_KINDS for b in bufs)


class Communicator:
    """A Braid communicator (braidComm_t). Make one with braid.init() or split()."""

    def __init__(self, handle, name="world"):
        """Wraps an initialised braidComm_t handle (an int); use braid.init() instead."""
        self._handle = ctypes.c_void_p(handle)
        self._name = name
        rank, size = ctypes.c_int(), ctypes.c_int()
        _lib.check(_lib.lib.braidCommUserRank(self._handle, ctypes.byref(rank)), self._handle)
        _lib.check(_lib.lib.braidCommCount(self._handle, ctypes.byref(size)), self._handle)
        self._rank, self._size = rank.value, size.value
        self._executor = Executor(name, self._run_fused)
        _live.add(self)

    # ---- identity and life cycle ------------------------------------------------------

    def trace_marker(self, name):
        """Marks this moment as `name` on the BRAID_TRACE timeline (a training step's start);
        nothing when the job does not trace."""
        _lib.check(_lib.lib.braidTraceMarker(self._handle, name.encode()), self._handle)

    @property
    def rank(self):
        """This process's rank in the communicator, 0 .. size-1."""
        return self._rank

    @property
    def size(self):
        """Number of ranks."""
        return self._size

    @property
    def handle(self):
        """The braidComm_t as an int (for other bindings); None once closed."""
        return self._handle.value

    def __repr__(self):
        state = "closed" if self._handle.value is None else f"rank {self._rank} of {self._size}"
        return f"<braid.Communicator {self._name}: {state}>"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Waits for this rank's operations, says goodbye to peers and frees the handle."""
        if self._handle.value is None:
            return
        self._executor.drain()
        self._executor.close()
        handle, self._handle = self._handle, ctypes.c_void_p(None)
        _lib.check(_lib.lib.braidCommDestroy(handle), None, "braidCommDestroy")

    def abort(self):
        """Stops every operation on this communicator, from any thread, and frees it.

        Operations in flight fail; peers waiting on this rank get an error naming it.
        """
        if self._handle.value is None:
            return
        self._executor.close()
        handle, self._handle = self._handle, ctypes.c_void_p(None)
        _lib.check(_lib.lib.braidCommAbort(handle), None, "braidCommAbort")

    def split(self, color, key=None, timeout_ms=None):
        """Splits into communicators of the ranks passing the same color, ordered by key.

        Every rank must call it. color None (or braid.SPLIT_NOCOLOR) takes no
        part and gets None back. key defaults to this rank.
        """
        color = _lib.SPLIT_NOCOLOR if color is None else int(color)
        key = self._rank if key is None else int(key)
        cfg = _lib.make_config(timeout_ms)
        out = _lib.Comm()

        def run():
            _lib.check(_lib.lib.braidCommSplit(self._live(), color, key, ctypes.byref(out),
                                               ctypes.byref(cfg)), self._handle, "split")

        self._executor.run(Work(run, self._executor))
        if out.value is None:
            return None
        return Communicator(out.value, f"{self._name}/{color}")

    def premul_sum(self, scalar, dtype="float32"):
        """A PreMulSum op for ``dtype`` (a name as in DTYPE_NAMES, or a NumPy dtype) with
        this rank's ``scalar``: a number (copied now), or a one-element buffer of that
        datatype, host or device memory, read by each call when it runs (NCCL's
        ncclScalarDevice; the buffer is kept alive with the op)."""
        if isinstance(dtype, str) and dtype in _buffers.DTYPE_NAMES:
            code = _buffers.DTYPE_NAMES.index(dtype)
        else:
            code = _buffers.numpy_dtype_code(dtype)
        if isinstance(scalar, (int, float, np.number)):
            raw = ctypes.create_string_buffer(_scalar_bytes(scalar, code), 8)
            pointer, residence, keep = ctypes.addressof(raw), 1, raw
        else:
            buf = _buffers.as_buffer(scalar, what="premul_sum scalar")
            if buf.count != 1 or buf.dtype != code:
                raise errors.InvalidArgumentError(
                    f"braid: premul_sum scalar must be one {_buffers.DTYPE_NAMES[code]} "
                    f"element, got {buf.count} of {_buffers.DTYPE_NAMES[buf.dtype]}", 4)
            pointer, residence, keep = buf.address, 0, buf
        out = ctypes.c_int()
        _lib.check(_lib.lib.braidRedOpCreatePreMulSum(ctypes.byref(out), pointer, code,
                                                      residence, self._live()),
                   self._handle, "premul_sum")
        return PreMulSum(self, out.value, code, keep)

    def async_error(self):
        """The error raised asynchronously on this communicator (a peer died), or None."""
        code = ctypes.c_int()
        _lib.check(_lib.lib.braidCommGetAsyncError(self._live(), ctypes.byref(code)),
                   self._handle)
        if code.value == 0:
            return None
        return errors.from_code(code.value, _lib.last_error(self._handle))

    def _live(self):
        if self._handle.value is None:
            raise errors.InvalidUsageError(f"braid: communicator {self._name} is closed", 5)
        return self._handle

    # ---- running a call -------------------------------------------------------------------

    def _launch(self, what, call, result, keep, async_op, after=None, fusable=False,
                stream=None, bufs=(), order=None):
        """Runs call(handle) -> braidResult_t in order, then after(); returns result or a Work.

        fusable: a point-to-point call, which may join a group with its neighbours;
        order: its sort key within such a group (see _run_fused).
        stream (an int) or device memory among bufs: the call is issued now, behind the
        calls already queued, so that it is on its stream before this returns (async_op:
        a finished Work); not fused.
        """

        def run():
            _lib.check(call(self._live()), self._handle, what)
            if after is not None:
                after()

        if _in_group():
            if async_op:
                raise errors.InvalidUsageError(
                    "braid: async_op inside braid.group(): the group is issued at its end", 5)
            # A group's calls must come from the thread that opened it, and
            # their buffers must live until it ends.
            self._executor.drain()
            run()
            _group_state.keep.append(keep)
            return result
        if stream is not None or _on_device(*bufs):
            work = Work(run, self._executor, result, keep)
            self._executor.run(work)
            return work if async_op else result
        work = Work(run, self._executor, result, keep, fusable, order)
        if async_op:
            return self._executor.submit(work)
        self._executor.run(work)
        return result

    def _run_fused(self, works):
        # Matching is per peer and direction, in issue order: sorting by a canonical key
        # (the torch backend's (direction, peer, tag)) lines up both sides' orders.
        works = sorted(works, key=lambda w: w._order or ())
        _lib.check(_lib.lib.braidGroupStart(), None, "braidGroupStart")
        try:
            for work in works:
                work._run()
        finally:
            result = _lib.lib.braidGroupEnd()
        _lib.check(result, self._handle, "point-to-point group")

    def _reduce_args(self, send, out, what):
        src = _buffers.as_buffer(send, what=f"{what} input")
        dst = src if out is None else _buffers.as_buffer(out, writable=True,
                                                         what=f"{what} output")
        return src, dst, (send if out is None else out)

    # ---- collectives ----------------------------------------------------------------------

    def all_reduce(self, send, out=None, op="sum", async_op=False, stream=None):
        """Every rank gets op over all ranks' ``send``, element-wise.

        In place when out is None (send is overwritten). Returns the output, or a
        Work when async_op.
        """
        st = _stream_handle(stream)
        src, dst, result = self._reduce_args(send, out, "all_reduce")
        code = _op_code(op)
        return self._launch(
            "all_reduce",
            lambda c: _lib.lib.braidAllReduce(src.address, dst.address, src.count, src.dtype,
                                              code, c, st),
            result, (src, dst), async_op, stream=st, bufs=(src, dst))

    def broadcast(self, buf, root=0, out=None, async_op=False, stream=None):
        """Every rank gets root's ``buf`` (in place when out is None)."""
        st = _stream_handle(stream)
        src, dst, result = self._reduce_args(buf, out, "broadcast")
        return self._launch(
            "broadcast",
            lambda c: _lib.lib.braidBroadcast(src.address, dst.address, src.count, src.dtype,
                                              int(root), c, st),
            result, (src, dst), async_op, stream=st, bufs=(src, dst))

    def reduce(self, send, root=0, out=None, op="sum", async_op=False, stream=None):
        """Root gets op over all ranks' ``send`` (in place when out is None).

        The output is written on root only.
        """
        st = _stream_handle(stream)
        src, dst, result = self._reduce_args(send, out, "reduce")
        code = _op_code(op)
        return self._launch(
            "reduce",
            lambda c: _lib.lib.braidReduce(src.address, dst.address, src.count, src.dtype, code,
                                           int(root), c, st),
            result, (src, dst), async_op, stream=st, bufs=(src, dst))

    def all_gather(self, send, out=None, async_op=False, stream=None):
        """Every rank gets all ranks' ``send`` concatenated in rank order.

        out: size * len(send) elements; None allocates a NumPy array of shape
        (size, *send.shape). In place when send is block ``rank`` of out.
        """
        st = _stream_handle(stream)
        src = _buffers.as_buffer(send, what="all_gather input")
        if out is None:
            out = _buffers.empty_like(src, src.count * self._size, (self._size, *src.shape))
        dst = _buffers.as_buffer(out, writable=True, what="all_gather output")
        self._check_count(dst, src.count * self._size, "all_gather output")
        return self._launch(
            "all_gather",
            lambda c: _lib.lib.braidAllGather(src.address, dst.address, src.count, src.dtype, c,
                                              st),
            out, (src, dst), async_op, stream=st, bufs=(src, dst))

    def gather(self, send, root=0, out=None, async_op=False, stream=None):
        """Root gets all ranks' ``send`` concatenated in rank order.

        out (root only): size * len(send) elements; None allocates a NumPy array
        of shape (size, *send.shape) on root. Other ranks get None.
        """
        st = _stream_handle(stream)
        src = _buffers.as_buffer(send, what="gather input")
        dst = None
        if self._rank == int(root):
            if out is None:
                out = _buffers.empty_like(src, src.count * self._size,
                                          (self._size, *src.shape))
            dst = _buffers.as_buffer(out, writable=True, what="gather output")
            self._check_count(dst, src.count * self._size, "gather output")
        address = dst.address if dst is not None else None
        return self._launch(
            "gather",
            lambda c: _lib.lib.braidGather(src.address, address, src.count, src.dtype,
                                           int(root), c, st),
            out if dst is not None else None, (src, dst), async_op, stream=st, bufs=(src, dst))

    def scatter(self, send, out, root=0, async_op=False, stream=None):
        """Block r of root's ``send`` (size equal blocks) goes to rank r's ``out``.

        send is read on root only (pass None elsewhere).
        """
        st = _stream_handle(stream)
        dst = _buffers.as_buffer(out, writable=True, what="scatter output")
        src = None
        if self._rank == int(root):
            src = _buffers.as_buffer(send, what="scatter input")
            self._check_count(src, dst.count * self._size, "scatter input")
        address = src.address if src is not None else None
        return self._launch(
            "scatter",
            lambda c: _lib.lib.braidScatter(address, dst.address, dst.count, dst.dtype,
                                            int(root), c, st),
            out, (src, dst), async_op, stream=st, bufs=(src, dst))

    def reduce_scatter(self, send, out=None, op="sum", async_op=False, stream=None):
        """Rank r gets block r of op over all ranks' ``send`` (size equal blocks).

        out: len(send) / size elements; None allocates a NumPy array (of shape
        send.shape[1:] when send's first dimension is size).
        """
        st = _stream_handle(stream)
        src = _buffers.as_buffer(send, what="reduce_scatter input")
        if src.count % self._size:
            raise errors.InvalidArgumentError(
                f"braid: reduce_scatter input has {src.count} elements, not a multiple of "
                f"{self._size} ranks", 4)
        count = src.count // self._size
        if out is None:
            shape = src.shape[1:] if src.shape[:1] == (self._size,) else (count,)
            out = _buffers.empty_like(src, count, shape)
        dst = _buffers.as_buffer(out, writable=True, what="reduce_scatter output")
        self._check_count(dst, count, "reduce_scatter output")
        code = _op_code(op)
        return self._launch(
            "reduce_scatter",
            lambda c: _lib.lib.braidReduceScatter(src.address, dst.address, count, src.dtype,
                                                  code, c, st),
            out, (src, dst), async_op, stream=st, bufs=(src, dst))

    def all_to_all(self, send, out=None, async_op=False, stream=None):
        """Block p of ``send`` goes to rank p; block p of the output comes from rank p.

        Blocks are len(send) / size elements. In place when out is None.
        """
        st = _stream_handle(stream)
        src, dst, result = self._reduce_args(send, out, "all_to_all")
        if src.count % self._size:
            raise errors.InvalidArgumentError(
                f"braid: all_to_all buffer has {src.count} elements, not a multiple of "
                f"{self._size} ranks", 4)
        count = src.count // self._size
        return self._launch(
            "all_to_all",
            lambda c: _lib.lib.braidAlltoAll(src.address, dst.address, count, src.dtype, c, st),
            result, (src, dst), async_op, stream=st, bufs=(src, dst))

    def all_to_allv(self, send, send_counts, out, recv_counts, async_op=False, stream=None):
        """Uneven all-to-all: send_counts[p] elements to rank p, recv_counts[p] from p.

        Blocks are packed in rank order in both buffers. send_counts[p] here
        must equal recv_counts[this rank] on rank p.
        """
        st = _stream_handle(stream)
        src = _buffers.as_buffer(send, what="all_to_allv input")
        dst = _buffers.as_buffer(out, writable=True, what="all_to_allv output")
        sc = _counts(send_counts, self._size, "send_counts")
        rc = _counts(recv_counts, self._size, "recv_counts")
        sd, rd = _displacements(sc), _displacements(rc)
        self._check_count(src, sum(sc), "all_to_allv input", at_least=True)
        self._check_count(dst, sum(rc), "all_to_allv output", at_least=True)
        return self._launch(
            "all_to_allv",
            lambda c: _lib.lib.braidAlltoAllv(src.address, sc, sd, dst.address, rc, rd,
                                              src.dtype, c, st),
            out, (src, dst, sc, sd, rc, rd), async_op, stream=st, bufs=(src, dst))

    def send(self, buf, peer, async_op=False, stream=None):
        """Sends ``buf`` to rank peer (matched in order with peer's recv)."""
        st = _stream_handle(stream)
        src = _buffers.as_buffer(buf, what="send buffer")
        return self._launch(
            "send",
            lambda c: _lib.lib.braidSend(src.address, src.count, src.dtype, int(peer), c, st),
            None, src, async_op, fusable=True, stream=st, bufs=(src,))

    def recv(self, buf, peer, async_op=False, stream=None):
        """Receives into ``buf`` from rank peer (counts must match the send)."""
        st = _stream_handle(stream)
        dst = _buffers.as_buffer(buf, writable=True, what="recv buffer")
        return self._launch(
            "recv",
            lambda c: _lib.lib.braidRecv(dst.address, dst.count, dst.dtype, int(peer), c, st),
            buf, dst, async_op, fusable=True, stream=st, bufs=(dst,))

    def barrier(self, async_op=False, stream=None):
        """Returns once every rank has entered the barrier."""
        st = _stream_handle(stream)
        return self._launch("barrier", lambda c: _lib.lib.braidBarrier(c, st), None, None,
                            async_op, stream=st)

    def _check_count(self, buf, count, what, at_least=False):
        if buf.count < count or (buf.count != count and not at_least):
            raise errors.InvalidArgumentError(
                f"braid: {what} has {buf.count} elements, needs {count} "
                f"({self._size} ranks)", 4)


def _counts(values, size, what):
    values = [int(v) for v in values]
    if len(values) != size or min(values, default=0) < 0:
        raise errors.InvalidArgumentError(
            f"braid: {what} needs {size} non-negative counts, got {values}", 4)
    return (ctypes.c_size_t * size)(*values)


def _displacements(counts):
    out = (ctypes.c_size_t * len(counts))()
    total = 0
    for i, n in enumerate(counts):
        out[i] = total
        total += n
    return out


class group:
    """Context manager: calls inside are issued together at its end (braidGroupStart/End).

    Use it for send/recv patterns that would deadlock one by one (a ring
    exchange). Calls inside are blocking-style but return before completing;
    their buffers are ready once the ``with`` block has exited. Groups nest.
    """

    def __enter__(self):
        _lib.check(_lib.lib.braidGroupStart(), None, "braidGroupStart")
        _group_state.depth = getattr(_group_state, "depth", 0) + 1
        if _group_state.depth == 1:
            _group_state.keep = []
        return self

    def __exit__(self, exc_type, exc, tb):
        _group_state.depth -= 1
        result = _lib.lib.braidGroupEnd()
        if _group_state.depth == 0:
            _group_state.keep = []
        if exc_type is None:
            _lib.check(result, None, "braidGroupEnd")
        return False
