"""PyTorch's own distributed suite on one backend, one case at a time, with its outcomes.

    torch_suite.py --backend braid --world-size 2 --out results/braid.json [--cases FILE]
    torch_suite.py --backend braid --as-gloo ...    # the cases gated to gloo, run on braid

The cases are DistributedTest._DistTestBase's, driven as PyTorch's
test_distributed_spawn.py drives them (TestDistBackend, one spawned process per rank,
init_process_group with the suite's own file:// store); "braid" joins the suite's
plugin backends. Every case is bounded by --timeout seconds (the suite's own
per-case timeout, which kills the ranks), so a hang is a failed case, not a stuck run.

--as-gloo imports the suite as for gloo, so that the cases it gates by the name
"gloo" (timeouts, coalesced collectives, get_future, object collectives...) are
there, and makes every process group of the case a braid one: the same bodies,
run against braid.

The spawned ranks import this file again; what they need comes from the
environment (TORCH_SUITE_*), set by the parent before it imports the suite.
"""

import argparse
import json
import re
import shutil
import os
import sys
import tempfile
import time
import unittest

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.environ.get("BRAID_PYTHONPATH", os.path.join(_HERE, "..")))

_BACKEND = os.environ.get("TORCH_SUITE_BACKEND")
_AS_GLOO = os.environ.get("TORCH_SUITE_AS_GLOO") == "1"


def _prepare_suite():
    """Imports the suite for _BACKEND; returns the test class (ranks and parent alike)."""
    os.environ["BACKEND"] = "gloo" if _AS_GLOO else _BACKEND
    import torch
    import torch.distributed as dist
    from torch.testing._internal import common_distributed

    if _BACKEND == "braid":
        import braid.torch  # noqa: F401  registers the backend
        features = common_distributed.DistTestCases.backend_feature
        for feature in ["plugin"] + os.environ.get("TORCH_SUITE_FEATURES", "").split(","):
            if feature:
                features[feature].add("braid")
    # The suite lengthens a few cases' timeouts past ours; ours bounds them all.
    common_distributed.TIMEOUT_OVERRIDE.clear()
    if _AS_GLOO:
        _make_groups_braid(dist)
    from torch.testing._internal.distributed import distributed_test as suite

    class TestDistBackendWithSpawn(suite.TestDistBackend, suite.DistributedTest._DistTestBase):
        def setUp(self):
            super().setUp()
            if os.environ.get("TORCH_SUITE_START") == "fork":
                self._start_processes(torch.multiprocessing.get_context("fork").Process)
            else:
                self._spawn_processes()
            torch.backends.cudnn.flags(enabled=True, allow_tf32=False).__enter__()

    TestDistBackendWithSpawn.__module__ = __name__
    TestDistBackendWithSpawn.__qualname__ = "TestDistBackendWithSpawn"
    return TestDistBackendWithSpawn


def _make_groups_braid(dist):
    """Every process group the case makes (default or new) is a braid one."""
    init, new = dist.init_process_group, dist.new_group

    def as_braid(backend):
        return "braid" if backend is None or str(backend).lower() == "gloo" else backend

    def init_process_group(backend=None, *args, **kwargs):
        return init(as_braid(backend), *args, **kwargs)

    def new_group(ranks=None, timeout=None, backend=None, *args, **kwargs):
        if timeout is None:
            timeout = dist.default_pg_timeout
        return new(ranks, timeout, as_braid(backend), *args, **kwargs)

    dist.init_process_group, dist.new_group = init_process_group, new_group
    dist.distributed_c10d.new_group = new_group


if _BACKEND:
    TestDistBackendWithSpawn = _prepare_suite()


class _Recorder(unittest.TextTestResult):
    """Keeps each case's outcome, its time and the last line of its error."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.cases = {}
        self._start = 0.0

    def startTest(self, test):
        self._start = time.monotonic()
        super().startTest(test)

    def _note(self, test, outcome, detail=""):
        name = test.id().rsplit(".", 1)[-1]
        self.cases[name] = {"outcome": outcome, "seconds": round(time.monotonic() - self._start, 2),
                            "detail": detail}

    def addSuccess(self, test):
        super().addSuccess(test)
        self._note(test, "passed")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._note(test, "skipped", str(reason)[:200])

    def addError(self, test, err):
        super().addError(test, err)
        self._note(test, _failure_kind(err), _last_line(err))

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._note(test, _failure_kind(err), _last_line(err))


def _failure_kind(err):
    return "timeout" if "timed out" in str(err[1]) else "failed"


_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt))\b")


def _last_line(err):
    """The rank's own exception line (the suite wraps it in 'Process N exited with...',
    and torch adds C++ frames after it)."""
    lines = [ln.strip() for ln in str(err[1]).splitlines() if ln.strip()]
    found = [ln for ln in lines if _EXCEPTION_LINE.match(ln)]
    return (found[-1] if found else lines[-1] if lines else repr(err[1]))[:300]


def _case_names(cls, wanted):
    names = sorted(n for n in dir(cls) if n.startswith("test_"))
    if wanted is None:
        return names
    unknown = sorted(set(wanted) - set(names))
    if unknown:
        sys.exit(f"torch_suite: no such case: {', '.join(unknown)}")
    return [n for n in names if n in wanted]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", required=True, choices=["braid", "gloo"])
    ap.add_argument("--as-gloo", action="store_true",
                    help="import the suite as for gloo, run every group on braid")
    ap.add_argument("--features", default="ddp,subgroup",
                    help="the suite's backend_feature sets braid joins (plugin always)")
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--start", choices=["spawn", "fork"], default="spawn",
                    help="how the ranks start: spawn (as test_distributed_spawn.py) or fork")
    ap.add_argument("--timeout", type=int, default=60, help="seconds per case")
    ap.add_argument("--cases", help="file of case names, one a line (default: every case)")
    ap.add_argument("--shard", default="0/1", help="I/N: every Nth case from the Ith")
    ap.add_argument("--list", action="store_true", help="print the case names and exit")
    ap.add_argument("--out", help="JSON file of {case: {outcome, seconds, detail}}")
    args = ap.parse_args()
    if args.as_gloo and args.backend != "braid":
        ap.error("--as-gloo runs the gloo-gated cases on braid: use it with --backend braid")

    # One directory for the run, named before the suite is imported: the suite reads
    # INIT_METHOD at import (file://, as PyTorch's run_test.py gives it, so that the case
    # that re-creates the default group with a short timeout runs too).
    tmp = os.environ.get("TORCH_SUITE_TMP") or tempfile.mkdtemp(prefix="torch-suite-")
    env = {"TORCH_SUITE_TMP": tmp, "TEMP_DIR": tmp,
           "INIT_METHOD": f"file://{tmp}/shared_init_file",
           "TORCH_SUITE_BACKEND": args.backend, "TORCH_SUITE_AS_GLOO": "1" if args.as_gloo else "0",
           "TORCH_SUITE_FEATURES": args.features,
           "WORLD_SIZE": str(args.world_size), "TORCH_SUITE_START": args.start,
           "DISTRIBUTED_TESTS_DEFAULT_TIMEOUT": str(args.timeout)}
    if any(os.environ.get(k) != v for k, v in env.items()):
        # The suite reads these when it is imported, here and in every spawned rank.
        os.environ.update(env)
        os.execv(sys.executable, [sys.executable, os.path.abspath(__file__)] + sys.argv[1:])

    wanted = None
    if args.cases:
        with open(args.cases) as f:
            wanted = [ln.split("#")[0].strip() for ln in f if ln.split("#")[0].strip()]
    names = _case_names(TestDistBackendWithSpawn, wanted)
    index, count = (int(x) for x in args.shard.split("/"))
    names = names[index::count]
    if args.list:
        shutil.rmtree(tmp, ignore_errors=True)
        print("\n".join(names))
        return 0

    try:
        suite = unittest.TestSuite(TestDistBackendWithSpawn(n) for n in names)
        runner = unittest.TextTestRunner(resultclass=_Recorder, verbosity=2, stream=sys.stdout)
        result = runner.run(suite)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"backend": args.backend, "as_gloo": args.as_gloo,
                       "world_size": args.world_size, "cases": result.cases}, f, indent=1,
                      sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
