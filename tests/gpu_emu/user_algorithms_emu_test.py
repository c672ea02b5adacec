#!/usr/bin/env python3
"""Users' algorithms on device memory (docs/algorithms.md), over the emulated GPU.

The three examples of examples/algorithms, written by the Python DSL and loaded by
BRAID_ALGO_FILES, forced by BRAID_ALGO, run by all_reduce_perf_emu and alltoall_perf_emu
with -E 1 (every buffer on an emulated device, one device per rank process): every call
goes through the device path, which lowers the loaded schedule to stream operations as it
lowers the built-ins'. Small send slots (BRAID_CUDA_P2P_SLOT_BYTES) make the larger sizes
run the file's program in passes. Each run must check exact (nccl-tests' #wrong column 0
in and out of place, no out-of-bounds value), CUDA graph replays (-G) and premul sums
included, and INFO must say the device ran the loaded algorithm lowered. A forced
algorithm that does not serve a call (the node-pairs all-to-all serves out of place calls
only; the 2-D all-reduce does not take avg) fails every rank at that call, each naming
why, before anything is enqueued and well before the timeout.

Usage: user_algorithms_emu_test.py BRAIDRUN TOOL_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from nccl_tests_format import parse_output  # noqa: E402

EXAMPLES = os.path.join(HERE, "..", "..", "examples", "algorithms")
BRAIDRUN = TOOL_DIR = None
TIMEOUT_MS = 60000


def run(tool, n, files, algo, sizes=("-b", "8", "-e", "256K", "-f", "8"), extra=()):
    env = dict(os.environ, BRAID_EMU_DEVICES=str(n), BRAID_TIMEOUT_MS=str(TIMEOUT_MS),
               BRAID_ALGO_FILES=files, BRAID_ALGO=algo, BRAID_DEBUG="INFO",
               BRAID_CUDA_P2P_SLOT_BYTES="4096", BRAID_CUDA_WINDOW_BYTES="4194304")
    cmd = [BRAIDRUN, "-n", str(n), "--no-prefix", os.path.join(TOOL_DIR, tool), "-E", "1",
           *sizes, "-n", "2", "-w", "1", "-c", "1", *extra]
    start = time.monotonic()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=240)
    return p.returncode, p.stdout, time.monotonic() - start


class UserAlgorithmsOnDevice(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="issue-47d-emu-")
        cls.files = {}
        for name in ("allreduce_2d", "allreduce_rings", "alltoall_node_pairs"):
            path = os.path.join(cls.dir, name + ".json")
            subprocess.run([sys.executable, os.path.join(EXAMPLES, name + ".py"), "-o", path],
                           check=True, stdout=subprocess.DEVNULL)
            cls.files[name] = path

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def exact_on_device(self, tool, n, name, algo, loaded, extra=()):
        rc, out, _ = run(tool, n, self.files[name], algo, extra=extra)
        self.assertEqual(rc, 0, out[-4000:])
        parsed = parse_output(out)
        self.assertGreater(len(parsed.rows), 3, out[-4000:])
        for row in parsed.rows:
            self.assertEqual(row.out_of_place.wrong, 0, out[-4000:])
            self.assertEqual(row.in_place.wrong, 0, out[-4000:])
        self.assertTrue(parsed.out_of_bounds_ok, out[-4000:])
        self.assertIn(loaded + " (loaded) lowered to stream operations", out, out[-4000:])
        self.assertIn("on device memory", out)
        return out

    def test_2d_allreduce_is_exact_on_device_memory(self):
        for n in (2, 4, 6, 8):
            with self.subTest(ranks=n):
                self.exact_on_device("all_reduce_perf_emu", n, "allreduce_2d",
                                     "allreduce:allreduce_2d", "allreduce_2d")

    def test_graph_replays_and_premul_sums_run_it_exact(self):
        for extra in (["-G", "1"], ["-o", "mulsum"]):
            with self.subTest(extra=extra):
                self.exact_on_device("all_reduce_perf_emu", 4, "allreduce_2d",
                                     "allreduce:allreduce_2d", "allreduce_2d", extra)

    def test_k_rings_allreduce_is_exact_on_device_memory(self):
        for n in (3, 5):
            with self.subTest(ranks=n):
                self.exact_on_device("all_reduce_perf_emu", n, "allreduce_rings",
                                     "allreduce:allreduce_rings2", "allreduce_rings2")

    def test_node_pairs_alltoall_is_exact_on_device_memory(self):
        # It serves out of place calls; the tool's in-place calls fall back to pairwise.
        for n in (4, 8):
            with self.subTest(ranks=n):
                out = self.exact_on_device("alltoall_perf_emu", n, "alltoall_node_pairs",
                                           "alltoall:alltoall_node_pairs,pairwise",
                                           "alltoall_node_pairs")
                self.assertIn("on device memory: pairwise lowered", out)

    def test_a_forced_algorithm_that_does_not_serve_the_call_fails_naming_why(self):
        # Refused on every rank alike before anything is enqueued: no rank's windows are
        # released.
        cases = [("alltoall_perf_emu", "alltoall_node_pairs", "alltoall:alltoall_node_pairs",
                  [], "alltoall_node_pairs: it serves out of place calls only"),
                 ("all_reduce_perf_emu", "allreduce_2d", "allreduce:allreduce_2d",
                  ["-o", "avg"], "allreduce_2d: it does not take avg")]
        for tool, name, algo, extra, why in cases:
            with self.subTest(algorithm=name):
                rc, out, seconds = run(tool, 4, self.files[name], algo, ("-b", "64", "-e", "64"),
                                       extra)
                self.assertNotEqual(rc, 0, out[-4000:])
                self.assertIn(f": invalid argument: BRAID_ALGO='{algo}'", out, out[-4000:])
                # Every rank fails: naming the reason, or, where a peer that failed first
                # has exited before this rank reached the call (rank 0 included), naming
                # that peer; at least one rank names the reason.
                tool_name = tool.replace("_emu", "")
                self.assertTrue(any(l.startswith(f"{tool_name}: rank ") and why in l
                                    for l in out.splitlines()), out[-4000:])
                for r in range(4):
                    lines = [l for l in out.splitlines()
                             if l.startswith(f"{tool_name}: rank {r}: ")]
                    self.assertTrue(lines, out[-4000:])
                    self.assertTrue(why in lines[0] or "is gone" in lines[0], lines[0])
                # The refusal releases no rank's GPU barriers; a rank that saw a peer exit
                # first releases its own (and a third rank may report that), naming the gone
                # peer as the reason.
                for l in out.splitlines():
                    if "released the GPU barriers" in l:
                        self.assertIn("is gone", l)
                self.assertLess(seconds, TIMEOUT_MS / 1000 / 2, out[-4000:])


if __name__ == "__main__":
    BRAIDRUN, TOOL_DIR = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
