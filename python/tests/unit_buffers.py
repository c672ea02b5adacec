"""Buffers from NumPy, the buffer protocol and DLPack: address, count, datatype, checks."""

import array
import unittest

import braid_test_env  # noqa: F401  (puts the package under test on sys.path)
import numpy as np

from braid import _buffers as b


class NumpyTest(unittest.TestCase):
    def test_every_supported_dtype_maps_to_braids_enum(self):
        # Values from braid.h (NCCL's numbering).
        expected = {np.int8: 0, np.uint8: 1, np.int32: 2, np.uint32: 3, np.int64: 4,
                    np.uint64: 5, np.float16: 6, np.float32: 7, np.float64: 8, np.bool_: 1}
        for dt, code in expected.items():
            buf = b.as_buffer(np.zeros(3, dt))
            self.assertEqual((buf.dtype, buf.count), (code, 3), dt)

    def test_address_is_the_arrays_own_memory(self):
        a = np.arange(10, dtype=np.float32)
        self.assertEqual(b.as_buffer(a).address, a.ctypes.data)
        self.assertEqual(b.as_buffer(a[4:]).address, a.ctypes.data + 16)

    def test_unsupported_dtype_is_a_type_error_naming_it(self):
        with self.assertRaisesRegex(TypeError, "complex128"):
            b.as_buffer(np.zeros(2, np.complex128))
        with self.assertRaisesRegex(TypeError, "int16"):
            b.as_buffer(np.zeros(2, np.int16))

    def test_non_contiguous_and_read_only_outputs_are_refused(self):
        with self.assertRaisesRegex(ValueError, "contiguous"):
            b.as_buffer(np.zeros((4, 4))[:, 1])
        ro = np.zeros(4)
        ro.flags.writeable = False
        b.as_buffer(ro)  # fine as an input
        with self.assertRaisesRegex(ValueError, "read-only"):
            b.as_buffer(ro, writable=True)

    def test_byte_swapped_arrays_are_refused(self):
        with self.assertRaises(TypeError):
            b.as_buffer(np.zeros(2, ">f4"))


class BufferProtocolTest(unittest.TestCase):
    def test_array_module_and_bytearray(self):
        a = array.array("i", [1, 2, 3])
        buf = b.as_buffer(a, writable=True)
        self.assertEqual((buf.dtype, buf.count), (b.INT32, 3))
        self.assertEqual(buf.address, a.buffer_info()[0])
        self.assertEqual(b.as_buffer(bytearray(5)).dtype, b.UINT8)

    def test_bytes_are_an_input_but_not_an_output(self):
        self.assertEqual(b.as_buffer(b"abcd").count, 4)
        with self.assertRaisesRegex(ValueError, "read-only"):
            b.as_buffer(b"abcd", writable=True)

    def test_objects_without_memory_are_a_type_error(self):
        with self.assertRaisesRegex(TypeError, "buffer protocol"):
            b.as_buffer([1, 2, 3])


class CudaArrayInterfaceTest(unittest.TestCase):
    """__cuda_array_interface__ (CuPy, Numba, PyTorch CUDA tensors): read, never touched."""

    @staticmethod
    def described(shape, typestr, address=0x7f0000001000, readonly=False, strides=None):
        class Described:
            __cuda_array_interface__ = {"shape": shape, "typestr": typestr,
                                        "data": (address, readonly), "strides": strides,
                                        "version": 3}
        return Described()

    def test_address_count_datatype_and_device(self):
        buf = b.as_buffer(self.described((2, 3), "<f4"))
        self.assertEqual((buf.address, buf.count, buf.dtype, buf.device, buf.shape),
                         (0x7f0000001000, 6, b.FLOAT32, b.DEVICE_CUDA, (2, 3)))
        self.assertEqual(b.as_buffer(self.described((5,), "|b1")).dtype, b.UINT8)
        # C-contiguous strides (in bytes) are fine; others, and read-only outputs, are not.
        b.as_buffer(self.described((2, 3), "<i8", strides=(24, 8)))
        with self.assertRaisesRegex(ValueError, "contiguous"):
            b.as_buffer(self.described((2, 3), "<i8", strides=(8, 16)))
        with self.assertRaisesRegex(ValueError, "read-only"):
            b.as_buffer(self.described((4,), "<f8", readonly=True), writable=True)
        with self.assertRaisesRegex(TypeError, "int16"):
            b.as_buffer(self.described((4,), "<i2"))

    def test_an_interface_that_raises_falls_back_to_dlpack(self):
        a = np.arange(4, dtype=np.float32)

        class Bfloat16Like:  # PyTorch raises for what the interface cannot describe
            @property
            def __cuda_array_interface__(self):
                raise TypeError("not expressible")

            def __dlpack__(self, stream=None):
                return a.__dlpack__()

        buf = b.as_buffer(Bfloat16Like())
        self.assertEqual((buf.address, buf.device), (a.ctypes.data, b.DEVICE_CPU))

    def test_device_outputs_are_not_allocated(self):
        with self.assertRaisesRegex(ValueError, "out="):
            b.empty_like(b.as_buffer(self.described((3,), "<f4")), 6, (2, 3))


class DlpackTest(unittest.TestCase):
    def test_numpy_through_dlpack_gives_the_same_memory(self):
        a = np.arange(6, dtype=np.int64).reshape(2, 3)

        class OnlyDlpack:
            def __dlpack__(self, stream=None):
                return a.__dlpack__()

        buf = b.as_buffer(OnlyDlpack())
        self.assertEqual((buf.address, buf.count, buf.dtype, buf.device, buf.shape),
                         (a.ctypes.data, 6, b.INT64, b.DEVICE_CPU, (2, 3)))

    def test_torch_tensors_including_bfloat16(self):
        try:
            import torch
        except ImportError:
            self.skipTest("torch is not installed")
        t = torch.arange(8, dtype=torch.bfloat16)
        buf = b.as_buffer(t)
        self.assertEqual((buf.address, buf.count, buf.dtype), (t.data_ptr(), 8, b.BFLOAT16))
        self.assertEqual(b.as_buffer(t[2:]).address, t.data_ptr() + 4)
        with self.assertRaisesRegex(ValueError, "contiguous"):
            b.as_buffer(torch.zeros(4, 4).t())

    def test_allocation_needs_a_host_buffer_numpy_can_hold(self):
        buf = b.as_buffer(np.zeros(3, np.float32))
        self.assertEqual(b.empty_like(buf, 6, (2, 3)).dtype, np.float32)
        buf.dtype = b.BFLOAT16
        with self.assertRaisesRegex(ValueError, "bfloat16"):
            b.empty_like(buf, 6, (2, 3))


if __name__ == "__main__":
    unittest.main()
