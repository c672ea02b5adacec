"""Turns user objects into (address, count, datatype) for the C API.

Accepted: NumPy arrays, any object with ``__dlpack__`` (PyTorch, JAX, CuPy,
NumPy >= 1.22 ...), any object with ``__cuda_array_interface__`` (CuPy, Numba,
PyTorch CUDA tensors), and any object with the buffer protocol (bytearray,
array.array, memoryview ...). Every buffer must be contiguous; an output
buffer must be writable. The returned Buffer keeps whatever owns the memory
alive until the operation using it has finished (for device memory on a CUDA
stream: until the call is enqueued; the caller keeps the memory until the
stream has run it, as with NCCL).
"""

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np

# braidDataType_t values.
INT8, UINT8, INT32, UINT32, INT64, UINT64, FLOAT16, FLOAT32, FLOAT64, BFLOAT16 = range(10)
DTYPE_NAMES = ["int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32",
               "float64", "bfloat16"]
ITEMSIZE = [1, 1, 4, 4, 8, 8, 2, 4, 8, 2]

# (numpy kind, itemsize) -> braidDataType_t. bool travels as uint8.
_NUMPY = {("i", 1): INT8, ("u", 1): UINT8, ("i", 4): INT32, ("u", 4): UINT32,
          ("i", 8): INT64, ("u", 8): UINT64, ("f", 2): FLOAT16, ("f", 4): FLOAT32,
          ("f", 8): FLOAT64, ("b", 1): UINT8}

# DLPack: DLDataTypeCode (int 0, uint 1, float 2, bfloat 4, bool 6) and bits.
_DLPACK = {(0, 8): INT8, (1, 8): UINT8, (0, 32): INT32, (1, 32): UINT32, (0, 64): INT64,
           (1, 64): UINT64, (2, 16): FLOAT16, (2, 32): FLOAT32, (2, 64): FLOAT64,
           (4, 16): BFLOAT16, (6, 8): UINT8}

# DLPack device types (kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged).
DEVICE_CPU, DEVICE_CUDA, DEVICE_CUDA_HOST, DEVICE_CUDA_MANAGED = 1, 2, 3, 13
# Memory a CUDA stream orders (Braid detects it per call): device and managed memory.
DEVICE_KINDS = (DEVICE_CUDA, DEVICE_CUDA_MANAGED)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


@dataclass
class Buffer:
    """Memory a collective reads or writes.

    ``owner`` is held until the operation completes: the array, or the DLPack
    capsule, whose destructor releases the producer's memory.
    """

    address: int
    count: int
    dtype: int
    device: int
    owner: Any
    shape: tuple

    @property
    def nbytes(self):
        return self.count * ITEMSIZE[self.dtype]


def numpy_dtype_code(dt):
    """braidDataType_t for a NumPy dtype; TypeError when Braid has no such type."""
    dt = np.dtype(dt)
    code = _NUMPY.get((dt.kind, dt.itemsize))
    if code is None or not dt.isnative:
        raise TypeError(f"braid: no Braid datatype for NumPy dtype {dt} (supported: "
                        + ", ".join(DTYPE_NAMES[:9]) + ", bool; bfloat16 through DLPack)")
    return code


def _from_numpy(arr, writable, what):
    if not arr.flags.c_contiguous:
        raise ValueError(f"braid: {what} must be C-contiguous (use np.ascontiguousarray)")
    if writable and not arr.flags.writeable:
        raise ValueError(f"braid: {what} is read-only")
    return Buffer(arr.ctypes.data, arr.size, numpy_dtype_code(arr.dtype), DEVICE_CPU, arr,
                  arr.shape)


def _compact(shape, strides, ndim):
    if not strides:
        return True
    expected = 1
    for i in reversed(range(ndim)):
        if shape[i] != 1 and strides[i] != expected:
            return False
        expected *= shape[i]
    return True


def _from_dlpack(obj, what):
    capsule = obj.__dlpack__()
    tensor = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    dt = tensor.dtype
    code = _DLPACK.get((dt.code, dt.bits))
    if code is None or dt.lanes != 1:
        raise TypeError(f"braid: no Braid datatype for DLPack type code {dt.code}, "
                        f"{dt.bits} bits, {dt.lanes} lanes ({what})")
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    if not _compact(shape, tensor.strides, tensor.ndim):
        raise ValueError(f"braid: {what} must be contiguous")
    count = 1
    for n in shape:
        count *= n
    # The capsule is not consumed: its destructor frees the producer's
    # DLManagedTensor once Braid drops the Buffer.
    return Buffer((tensor.data or 0) + tensor.byte_offset, count, code,
                  tensor.device.device_type, (obj, capsule), shape)


def _cuda_array_interface(obj):
    """obj's __cuda_array_interface__, or None: absent, or not expressible (PyTorch raises
    for bfloat16 and for tensors that require grad; DLPack then says what it can)."""
    try:
        return obj.__cuda_array_interface__
    except (AttributeError, TypeError, RuntimeError):
        return None


def _from_cuda_array_interface(obj, cai, writable, what):
    shape = tuple(int(n) for n in cai["shape"])
    dt = np.dtype(cai["typestr"])
    code = numpy_dtype_code(dt)
    strides = cai.get("strides")
    if strides is not None and not _compact(shape, [s // dt.itemsize for s in strides],
                                            len(shape)):
        raise ValueError(f"braid: {what} must be C-contiguous")
    address, readonly = cai["data"]
    if writable and readonly:
        raise ValueError(f"braid: {what} is read-only")
    count = 1
    for n in shape:
        count *= n
    return Buffer(int(address or 0), count, code, DEVICE_CUDA, obj, shape)


def as_buffer(obj, writable=False, what="buffer"):
    """A Buffer over obj's memory, without copying.

    writable: the collective writes into obj (recv buffers). DLPack objects are
    taken as writable: the protocol carries no read-only flag.
    """
    if isinstance(obj, np.ndarray):
        return _from_numpy(obj, writable, what)
    cai = _cuda_array_interface(obj)
    if cai is not None:  # before DLPack, which may synchronise a stream to export
        return _from_cuda_array_interface(obj, cai, writable, what)
    if hasattr(obj, "__dlpack__"):
        return _from_dlpack(obj, what)
    try:
        view = memoryview(obj)
    except TypeError:
        raise TypeError(f"braid: {what} ({type(obj).__name__}) has neither the buffer protocol "
                        "nor __dlpack__") from None
    if writable and view.readonly:
        raise ValueError(f"braid: {what} is read-only")
    arr = np.asarray(view)
    buf = _from_numpy(arr, False, what)
    buf.owner = (view, arr)
    return buf


def empty_like(buf, count, shape):
    """A new host NumPy array of buf's datatype; for outputs the caller did not give."""
    if buf.device != DEVICE_CPU:
        raise ValueError("braid: pass out= for device buffers (only host outputs are allocated)")
    if buf.dtype == BFLOAT16:
        raise ValueError("braid: pass out= for bfloat16 (NumPy has no bfloat16 to allocate)")
    arr = np.empty(shape, dtype=DTYPE_NAMES[buf.dtype])
    assert arr.size == count
    return arr
