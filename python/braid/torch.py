"""The torch.distributed backend "braid".

    import braid.torch                       # registers the backend
    dist.init_process_group("braid")         # any init_method: env://, file://, tcp://

Works with PyTorch 1.13 (Debian's python3-torch) and later: ProcessGroupBraid
is a Python subclass of torch's ProcessGroup (pybind11 forwards the C++ calls
that DistributedDataParallel makes to it) and is registered with
``torch.distributed.Backend.register_backend``. Each process group is one Braid
communicator; its unique id travels through the group's store, so
``new_group`` needs nothing from the ranks outside the group.

Tensors must be contiguous, on the CPU or on a CUDA device. A call on CUDA
tensors is enqueued on torch's current stream of their device, in the group's
order, and returns, as the "nccl" backend's do: its Work records an event, and
wait() makes the caller's current stream wait for it.
"""

import collections
import datetime
import threading

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import ProcessGroup, Work as _TorchWorkBase

from . import _buffers
from . import _lib
from . import errors
from . import get_unique_id, init_rank
from .communicator import _counts, _displacements

BACKEND_NAME = "braid"

_DTYPES = {torch.int8: _buffers.INT8, torch.uint8: _buffers.UINT8, torch.bool: _buffers.UINT8,
           torch.int32: _buffers.INT32, torch.int64: _buffers.INT64,
           torch.float16: _buffers.FLOAT16, torch.float32: _buffers.FLOAT32,
           torch.float64: _buffers.FLOAT64, torch.bfloat16: _buffers.BFLOAT16}

_RED = dist.ReduceOp.RedOpType
_OPS = {_RED.SUM: 0, _RED.PRODUCT: 1, _RED.MAX: 2, _RED.MIN: 3, _RED.AVG: 4}

# pybind11 forwards C++ calls (DDP's wait, get_future) to a Work's Python
# methods only while its Python object lives, and PyTorch 1.13 keeps only the
# C++ half. Works are held here until waited on or their future taken; works
# nobody waits for are let go once done and this many newer ones exist.
_KEEP_LIMIT = 1024
_kept = collections.OrderedDict()
_kept_lock = threading.Lock()


def _keep(work):
    with _kept_lock:
        _kept[id(work)] = work
        while len(_kept) > _KEEP_LIMIT:
            oldest = next(iter(_kept.values()))
            if not oldest._work._done:
                break
            _kept.popitem(last=False)


def _release(work):
    with _kept_lock:
        _kept.pop(id(work), None)


class BraidWork(_TorchWorkBase):
    """A torch Work over a braid.Work: wait() raises Braid's error.

    stream: the CUDA stream a call on CUDA tensors was enqueued on (the call itself is
    then done); an event recorded after it says when the stream has run it.
    """

    def __init__(self, work, outputs, stream=None):
        super().__init__()
        self._work = work
        self._outputs = outputs
        self._stream = stream
        self._event = None
        if stream is not None:
            self._event = torch.cuda.Event()
            self._event.record(stream)
        _keep(self)

    def wait(self, timeout=None):
        if self._event is not None:  # the caller's stream goes on after the call's
            torch.cuda.current_stream(self._stream.device).wait_event(self._event)
            _release(self)
            return True
        if isinstance(timeout, datetime.timedelta):
            timeout = timeout.total_seconds() or None
        try:
            done = self._work.wait(timeout)
        finally:
            if self._work._done:
                _release(self)
        if not done:  # torch code ignores the result: a timeout must raise, as in gloo
            raise errors.BraidTimeoutError(
                f"braid: operation not finished within {timeout} s (Work.wait timeout)", 8)
        return True

    def synchronize(self):
        self.wait()

    def is_completed(self):
        if self._event is not None:
            return self._event.query()
        return self._work.is_completed()

    def is_success(self):
        return self.is_completed() and self._work.exception() is None

    def exception(self):
        return self._work.exception()

    def result(self):
        self.wait()
        return self._outputs

    def get_future(self):
        # Future.set_exception only makes Python's wait() raise: C++ readers such as
        # DDP's reducer would take the exception object for the call's tensors (and
        # crash). An error raised in a then() callback is a C++ error of the child
        # future, which every reader sees.
        done_fut = torch.futures.Future()
        self._work.add_done_callback(lambda work: done_fut.set_result(None))

        def outputs_or_error(_):
            if self._work.exception() is not None:
                raise self._work.exception()
            return self._outputs

        _release(self)
        return done_fut.then(outputs_or_error)


def _check_device(t):
    if t.device.type not in ("cpu", "cuda"):
        raise errors.InvalidUsageError(
            f"braid: {t.device} tensors are not served by this backend (CPU and CUDA "
            "tensors are)", 5)


def _stream_of(what, *tensors):
    """torch's current CUDA stream of the call's device, or None when its tensors are on
    the CPU. A call's tensors share one device."""
    devices = {t.device for t in tensors if t is not None and t.numel() > 0}
    if all(d.type == "cpu" for d in devices):
        return None
    if len(devices) != 1:
        raise ValueError(f"braid: {what}: tensors on {sorted(map(str, devices))}; the tensors "
                         "of one call share a device")
    return torch.cuda.current_stream(next(iter(devices)))


def _ptr(t, what):
    """(address, count, braid datatype) of a contiguous tensor."""
    if not t.is_contiguous():
        raise ValueError(f"braid: {what} must be contiguous")
    _check_device(t)
    code = _DTYPES.get(t.dtype)
    if code is None:
        raise TypeError(f"braid: no Braid datatype for {t.dtype} ({what})")
    return t.data_ptr(), t.numel(), code


def _op(opts, t):
    """Braid's reduction for opts.reduceOp (SUM without opts) on tensor t."""
    if opts is None:
        code = _OPS[_RED.SUM]
    else:
        code = _OPS.get(opts.reduceOp.op if hasattr(opts.reduceOp, "op") else opts.reduceOp)
    if code is None:
        raise ValueError(f"braid: reduction {opts.reduceOp} is not supported "
                         "(SUM, PRODUCT, MIN, MAX, AVG)")
    # bool travels as uint8: a sum would leave bytes other than 0 and 1.
    if t.dtype == torch.bool and code not in (_OPS[_RED.MAX], _OPS[_RED.MIN]):
        raise TypeError("braid: bool tensors reduce with MAX (or) and MIN (and) only")
    return code


def _one(tensors, what):
    if len(tensors) != 1:
        raise ValueError(f"braid: {what} takes one tensor per process, got {len(tensors)}")
    return tensors[0]


class ProcessGroupBraid(ProcessGroup):
    """A torch.distributed process group whose collectives are Braid's."""

    def __init__(self, store, rank, size, timeout):
        super().__init__(rank, size)
        if rank == 0:
            # hex: the 1.13 store takes str and would cut the id at its first zero byte
            store.set("braid_unique_id", get_unique_id().hex())
        uid = bytes.fromhex(store.get("braid_unique_id").decode())
        timeout_ms = int(timeout.total_seconds() * 1000) if timeout else None
        self._comm = init_rank(size, uid, rank, timeout_ms=timeout_ms,
                               name=f"torch-pg-{id(self):x}")

    def getBackendName(self):
        return BACKEND_NAME

    @property
    def communicator(self):
        """The braid.Communicator under this group."""
        return self._comm

    def _run(self, what, call, outputs, keep, after=None, fusable=False, stream=None):
        """call(comm, cudaStream_t or None) -> braidResult_t, run in the group's order."""
        handle = stream.cuda_stream if stream is not None else None
        work = self._comm._launch(what, lambda c: call(c, handle), outputs, keep, True, after,
                                  fusable, stream=handle)
        return BraidWork(work, outputs, stream)

    # ---- collectives ----------------------------------------------------------------------

    def _in_place(self, what, tensors, make_call):
        """One tensor, reduced or broadcast in place: make_call(ptr, count, dtype) -> call."""
        t = _one(tensors, what)
        return self._run(what, make_call(*_ptr(t, f"{what} tensor")), tensors, t,
                         stream=_stream_of(what, t))

    def allreduce(self, tensors, opts=None):
        op = _op(opts, _one(tensors, "all_reduce"))
        return self._in_place(
            "all_reduce", tensors,
            lambda p, n, dt: lambda c, s: _lib.lib.braidAllReduce(p, p, n, dt, op, c, s))

    def broadcast(self, tensors, opts=None):
        root = opts.rootRank if opts is not None else 0
        return self._in_place(
            "broadcast", tensors,
            lambda p, n, dt: lambda c, s: _lib.lib.braidBroadcast(p, p, n, dt, root, c, s))

    def reduce(self, tensors, opts=None):
        root = opts.rootRank if opts is not None else 0
        op = _op(opts, _one(tensors, "reduce"))
        return self._in_place(
            "reduce", tensors,
            lambda p, n, dt: lambda c, s: _lib.lib.braidReduce(p, p, n, dt, op, root, c, s))

    def _allgather_base(self, output, input, opts=None):
        po, no, dt = _ptr(output, "all_gather output")
        pi, ni, _ = _ptr(input, "all_gather input")
        self._check_sizes(output, input, no, ni * self.size(), "all_gather_into_tensor")
        return self._run("all_gather",
                         lambda c, s: _lib.lib.braidAllGather(pi, po, ni, dt, c, s),
                         [output], (output, input), stream=_stream_of("all_gather", output, input))

    def allgather(self, output_tensors, input_tensors, opts=None):
        outputs = _one(output_tensors, "all_gather")
        t = _one(input_tensors, "all_gather")
        if len(outputs) != self.size():
            raise ValueError(f"braid: all_gather needs {self.size()} output tensors")
        flat = torch.empty((self.size(), t.numel()), dtype=t.dtype, device=t.device)
        pi, ni, dt = _ptr(t, "all_gather input")
        po = flat.data_ptr()

        def scatter_out():
            for o, row in zip(outputs, flat):
                o.copy_(row.view_as(o))

        return self._run("all_gather",
                         lambda c, s: _lib.lib.braidAllGather(pi, po, ni, dt, c, s),
                         output_tensors, (t, flat), after=scatter_out,
                         stream=_stream_of("all_gather", t, *outputs))

    def gather(self, output_tensors, input_tensors, opts=None):
        t = _one(input_tensors, "gather")
        root = opts.rootRank if opts is not None else 0
        pi, ni, dt = _ptr(t, "gather input")
        outputs = _one(output_tensors, "gather") if self.rank() == root else []
        flat = torch.empty((self.size(), ni) if outputs else (0,), dtype=t.dtype, device=t.device)
        po = flat.data_ptr() if outputs else 0

        def scatter_out():
            for o, row in zip(outputs, flat):
                o.copy_(row.view_as(o))

        return self._run("gather",
                         lambda c, s: _lib.lib.braidGather(pi, po, ni, dt, root, c, s),
                         output_tensors, (t, flat), after=scatter_out,
                         stream=_stream_of("gather", t, *outputs))

    def scatter(self, output_tensors, input_tensors, opts=None):
        t = _one(output_tensors, "scatter")
        root = opts.rootRank if opts is not None else 0
        po, no, dt = _ptr(t, "scatter output")
        inputs = _one(input_tensors, "scatter") if self.rank() == root else []
        flat = (torch.stack([i.reshape(-1) for i in inputs]) if inputs
                else torch.empty(0, dtype=t.dtype, device=t.device))
        pi = flat.data_ptr() if inputs else 0
        return self._run("scatter",
                         lambda c, s: _lib.lib.braidScatter(pi, po, no, dt, root, c, s),
                         output_tensors, (t, flat), stream=_stream_of("scatter", t, *inputs))

    def _reduce_scatter_base(self, output, input, opts=None):
        po, no, dt = _ptr(output, "reduce_scatter output")
        pi, ni, _ = _ptr(input, "reduce_scatter input")
        self._check_sizes(output, input, ni, no * self.size(), "reduce_scatter_tensor")
        op = _op(opts, input)
        return self._run("reduce_scatter",
                         lambda c, s: _lib.lib.braidReduceScatter(pi, po, no, dt, op, c, s),
                         [output], (output, input),
                         stream=_stream_of("reduce_scatter", output, input))

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        output = _one(output_tensors, "reduce_scatter")
        inputs = _one(input_tensors, "reduce_scatter")
        if len(inputs) != self.size():
            raise ValueError(f"braid: reduce_scatter needs {self.size()} input tensors")
        flat = torch.stack([i.reshape(-1) for i in inputs])
        po, no, dt = _ptr(output, "reduce_scatter output")
        self._check_sizes(output, flat, flat.numel(), no * self.size(), "reduce_scatter")
        pi, op = flat.data_ptr(), _op(opts, flat)
        return self._run("reduce_scatter",
                         lambda c, s: _lib.lib.braidReduceScatter(pi, po, no, dt, op, c, s),
                         output_tensors, (output, flat),
                         stream=_stream_of("reduce_scatter", output, flat))

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes,
                      opts=None):
        po, no, dt = _ptr(output, "all_to_all output")
        pi, ni, _ = _ptr(input, "all_to_all input")
        if not output_split_sizes and not input_split_sizes:
            self._check_sizes(output, input, no, ni, "all_to_all_single")
            if ni % self.size():
                raise ValueError(f"braid: all_to_all_single needs a multiple of {self.size()} "
                                 f"elements, got {ni}")
            count = ni // self.size()
            return self._run("all_to_all",
                             lambda c, s: _lib.lib.braidAlltoAll(pi, po, count, dt, c, s),
                             [output], (output, input),
                             stream=_stream_of("all_to_all", output, input))
        send = self._split_counts(input, input_split_sizes)
        recv = self._split_counts(output, output_split_sizes)
        return self._alltoallv(pi, send, po, recv, dt, [output], (output, input),
                               stream=_stream_of("all_to_all", output, input))

    def alltoall(self, output_tensors, input_tensors, opts=None):
        send = torch.cat([t.reshape(-1) for t in input_tensors])
        recv = torch.empty(sum(t.numel() for t in output_tensors), dtype=send.dtype,
                           device=send.device)
        counts_out = [t.numel() for t in output_tensors]
        po, _, dt = _ptr(recv, "all_to_all output")
        pi, _, _ = _ptr(send, "all_to_all input")

        def scatter_out():
            for o, piece in zip(output_tensors, recv.split(counts_out)):
                o.copy_(piece.view_as(o))

        return self._alltoallv(pi, [t.numel() for t in input_tensors], po, counts_out, dt,
                               output_tensors, (send, recv), scatter_out,
                               stream=_stream_of("all_to_all", send, recv))

    def _alltoallv(self, pi, send_counts, po, recv_counts, dt, outputs, keep, after=None,
                   stream=None):
        sc = _counts(send_counts, self.size(), "all_to_all input splits")
        rc = _counts(recv_counts, self.size(), "all_to_all output splits")
        sd, rd = _displacements(sc), _displacements(rc)
        return self._run("all_to_allv",
                         lambda c, s: _lib.lib.braidAlltoAllv(pi, sc, sd, po, rc, rd, dt, c, s),
                         outputs, (keep, sc, sd, rc, rd), after, stream=stream)

    def send(self, tensors, dstRank, tag=0):
        t = _one(tensors, "send")
        p, n, dt = _ptr(t, "send tensor")
        return self._run("send", lambda c, s: _lib.lib.braidSend(p, n, dt, dstRank, c, s),
                         tensors, t, fusable=True, stream=_stream_of("send", t))

    def recv(self, tensors, srcRank, tag=0):
        t = _one(tensors, "recv")
        p, n, dt = _ptr(t, "recv tensor")
        return self._run("recv", lambda c, s: _lib.lib.braidRecv(p, n, dt, srcRank, c, s),
                         tensors, t, fusable=True, stream=_stream_of("recv", t))

    def barrier(self, opts=None):
        return self._run("barrier", lambda c, s: _lib.lib.braidBarrier(c, s), [], None)

    def _start_coalescing(self):
        pass  # sends and receives queued until a wait already run as one group

    def _end_coalescing(self, reqs):
        self._comm._executor.kick()

    # ---- helpers ----------------------------------------------------------------------------

    def _check_sizes(self, output, input, have, need, what):
        if output.dtype != input.dtype:
            raise TypeError(f"braid: {what}: output is {output.dtype}, input {input.dtype}")
        if have != need:
            raise ValueError(f"braid: {what}: {have} elements where {need} are needed "
                             f"({self.size()} ranks)")

    def _split_counts(self, t, splits):
        rows = t.shape[0] if t.dim() else 1
        per_row = t.numel() // rows if rows else 0
        if not splits:
            if rows % self.size():
                raise ValueError(f"braid: all_to_all_single: {rows} rows do not split evenly "
                                 f"over {self.size()} ranks")
            splits = [rows // self.size()] * self.size()
        return [s * per_row for s in splits]


def _create(store, rank, size, timeout):
    return ProcessGroupBraid(store, rank, size, timeout)


if BACKEND_NAME.upper() not in dist.Backend._plugins:
    dist.Backend.register_backend(BACKEND_NAME, _create)
