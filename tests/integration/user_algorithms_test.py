"""Users' algorithms end to end (docs/algorithms.md): the examples, written by the
Python DSL, and an MSCCL XML ring all-reduce, proven by braid-algo check, loaded by
BRAID_ALGO_FILES and run by the perf tools as real ranks over shm and over sockets with
their results checked (nccl-tests' #wrong column and out-of-bounds count), avg included;
a window program run on the shared windows over shm; broken files (a dropped step, a
dropped window wait) refused at init, before their first call, naming the step.

    python3 user_algorithms_test.py BUILD_DIR
"""

import os
import subprocess
import sys
import tempfile
import unittest

from nccl_tests_format import parse_output

BUILD = sys.argv.pop(1) if len(sys.argv) > 1 else "build"
HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "examples", "algorithms")
BRAIDRUN = os.path.join(BUILD, "tools", "braidrun", "braidrun")
BRAID_ALGO_TOOL = os.path.join(BUILD, "tools", "braid_algo", "braid-algo")


def run(cmd, env=None, timeout=180):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout, env=env)
    return p.returncode, p.stdout


class UserAlgorithms(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="issue-47-algo-")
        cls.files = {}
        for name in ("allreduce_2d", "allreduce_rings", "alltoall_node_pairs",
                     "allgather_windows"):
            path = os.path.join(cls.dir, name + ".json")
            rc, out = run([sys.executable, os.path.join(EXAMPLES, name + ".py"), "-o", path])
            assert rc == 0, out
            cls.files[name] = path

    def perf(self, tool, n, transports, files, algo, extra=(), env_extra=None):
        env = dict(os.environ, BRAID_ALGO_FILES=files, BRAID_ALGO=algo,
                   BRAID_TRANSPORTS=transports, BRAID_DEBUG="INFO", **(env_extra or {}))
        rc, out = run([BRAIDRUN, "-n", str(n), "--no-prefix", "--timeout", "120",
                       os.path.join(BUILD, "perf", "coll", tool), "-b", "4", "-e", "300K",
                       "-f", "7", "-n", "2", "-w", "1", "-c", "1"] + list(extra), env=env)
        self.assertEqual(rc, 0, out)
        parsed = parse_output(out)
        self.assertGreater(len(parsed.rows), 3, out)
        for row in parsed.rows:
            self.assertEqual(row.out_of_place.wrong, 0, out)
            self.assertEqual(row.in_place.wrong, 0, out)
        self.assertTrue(parsed.out_of_bounds_ok, out)
        return out

    def init_fails(self, tool, n, env):
        """Runs one small call of `tool` on n ranks, which must fail: its output. 256 B, so
        that a gathering collective's block (16 B multiples, as nccl-tests) is not empty up
        to 16 ranks: a call of count 0 returns before any algorithm is chosen."""
        rc, out = run([BRAIDRUN, "-n", str(n), "--no-prefix", "--timeout", "60",
                       os.path.join(BUILD, "perf", "coll", tool), "-b", "256", "-e", "256",
                       "-n", "1", "-w", "0"], env=dict(os.environ, **env))
        self.assertNotEqual(rc, 0, out)
        return out

    def test_check_proves_every_example_for_its_rank_counts(self):
        for name, path in self.files.items():
            rc, out = run([BRAID_ALGO_TOOL, "check", path])
            self.assertEqual(rc, 0, out)
            self.assertIn("ranks: proven", out)
            self.assertNotIn("refused", out)

    def test_2d_allreduce_runs_exact_over_shm_and_socket(self):
        algo = "allreduce:allreduce_2d"
        out = self.perf("all_reduce_perf", 4, "shm", self.files["allreduce_2d"], algo)
        self.assertIn("allreduce_2d, predicted", out)  # INFO names it
        self.perf("all_reduce_perf", 6, "socket", self.files["allreduce_2d"], algo)

    def test_k_rings_allreduce_runs_exact_over_shm_and_socket(self):
        algo = "allreduce:allreduce_rings2"
        self.perf("all_reduce_perf", 3, "shm", self.files["allreduce_rings"], algo,
                  ["-o", "max"])
        self.perf("all_reduce_perf", 2, "socket", self.files["allreduce_rings"], algo)

    def test_k_rings_allreduce_averages_exact(self):
        # The file lists avg and marks each chunk's last reduction final.
        out = self.perf("all_reduce_perf", 3, "shm", self.files["allreduce_rings"],
                        "allreduce:allreduce_rings2", ["-o", "avg"])
        self.assertIn("allreduce_rings2, predicted", out)

    def test_window_allgather_runs_exact_on_the_shared_windows(self):
        files = self.files["allgather_windows"]
        algo = "allgather:allgather_windows"
        out = self.perf("all_gather_perf", 2, "shm", files, algo)
        self.assertIn("allgather_windows, predicted", out)
        # Windows of 4 KiB: the larger calls run the program in passes.
        self.perf("all_gather_perf", 4, "shm", files, algo,
                  env_extra={"BRAID_SHM_WINDOW_BYTES": "4096"})
        # Over sockets there are no windows: BRAID_ALGO says why it cannot run.
        out = self.init_fails("all_gather_perf", 2, {"BRAID_ALGO_FILES": files,
                                                     "BRAID_ALGO": algo,
                                                     "BRAID_TRANSPORTS": "socket"})
        self.assertIn("it is a window program", out)

    def test_a_window_program_without_a_wait_is_refused_at_init(self):
        broken = os.path.join(self.dir, "allgather_windows_broken.json")
        rc, out = run([sys.executable, os.path.join(EXAMPLES, "allgather_windows.py"),
                       "-o", broken, "--drop-wait"])
        self.assertEqual(rc, 0, out)
        out = self.init_fails("all_gather_perf", 3, {"BRAID_ALGO_FILES": broken,
                                                     "BRAID_TRANSPORTS": "shm"})
        self.assertIn("BRAID_ALGO_FILES: " + broken + ": 3 ranks: count", out)
        self.assertIn("race: rank 1", out)
        self.assertIn("(file step 6)", out)

    def test_node_pairs_alltoall_runs_exact_over_shm_and_socket(self):
        # It serves out of place calls; the tool's in-place calls fall back to pairwise.
        files = self.files["alltoall_node_pairs"]
        algo = "alltoall:alltoall_node_pairs,pairwise"
        out = self.perf("alltoall_perf", 8, "shm", files, algo)
        self.assertIn("alltoall_node_pairs, predicted", out)
        self.perf("alltoall_perf", 4, "socket", files, algo)

    def test_msccl_xml_ring_allreduce_is_proven_and_runs_exact_over_shm_and_socket(self):
        xml = os.path.join(EXAMPLES, "msccl_allreduce_ring.xml")
        rc, out = run([BRAID_ALGO_TOOL, "check", xml, "--ranks", "4"])
        self.assertEqual(rc, 0, out)
        self.assertIn("4 ranks: proven", out)
        # An in-place program: the tool's out-of-place calls fall back to ring.
        out = self.perf("all_reduce_perf", 4, "shm", xml, "allreduce:allreduce_ring_msccl,ring")
        self.assertIn("allreduce_ring_msccl, predicted", out)
        self.assertIn("it serves in place calls only", out)
        self.perf("all_reduce_perf", 4, "socket", xml, "allreduce:allreduce_ring_msccl,ring")
        # A step type of MSCCL++ has no meaning in Braid: refused, naming where it is.
        broken = os.path.join(self.dir, "broken.xml")
        with open(xml) as f:
            text = f.read()
        with open(broken, "w") as f:
            f.write(text.replace('type="rrs"', 'type="put"', 1))
        rc, out = run([BRAID_ALGO_TOOL, "check", broken, "--ranks", "4"])
        self.assertNotEqual(rc, 0, out)
        self.assertIn("gpu 0, tb 2, step 0: step type 'put' has no meaning in Braid", out)

    def test_a_file_that_does_not_claim_the_rank_count_is_left_out(self):
        env = dict(os.environ, BRAID_ALGO_FILES=self.files["alltoall_node_pairs"],
                   BRAID_TRANSPORTS="shm", BRAID_DEBUG="INFO")
        rc, out = run([BRAIDRUN, "-n", "3", "--no-prefix", "--timeout", "60",
                       os.path.join(BUILD, "perf", "coll", "alltoall_perf"), "-b", "96",
                       "-e", "96", "-n", "1", "-w", "0"], env=env)
        self.assertEqual(rc, 0, out)
        self.assertIn("does not claim 3 ranks; not loaded here", out)

    def test_a_broken_file_is_refused_at_init_naming_the_step(self):
        broken = os.path.join(self.dir, "broken.json")
        with open(self.files["allreduce_2d"]) as f:
            text = f.read()
        # Every rank's first receive of the 4-rank program turned into a send: nobody
        # receives what its left neighbour sends first.
        start = text.index('"nranks": 4')
        text = text[:start] + text[start:].replace('"op": "recvReduce"', '"op": "recvReduceX"', 1)
        with open(broken, "w") as f:
            f.write(text)
        rc, out = run([BRAID_ALGO_TOOL, "check", broken])
        self.assertNotEqual(rc, 0, out)
        self.assertIn("unknown op 'recvReduceX'", out)
        # A file that reads well but deadlocks: rank 0 drops its first reduction.
        text = text.replace('"op": "recvReduceX"', '"op": "recvReduce"')
        i = text.index('"op": "recvReduce"', start)
        line_start = text.rindex("\n", 0, i) + 1
        line_end = text.index("\n", i)
        text = text[:line_start] + text[line_end + 1:]
        with open(broken, "w") as f:
            f.write(text)
        out = self.init_fails("all_reduce_perf", 4, {"BRAID_ALGO_FILES": broken,
                                                     "BRAID_TRANSPORTS": "shm"})
        self.assertIn("BRAID_ALGO_FILES: " + broken + ": 4 ranks: count", out)
        self.assertIn(" step ", out)


if __name__ == "__main__":
    unittest.main()
