"""Tensor checks shared by the "braid" torch backend's modules (see braid.torch)."""

import torch
import torch.distributed as dist

from . import _buffers
from . import errors

DTYPES = {torch.int8: _buffers.INT8, torch.uint8: _buffers.UINT8, torch.bool: _buffers.UINT8,
          torch.int32: _buffers.INT32, torch.int64: _buffers.INT64,
          torch.float16: _buffers.FLOAT16, torch.float32: _buffers.FLOAT32,
          torch.float64: _buffers.FLOAT64, torch.bfloat16: _buffers.BFLOAT16}

RED = dist.ReduceOp.RedOpType
OPS = {RED.SUM: 0, RED.PRODUCT: 1, RED.MAX: 2, RED.MIN: 3, RED.AVG: 4}
# Complex numbers reduce as pairs of reals for these; the others have no complex meaning.
COMPLEX_OPS = (RED.SUM, RED.AVG)


def check_device(t):
    if t.device.type not in ("cpu", "cuda"):
        raise errors.InvalidUsageError(
            f"braid: {t.device} tensors are not served by this backend (CPU and CUDA "
            "tensors are)", 5)


def stream_of(what, *tensors):
    """torch's current CUDA stream of the call's device, or None when its tensors are on
    the CPU. A call's tensors share one device."""
    devices = {t.device for t in tensors if t is not None and t.numel() > 0}
    if all(d.type == "cpu" for d in devices):
        return None
    if len(devices) != 1:
        raise ValueError(f"braid: {what}: tensors on {sorted(map(str, devices))}; the tensors "
                         "of one call share a device")
    return torch.cuda.current_stream(next(iter(devices)))


def as_real(t):
    """A complex tensor as its real pairs (same memory); other tensors as they are."""
    return torch.view_as_real(t) if t.is_complex() else t


def ptr(t, what):
    """(address, count, braid datatype) of a contiguous tensor (complex: as real pairs)."""
    if not t.is_contiguous():
        raise ValueError(f"braid: {what} must be contiguous")
    check_device(t)
    t = as_real(t)
    code = DTYPES.get(t.dtype)
    if code is None:
        raise TypeError(f"braid: no Braid datatype for {t.dtype} ({what})")
    return t.data_ptr(), t.numel(), code


def op_type(opts):
    if opts is None:
        return RED.SUM
    op = opts.reduceOp if hasattr(opts, "reduceOp") else opts
    return op.op if hasattr(op, "op") else op


def op_code(opts, t):
    """Braid's reduction for opts.reduceOp (SUM without opts) on tensor t."""
    kind = op_type(opts)
    code = OPS.get(kind)
    if code is None:
        raise ValueError(f"braid: reduction {kind} is not supported (SUM, PRODUCT, MIN, "
                         "MAX, AVG, and PREMUL_SUM where torch shows its factor)")
    if t.is_complex() and kind not in COMPLEX_OPS:
        raise TypeError(f"braid: complex tensors reduce with SUM and AVG only, not {kind}")
    # bool travels as uint8: a sum would leave bytes other than 0 and 1.
    if t.dtype == torch.bool and code not in (OPS[RED.MAX], OPS[RED.MIN]):
        raise TypeError("braid: bool tensors reduce with MAX (or) and MIN (and) only")
    return code


def premul_factor(opts):
    """PREMUL_SUM's factor (a float or a one-element tensor), where torch lets Python read
    it (its ReduceOp's __getstate__); None where it does not."""
    op = opts.reduceOp if hasattr(opts, "reduceOp") else opts
    try:
        state = op.__getstate__()
    except (AttributeError, RuntimeError, TypeError):
        return None
    if isinstance(state, tuple) and len(state) >= 2 and state[1] is not None:
        return state[1]
    return None


def one(tensors, what):
    if len(tensors) != 1:
        raise ValueError(f"braid: {what} takes one tensor per process, got {len(tensors)}")
    return tensors[0]
