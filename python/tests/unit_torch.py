"""The torch backend in one process: registration, errors carrying Braid's text, handles,
and which implementation (native C++ or Python) serves "braid"."""

import datetime
import glob
import os
import shutil
import subprocess
import sys
import sysconfig
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

# torch 2.x's native backend is a c10d::Backend, which torch wraps in its ProcessGroup.
NATIVE_BACKEND = (torch is not None and braid.torch.IMPLEMENTATION == "native" and
                  int(torch.__version__.split(".")[0]) >= 2)


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
        if NATIVE_BACKEND:  # torch 2.x wraps a Backend in its own ProcessGroup
            self.assertIsInstance(self.pg._get_backend(torch.device("cpu")),
                                  braid.torch.ProcessGroupBraid)
        else:
            self.assertIsInstance(self.pg, braid.torch.ProcessGroupBraid)
        self.assertEqual((self.pg.rank(), self.pg.size()), (0, 1))
        if braid.torch.IMPLEMENTATION == "native":
            backend = self.pg._get_backend(torch.device("cpu")) if NATIVE_BACKEND else self.pg
            self.assertNotEqual(backend.comm_handle, 0)
        else:
            self.assertEqual((self.pg.communicator.rank, self.pg.communicator.size), (0, 1))

    def test_a_failed_calls_future_raises_braids_error(self):
        # DDP's comm hooks read get_future(): the error must be there, with Braid's text.
        opts = dist.BroadcastOptions()
        opts.rootRank = 5
        fut = self.pg.broadcast([torch.ones(3)], opts).get_future()
        # The native group's future holds Braid's error itself; the Python group's raises
        # it from a then() callback, which torch wraps in a RuntimeError.
        want = braid.InvalidArgumentError if braid.torch.IMPLEMENTATION == "native" else \
            RuntimeError
        with self.assertRaises(want) as cm:
            fut.wait()
        self.assertIn("root 5", str(cm.exception))

    def test_premul_sum_scales_before_summing(self):
        make = getattr(dist, "_make_nccl_premul_sum", None)
        if make is None or braid.torch.IMPLEMENTATION != "native":
            self.skipTest("the native backend reads PREMUL_SUM's factor in C++")
        t = torch.tensor([1.0, -2.0, 3.5])
        dist.all_reduce(t, op=make(4.0))
        self.assertEqual(t.tolist(), [4.0, -8.0, 14.0])  # one rank: the factor times itself

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
        class FailingAllReduce(braid.torch.PyProcessGroupBraid):
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
        if NATIVE_BACKEND:
            self.skipTest("torch 2.x's dispatcher serves meta tensors itself (its meta "
                          "kernels, for tracing): the backend never sees them")
        if braid.torch.IMPLEMENTATION == "native":
            # torch routes a C++ group's calls through its dispatcher, which has no meta
            # kernel for them: torch refuses the call before the backend sees it.
            with self.assertRaisesRegex((braid.BraidError, NotImplementedError), "[Mm]eta"):
                dist.all_reduce(torch.ones(2, device="meta"))
            return
        with self.assertRaisesRegex(braid.BraidError, "meta"):
            dist.all_reduce(torch.ones(2, device="meta"))


@unittest.skipIf(torch is None, "torch is not installed")
class RegistrationShapeTest(unittest.TestCase):
    """register() follows the installed torch's register_backend: 2.x's takes the devices
    the backend serves, 1.13's does not; and the creator's group is what both take."""

    def api(self, register_backend, plugins=None):
        return type("BackendApi", (), {"_plugins": plugins or {},
                                       "register_backend": staticmethod(register_backend)})

    def test_torch_2_registration_names_cpu_and_cuda(self):
        calls = []

        def register_backend(name, func, extended_api=False, devices=None):
            calls.append((name, func, extended_api, devices))

        braid.torch.register(self.api(register_backend))
        self.assertEqual(calls, [("braid", braid.torch._create_extended, True, ["cpu", "cuda"])])

    def test_torch_2_extended_creator_names_the_group(self):
        # torch 2.x returns a ProcessGroup subclass as the group itself, so the group's
        # name (destroy_process_group reads it) must come from the creator's options.
        names = []

        class Options:
            store = dist.HashStore()
            group_rank, group_size = 0, 1
            timeout = datetime.timedelta(seconds=30)
            group_id = "7"

        def set_name(pg, name):
            names.append(name)

        braid.torch.PyProcessGroupBraid._set_group_name = set_name
        native, braid.torch._native = braid.torch._native, None  # the Python group's case
        try:
            pg = braid.torch._create_extended(Options(), None)
            pg.communicator.close()
        finally:
            braid.torch._native = native
            del braid.torch.PyProcessGroupBraid._set_group_name
        self.assertEqual(names, ["7"])
        self.assertEqual(pg.group_name, "7")

    def test_torch_1_13_registration_has_no_devices(self):
        calls = []
        braid.torch.register(self.api(lambda name, func: calls.append((name, func))))
        self.assertEqual(calls, [("braid", braid.torch._create)])

    def test_a_registered_backend_is_left_alone(self):
        def register_backend(name, func):
            raise AssertionError("registered twice")

        braid.torch.register(self.api(register_backend, {"BRAID": object()}))

    def test_creator_makes_a_whole_process_group(self):
        # torch 2.x uses a ProcessGroup subclass from the creator as the group itself,
        # serving every device, in place of per-device Backend objects.
        store = dist.HashStore()
        pg = braid.torch._create(store, 0, 1, datetime.timedelta(seconds=30))
        try:
            c10d = torch._C._distributed_c10d
            self.assertIsInstance(pg, c10d.Backend if NATIVE_BACKEND else c10d.ProcessGroup)
            self.assertEqual((pg.rank(), pg.size(), pg.getBackendName()), (0, 1, "braid"))
            work = pg.allreduce([torch.ones(2)])
            self.assertIsInstance(work, torch._C._distributed_c10d.Work)
            work.wait()
        finally:
            if braid.torch.IMPLEMENTATION == "native":
                pg.shutdown()
            else:
                pg.communicator.close()


# A one-rank all_reduce in a fresh interpreter; prints the implementation that served it.
_PROBE = """
import tempfile, torch, torch.distributed as dist
import braid.torch
dist.init_process_group("braid", init_method="file://" + tempfile.mktemp(), rank=0,
                        world_size=1)
t = torch.arange(3.0)
dist.all_reduce(t)
assert t.tolist() == [0.0, 1.0, 2.0], t
dist.destroy_process_group()
print(braid.torch.IMPLEMENTATION, type(braid.torch.ProcessGroupBraid).__name__,
      braid.torch.ProcessGroupBraid.__module__)
"""


@unittest.skipIf(torch is None, "torch is not installed")
class ImplementationChoiceTest(unittest.TestCase):
    """The native backend loads where the build made it for this torch; the Python group
    serves "braid" where it is missing or broken, and when BRAID_TORCH_IMPL=python."""

    package = os.path.dirname(braid.__file__) if torch is not None else None

    def native_files(self, package=None):
        name = braid._torch_native.module_name()
        return glob.glob(os.path.join(package or self.package, name + ".*so"))

    def probe(self, impl=None, package_root=None, check=True):
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", BRAID_DEBUG="INFO",
                   PYTHONPATH=package_root or os.path.dirname(self.package))
        env.pop("BRAID_TORCH_IMPL", None)
        if impl is not None:
            env["BRAID_TORCH_IMPL"] = impl
        # cwd: python -c imports from its working directory first (ctest's is build/python)
        return subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True,
                              text=True, timeout=120, check=check,
                              cwd=package_root or tempfile.gettempdir())

    def test_module_names_carry_torchs_major_and_minor(self):
        self.assertEqual(braid._torch_native.module_name("1.13.0a0"), "_pg_torch1_13")
        self.assertEqual(braid._torch_native.module_name("2.15.0+cu132"), "_pg_torch2_15")

    def test_native_backend_loads_where_it_was_built(self):
        if not self.native_files():
            self.skipTest(f"no native backend built for torch {torch.__version__} here")
        out = self.probe()
        self.assertTrue(out.stdout.startswith("native "), out.stdout + out.stderr)
        self.assertIn("braid INFO torch backend: native ProcessGroupBraid", out.stderr)
        if os.environ.get("BRAID_TORCH_IMPL", "auto") != "python":
            self.assertEqual(braid.torch.IMPLEMENTATION, "native")

    def test_python_group_on_request(self):
        out = self.probe("python")
        self.assertTrue(out.stdout.startswith("python "), out.stdout + out.stderr)
        self.assertIn("Python ProcessGroupBraid (BRAID_TORCH_IMPL=python)", out.stderr)

    def test_python_group_when_the_native_module_is_broken(self):
        root = tempfile.mkdtemp(prefix="braid-torch-fallback-")
        try:
            copy = os.path.join(root, "braid")
            shutil.copytree(self.package, copy, symlinks=True,
                            ignore=shutil.ignore_patterns("_pg_torch*", "__pycache__"))
            broken = os.path.join(copy, braid._torch_native.module_name() +
                                  sysconfig.get_config_var("EXT_SUFFIX"))
            with open(broken, "w") as f:
                f.write("not an ELF file")
            out = self.probe(package_root=root)
            self.assertTrue(out.stdout.startswith("python "), out.stdout + out.stderr)
            self.assertIn("did not load", out.stderr)
            out = self.probe("native", package_root=root, check=False)
            self.assertNotEqual(out.returncode, 0)
            self.assertIn("BRAID_TORCH_IMPL=native", out.stderr)
        finally:
            shutil.rmtree(root)


if __name__ == "__main__":
    unittest.main()
