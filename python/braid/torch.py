"""The torch.distributed backend "braid".

    import braid.torch                       # registers the backend
    dist.init_process_group("braid")         # any init_method: env://, file://, tcp://

Two implementations serve the name, chosen when this module is imported:

- the native one, ProcessGroupBraid in C++ (python/braid/csrc), built for the
  running torch as the module braid._pg_torch<major>_<minor> (see _torch_native);
- the Python one here, PyProcessGroupBraid, a Python subclass of torch's
  ProcessGroup (pybind11 forwards the C++ calls that DistributedDataParallel
  makes to it), used where the native module is missing or does not load, and
  when BRAID_TORCH_IMPL=python.

``braid.torch.IMPLEMENTATION`` says which one ("native" or "python"), and the
import logs it at INFO (logger "braid.torch"; on stderr too with BRAID_DEBUG=INFO).
Works with PyTorch 1.13 (Debian's python3-torch) and later; the backend is
registered with ``torch.distributed.Backend.register_backend``. Each process group is one Braid
communicator; its unique id travels through the group's store, so
``new_group`` needs nothing from the ranks outside the group.

Tensors must be contiguous, on the CPU or on a CUDA device. A call on CUDA
tensors is enqueued on torch's current stream of their device, in the group's
order, and returns, as the "nccl" backend's do: its Work records an event, and
wait() makes the caller's current stream wait for it.

The group has every method gloo has on CPU tensors (docs/torch.md): the
collectives here, point-to-point calls and receives from any source in
_torch_p2p, coalesced and sparse calls and the monitored barrier in
_torch_extra, the Work objects in _torch_work.
"""

import inspect
import os
import weakref

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import ProcessGroup

try:  # torch 2.x: a Backend serves one device of a ProcessGroup (1.13 has none)
    from torch._C._distributed_c10d import Backend as _Backend
except ImportError:
    _Backend = None

from . import _buffers
from . import _lib
from . import get_unique_id, init_rank
from ._torch_common import RED, op_code, op_type, one, premul_factor, ptr, stream_of
from . import _torch_native
from ._torch_extra import Extras
from ._torch_p2p import PointToPoint
from ._torch_work import BraidWork
from .communicator import _counts, _displacements
from .errors import BraidError

BACKEND_NAME = "braid"


class PyProcessGroupBraid(PointToPoint, Extras, ProcessGroup):
    """A torch.distributed process group whose collectives are Braid's, in Python."""

    def __init__(self, store, rank, size, timeout):
        super().__init__(rank, size)
        if rank == 0:
            # hex: the 1.13 store takes str and would cut the id at its first zero byte
            store.set("braid_unique_id", get_unique_id().hex())
        uid = bytes.fromhex(store.get("braid_unique_id").decode())
        self._timeout_s = timeout.total_seconds() if timeout else None
        timeout_ms = int(self._timeout_s * 1000) if timeout else None
        self._comm = init_rank(size, uid, rank, timeout_ms=timeout_ms,
                               name=f"torch-pg-{id(self):x}")
        self._init_p2p(store)
        self._premul = {}  # (factor, braid dtype) -> braid.PreMulSum, kept with the group
        _mark_steps(self._comm)

    def getBackendName(self):
        return BACKEND_NAME

    @property
    def group_name(self):
        """The name torch 2.x gave the group (its extended creator's group_id)."""
        name = getattr(self, "_braid_group_name", None)
        return name if name else super().group_name

    @property
    def communicator(self):
        """The braid.Communicator under this group."""
        return self._comm

    def _run(self, what, call, outputs, keep, after=None, fusable=False, stream=None,
             source=None, order=None):
        """call(comm, cudaStream_t or None) -> braidResult_t, run in the group's order."""
        handle = stream.cuda_stream if stream is not None else None
        work = self._comm._launch(what, lambda c: call(c, handle), outputs, keep, True, after,
                                  fusable, stream=handle, order=order)
        return BraidWork(work, outputs, stream, what, source)

    # ---- collectives ----------------------------------------------------------------------

    def _in_place(self, what, tensors, make_call):
        """One tensor, reduced or broadcast in place: make_call(ptr, count, dtype) -> call."""
        t = one(tensors, what)
        return self._run(what, make_call(*ptr(t, f"{what} tensor")), tensors, t,
                         stream=stream_of(what, t))

    def allreduce(self, tensors, opts=None):
        t = one(tensors, "all_reduce")
        if t.is_sparse:
            return self._sparse_allreduce(t, opts)
        op = self._op(opts, t)
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
        op = self._op(opts, one(tensors, "reduce"))
        return self._in_place(
            "reduce", tensors,
            lambda p, n, dt: lambda c, s: _lib.lib.braidReduce(p, p, n, dt, op, root, c, s))

    def _allgather_base(self, output, input, opts=None):
        po, no, dt = ptr(output, "all_gather output")
        pi, ni, _ = ptr(input, "all_gather input")
        self._check_sizes(output, input, no, ni * self.size(), "all_gather_into_tensor")
        return self._run("all_gather",
                         lambda c, s: _lib.lib.braidAllGather(pi, po, ni, dt, c, s),
                         [output], (output, input), stream=stream_of("all_gather", output, input))

    def allgather(self, output_tensors, input_tensors, opts=None):
        outputs = one(output_tensors, "all_gather")
        t = one(input_tensors, "all_gather")
        if len(outputs) != self.size():
            raise ValueError(f"braid: all_gather needs {self.size()} output tensors")
        flat = torch.empty((self.size(), t.numel()), dtype=t.dtype, device=t.device)
        pi, ni, dt = ptr(t, "all_gather input")
        po = flat.data_ptr()

        def scatter_out():
            for o, row in zip(outputs, flat):
                o.copy_(row.view_as(o))

        return self._run("all_gather",
                         lambda c, s: _lib.lib.braidAllGather(pi, po, ni, dt, c, s),
                         output_tensors, (t, flat), after=scatter_out,
                         stream=stream_of("all_gather", t, *outputs))

    def gather(self, output_tensors, input_tensors, opts=None):
        t = one(input_tensors, "gather")
        root = opts.rootRank if opts is not None else 0
        pi, ni, dt = ptr(t, "gather input")
        outputs = one(output_tensors, "gather") if self.rank() == root else []
        flat = torch.empty((self.size(), ni) if outputs else (0,), dtype=t.dtype, device=t.device)
        po = flat.data_ptr() if outputs else 0

        def scatter_out():
            for o, row in zip(outputs, flat):
                o.copy_(row.view_as(o))

        return self._run("gather",
                         lambda c, s: _lib.lib.braidGather(pi, po, ni, dt, root, c, s),
                         output_tensors, (t, flat), after=scatter_out,
                         stream=stream_of("gather", t, *outputs))

    def scatter(self, output_tensors, input_tensors, opts=None):
        t = one(output_tensors, "scatter")
        root = opts.rootRank if opts is not None else 0
        po, no, dt = ptr(t, "scatter output")
        inputs = one(input_tensors, "scatter") if self.rank() == root else []
        flat = (torch.stack([i.reshape(-1) for i in inputs]) if inputs
                else torch.empty(0, dtype=t.dtype, device=t.device))
        pi = flat.data_ptr() if inputs else 0
        return self._run("scatter",
                         lambda c, s: _lib.lib.braidScatter(pi, po, no, dt, root, c, s),
                         output_tensors, (t, flat), stream=stream_of("scatter", t, *inputs))

    def _reduce_scatter_base(self, output, input, opts=None):
        po, no, dt = ptr(output, "reduce_scatter output")
        pi, ni, _ = ptr(input, "reduce_scatter input")
        self._check_sizes(output, input, ni, no * self.size(), "reduce_scatter_tensor")
        op = self._op(opts, input)
        return self._run("reduce_scatter",
                         lambda c, s: _lib.lib.braidReduceScatter(pi, po, no, dt, op, c, s),
                         [output], (output, input),
                         stream=stream_of("reduce_scatter", output, input))

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        output = one(output_tensors, "reduce_scatter")
        inputs = one(input_tensors, "reduce_scatter")
        if len(inputs) != self.size():
            raise ValueError(f"braid: reduce_scatter needs {self.size()} input tensors")
        flat = torch.stack([i.reshape(-1) for i in inputs])
        po, no, dt = ptr(output, "reduce_scatter output")
        self._check_sizes(output, flat, flat.numel(), no * self.size(), "reduce_scatter")
        pi, op = flat.data_ptr(), self._op(opts, flat)
        return self._run("reduce_scatter",
                         lambda c, s: _lib.lib.braidReduceScatter(pi, po, no, dt, op, c, s),
                         output_tensors, (output, flat),
                         stream=stream_of("reduce_scatter", output, flat))

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes,
                      opts=None):
        po, no, dt = ptr(output, "all_to_all output")
        pi, ni, _ = ptr(input, "all_to_all input")
        if not output_split_sizes and not input_split_sizes:
            self._check_sizes(output, input, no, ni, "all_to_all_single")
            if ni % self.size():
                raise ValueError(f"braid: all_to_all_single needs a multiple of {self.size()} "
                                 f"elements, got {ni}")
            count = ni // self.size()
            return self._run("all_to_all",
                             lambda c, s: _lib.lib.braidAlltoAll(pi, po, count, dt, c, s),
                             [output], (output, input),
                             stream=stream_of("all_to_all", output, input))
        send = self._split_counts(input, input_split_sizes)
        recv = self._split_counts(output, output_split_sizes)
        return self._alltoallv(pi, send, po, recv, dt, [output], (output, input),
                               stream=stream_of("all_to_all", output, input))

    def alltoall(self, output_tensors, input_tensors, opts=None):
        send = torch.cat([t.reshape(-1) for t in input_tensors])
        recv = torch.empty(sum(t.numel() for t in output_tensors), dtype=send.dtype,
                           device=send.device)
        counts_out = [t.numel() for t in output_tensors]
        po, _, dt = ptr(recv, "all_to_all output")
        pi, _, _ = ptr(send, "all_to_all input")

        def scatter_out():
            for o, piece in zip(output_tensors, recv.split(counts_out)):
                o.copy_(piece.view_as(o))

        return self._alltoallv(pi, [t.numel() for t in input_tensors], po, counts_out, dt,
                               output_tensors, (send, recv), scatter_out,
                               stream=stream_of("all_to_all", send, recv))

    def _alltoallv(self, pi, send_counts, po, recv_counts, dt, outputs, keep, after=None,
                   stream=None):
        sc = _counts(send_counts, self.size(), "all_to_all input splits")
        rc = _counts(recv_counts, self.size(), "all_to_all output splits")
        sd, rd = _displacements(sc), _displacements(rc)
        return self._run("all_to_allv",
                         lambda c, s: _lib.lib.braidAlltoAllv(pi, sc, sd, po, rc, rd, dt, c, s),
                         outputs, (keep, sc, sd, rc, rd), after, stream=stream)

    def barrier(self, opts=None):
        return self._run("barrier", lambda c, s: _lib.lib.braidBarrier(c, s), [], None)

    def _start_coalescing(self, *args):
        pass  # sends and receives queued until a wait already run as one group

    def _end_coalescing(self, *args):
        """1.13 passes the calls' works and ignores the result; 2.x passes a device and
        waits on the Work returned, which ends after every call queued before it."""
        self._comm._executor.kick()
        return self._run("coalesced calls", lambda c, s: 0, [], None)

    # torch 2.x asks a group for the Backend serving a device, and whether it coalesces;
    # this group serves every device itself, and its batched calls need no coalescing
    # manager (held-back sends and receives run as one Braid group).
    supports_coalescing = False

    def _get_backend(self, device=None):
        return self

    # Newer torch 2.x names for the same calls: its Python ProcessGroup forwards C++ and
    # Python callers (FSDP2's all_gather_single, functional collectives' coalescing) to
    # these names, and without them to the device's Backend, which this group has none of.
    all_gather_single = _allgather_base
    reduce_scatter_single = _reduce_scatter_base
    start_coalescing = _start_coalescing
    end_coalescing = _end_coalescing

    # ---- helpers ----------------------------------------------------------------------------

    def _op(self, opts, t):
        """Braid's reduction code for opts on t; PREMUL_SUM becomes a Braid premul-sum op
        of this group (one per factor and dtype, kept until the group goes)."""
        if op_type(opts) != RED.PREMUL_SUM:
            return op_code(opts, t)
        factor = premul_factor(opts)
        if factor is None:
            raise ValueError(f"braid: PREMUL_SUM: torch {torch.__version__} does not let "
                             "Python read the op's factor; multiply the tensor by it and SUM")
        if isinstance(factor, torch.Tensor):
            factor = factor.item()
        dtype = ptr(t, "PREMUL_SUM tensor")[2]
        key = (float(factor), dtype)
        if key not in self._premul:
            self._premul[key] = self._comm.premul_sum(float(factor),
                                                      dtype=_buffers.DTYPE_NAMES[dtype])
        return self._premul[key].code

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


_step_marks = {}


def _mark_steps(comm):
    """Under BRAID_TRACE, a marker "step N" on the first group's timeline at every optimizer
    step (torch's global optimizer step pre-hook), so the trace shows steps against calls."""
    import torch.optim.optimizer as optimizer_module  # the attribute may name something else
    hook = getattr(optimizer_module, "register_optimizer_step_pre_hook", None)
    if not os.environ.get("BRAID_TRACE") or _step_marks or hook is None:
        return
    _step_marks["comm"] = comm
    _step_marks["step"] = 0

    def mark(optimizer, args, kwargs):
        try:
            _step_marks["comm"].trace_marker(f"step {_step_marks['step']}")
        except BraidError:
            pass  # the group is gone: no timeline to mark
        _step_marks["step"] += 1

    _step_marks["handle"] = hook(mark)


class _NativeMarker:
    """trace_marker over a native group's communicator (the group owns it; a mark after
    the group is gone is an error that _mark_steps ignores)."""

    def __init__(self, pg):
        self._pg = pg

    def trace_marker(self, name):
        handle = self._pg.comm_handle
        if not handle:
            raise BraidError("braid: the group is shut down")
        _lib.check(_lib.lib.braidTraceMarker(handle, name.encode()), handle)


_native, _why_not_native = _torch_native.load()
IMPLEMENTATION = "native" if _native is not None else "python"
# The class of the groups "braid" makes in this process.
ProcessGroupBraid = _native.ProcessGroupBraid if _native is not None else PyProcessGroupBraid
_torch_native.announce(_native, _why_not_native)


class _DeviceBackend(_Backend or object):
    """The group as torch 2.x's Backend for a device. torch's own C++ (functional
    collectives, DTensor's redistributions) asks the group for its device's Backend and
    calls that; this one forwards each call to the group. Holds the group weakly: the
    group holds it."""

    def __init__(self, group):
        super().__init__(group.rank(), group.size())
        self._group = weakref.ref(group)

    def getBackendName(self):
        return BACKEND_NAME


def _forward(target):
    def call(self, *args):
        return getattr(self._group(), target)(*args)
    return call


# torch's Backend names (its Python Backend forwards C++ calls to these) -> the group's.
for _name, _target in {
        "broadcast": "broadcast", "allreduce": "allreduce", "allreduce_sparse": "allreduce",
        "allreduce_coalesced": "allreduce_coalesced", "reduce": "reduce",
        "allgather": "allgather", "all_gather_single": "_allgather_base",
        "allgather_coalesced": "allgather_coalesced",
        "all_gather_single_coalesced": "allgather_into_tensor_coalesced",
        "reduce_scatter_single_coalesced": "reduce_scatter_tensor_coalesced",
        "gather": "gather", "scatter": "scatter",
        "reduce_scatter": "reduce_scatter", "reduce_scatter_single": "_reduce_scatter_base",
        "all_to_all_single": "alltoall_base", "alltoall": "alltoall", "send": "send",
        "recv": "recv", "recv_anysource": "recv_anysource", "barrier": "barrier",
        "start_coalescing": "_start_coalescing", "end_coalescing": "_end_coalescing"}.items():
    setattr(_DeviceBackend, _name, _forward(_target))


def _serve_devices(pg):
    """torch >= 2 with Python Backends (PyBackend): the group registers itself, through a
    _DeviceBackend, as its CPU and CUDA Backend, for torch's C++ callers."""
    if _Backend is None or not hasattr(pg, "_register_backend"):
        return
    try:
        backend = _DeviceBackend(pg)
    except TypeError:  # a torch 2.x whose Backend Python cannot make: the group alone
        return
    pg._braid_device_backend = backend
    pg._set_default_backend(ProcessGroup.BackendType.CUSTOM)
    for device in ("cpu", "cuda"):
        pg._register_backend(torch.device(device), ProcessGroup.BackendType.CUSTOM, backend)


def _create(store, rank, size, timeout):
    """The creator torch calls for init_process_group / new_group. torch 1.13 takes the
    ProcessGroup as the group; torch 2.x takes a ProcessGroup subclass as the whole group
    too, in place of one Backend per device, and serves both devices from it."""
    if _native is not None:
        pg = _native.ProcessGroupBraid(store, rank, size, timeout)
        _mark_steps(_NativeMarker(pg))
        return pg
    pg = PyProcessGroupBraid(store, rank, size, timeout)
    _serve_devices(pg)
    return pg


def _create_extended(opts, backend_options=None):
    """torch 2.x's extended creator. The native backend is a c10d::Backend, which torch
    wraps in its own ProcessGroup (named by torch). The Python group is a ProcessGroup
    subclass that torch returns as the group as is, so it must hold the group's name
    (opts.group_id) itself: destroy_process_group and the name lookups of 2.x read it."""
    if _native is not None:
        pg = _native.ProcessGroupBraid(opts.store, opts.group_rank, opts.group_size,
                                       opts.timeout)
        _mark_steps(_NativeMarker(pg))
        return pg
    pg = PyProcessGroupBraid(opts.store, opts.group_rank, opts.group_size, opts.timeout)
    _serve_devices(pg)
    name = getattr(opts, "group_id", None)
    if name:
        pg._braid_group_name = name
        if hasattr(pg, "_set_group_name"):
            pg._set_group_name(name)  # the group's and its Backends'
    return pg


def register(backend_api=None):
    """Registers "braid" with torch.distributed (once). torch 2.x's register_backend takes
    the devices the backend serves (CPU and CUDA tensors) and the extended creator, whose
    options name the group; 1.13's takes neither. The choice is made here, at run time,
    from the signature of the installed torch's function."""
    backend_api = backend_api or dist.Backend
    if BACKEND_NAME.upper() in backend_api._plugins:
        return
    params = inspect.signature(backend_api.register_backend).parameters
    if "devices" in params and "extended_api" in params:
        backend_api.register_backend(BACKEND_NAME, _create_extended, extended_api=True,
                                     devices=["cpu", "cuda"])
    elif "devices" in params:
        backend_api.register_backend(BACKEND_NAME, _create, devices=["cpu", "cuda"])
    else:
        backend_api.register_backend(BACKEND_NAME, _create)


register()
