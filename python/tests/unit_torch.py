"""The torch backend in one process: registration, errors carrying Braid's text, handles."""

import datetime
import os
import tempfile
import unittest

import braid_test_env  # noqa: F401

try:
    import torch
    import torch.distributed as dist
except ImportError:
    torch = None

if torch is not None:
    import braid
    import braid.torch


@unittest.skipIf(torch is None, "torch is not installed")
class OneRankTorchTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.store = tempfile.mktemp(prefix="braid-torch-unit-")
        dist.init_process_group("braid", init_method="file://" + cls.store, rank=0,
                                world_size=1)
        cls.pg = dist.distributed_c10d._get_default_group()

    @classmethod
    def tearDownClass(cls):
        dist.destroy_process_group()
        if os.path.exists(cls.store):
            os.unlink(cls.store)

    def test_registered_backend_is_braids_process_group(self):
        self.assertEqual(dist.get_backend(), "braid")
        self.assertIsInstance(self.pg, braid.torch.ProcessGroupBraid)
        self.assertEqual((self.pg.communicator.rank, self.pg.communicator.size), (0, 1))

    def test_braid_error_text_reaches_the_caller(self):
        opts = dist.BroadcastOptions()
        opts.rootRank = 5
        work = self.pg.broadcast([torch.ones(3)], opts)
        with self.assertRaises(braid.InvalidArgumentError) as cm:
            work.wait()
        self.assertIn("root 5", str(cm.exception))
        self.assertFalse(work.is_success())

    def test_unsupported_dtype_and_op_are_refused_before_braid(self):
        with self.assertRaisesRegex(TypeError, "int16"):
            dist.all_reduce(torch.ones(2, dtype=torch.int16))
        with self.assertRaisesRegex(ValueError, "not supported"):
            dist.all_reduce(torch.ones(2), op=dist.ReduceOp.BXOR)
        with self.assertRaisesRegex(TypeError, "MAX"):
            dist.all_reduce(torch.ones(2, dtype=torch.bool))

    def test_bool_reduces_as_or_and_and(self):
        t = torch.tensor([True, False])
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        self.assertEqual(t.tolist(), [True, False])

    def test_future_of_an_async_handle_holds_the_tensors(self):
        t = torch.arange(4.0)
        work = dist.all_reduce(t, async_op=True)
        value = work.get_future().wait()
        self.assertTrue(work.is_completed())
        self.assertIs(value[0], t)
        self.assertTrue(torch.equal(t, torch.arange(4.0)))  # one rank: the sum is itself

    def test_ddp_raises_a_failed_all_reduces_error(self):
        # DDP's reducer reads each bucket's future in C++: a failed call must be an
        # error there, not a value only Python's wait() turns into one.
        class FailingAllReduce(braid.torch.ProcessGroupBraid):
            def allreduce(self, tensors, opts=None):
                bad = dist.BroadcastOptions()
                bad.rootRank = 5
                return self.broadcast(tensors, bad)

        pg = FailingAllReduce(dist.HashStore(), 0, 1, datetime.timedelta(seconds=30))
        ddp = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1), process_group=pg)
        with self.assertRaisesRegex(RuntimeError, "root 5"):
            ddp(torch.ones(2, 4)).sum().backward()

    def test_cuda_tensors_run_on_the_current_stream(self):
        if not torch.cuda.is_available():
            self.skipTest("no CUDA device: CUDA tensors are checked where one exists")
        t = torch.arange(4.0, device="cuda")
        work = dist.all_reduce(t, async_op=True)
        work.wait()  # the current stream waits for the call's event
        self.assertEqual(t.tolist(), [0.0, 1.0, 2.0, 3.0])  # one rank: the sum is itself

    def test_tensors_on_other_devices_are_refused_by_name(self):
        with self.assertRaisesRegex(braid.BraidError, "meta"):
            dist.all_reduce(torch.ones(2, device="meta"))


if __name__ == "__main__":
    unittest.main()
