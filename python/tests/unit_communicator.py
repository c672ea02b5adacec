"""Communicators in one process: errors, and four ranks as threads running every collective.

Ranks as threads keep these tests fast and need no launcher; the same calls
across processes are tests/collectives_ranks.py. Data are small integers, so
every expected value is exact and computed here independently of Braid.
"""

import os
import subprocess
import sys
import textwrap
import threading
import unittest

import braid_test_env  # noqa: F401
import numpy as np

import braid

NRANKS = 4
TIMEOUT_MS = 3000  # a deadlock fails the test instead of hanging it


def run_ranks(body, nranks=NRANKS):
    """Runs body(comm) on nranks thread ranks; returns their results in rank order."""
    uid = braid.get_unique_id()
    results, failures = [None] * nranks, []

    def rank_main(r):
        try:
            with braid.init_rank(nranks, uid, r, timeout_ms=TIMEOUT_MS) as comm:
                results[r] = body(comm)
        except BaseException as e:  # reported by the main thread
            failures.append((r, e))

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(nranks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0][1]
    return results


class ErrorsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.comm = braid.init_rank(1, braid.get_unique_id(), 0, timeout_ms=TIMEOUT_MS)

    @classmethod
    def tearDownClass(cls):
        cls.comm.close()

    def test_one_rank_communicator(self):
        self.assertEqual((self.comm.rank, self.comm.size), (0, 1))
        self.assertIn("rank 0 of 1", repr(self.comm))

    def test_bad_argument_carries_braids_message_and_code(self):
        with self.assertRaises(braid.InvalidArgumentError) as cm:
            self.comm.broadcast(np.zeros(4), root=5)
        self.assertEqual(cm.exception.code, 4)
        self.assertIn("root 5", str(cm.exception))
        self.assertIsInstance(cm.exception, ValueError)

    def test_async_error_is_raised_by_wait(self):
        work = self.comm.reduce(np.zeros(4), root=-2, async_op=True)
        with self.assertRaises(braid.InvalidArgumentError):
            work.wait()
        self.assertTrue(work.is_completed())
        self.assertIsInstance(work.exception(), braid.BraidError)

    def test_bad_unique_id_and_reduction(self):
        with self.assertRaises(braid.InvalidArgumentError):
            braid.init_rank(2, b"short", 0)
        with self.assertRaisesRegex(ValueError, "unknown reduction"):
            self.comm.all_reduce(np.zeros(2), op="xor")

    def test_sizes_are_checked_before_calling_braid(self):
        with self.assertRaisesRegex(braid.InvalidArgumentError, "needs 2"):
            self.comm.all_gather(np.zeros(2), out=np.zeros(3))

    def test_closed_communicator_refuses_calls(self):
        comm = braid.init_rank(1, braid.get_unique_id(), 0)
        comm.close()
        comm.close()  # twice is fine
        with self.assertRaises(RuntimeError):
            comm.barrier()

    def test_version(self):
        self.assertEqual(len(braid.version()), 3)


class CollectivesTest(unittest.TestCase):
    def test_all_reduce_every_op_in_and_out_of_place(self):
        refs = {"sum": lambda v: sum(v), "prod": lambda v: np.prod(v), "max": max, "min": min,
                "avg": lambda v: sum(v) / len(v)}
        values = [r + 1 for r in range(NRANKS)]

        def body(comm):
            out = {}
            for op in refs:
                for dt in (np.int32, np.float32, np.float64):
                    x = np.full(33, values[comm.rank], dt)
                    y = np.zeros_like(x)
                    comm.all_reduce(x, out=y, op=op)
                    out[op, dt, "out"] = (y, x.copy())
                    comm.all_reduce(x, op=op)
                    out[op, dt, "in"] = (x, None)
            return out

        for res in run_ranks(body):
            for (op, dt, mode), (got, src) in res.items():
                want = refs[op](values)
                if dt is np.int32:
                    want = int(want)  # Braid's integer avg truncates
                np.testing.assert_array_equal(got, np.full(33, want, dt), err_msg=f"{op} {dt}")
                if src is not None:  # out of place leaves the input alone
                    self.assertTrue((src == got.dtype.type(src[0])).all())

    def test_premul_sum_scales_each_ranks_input_by_its_own_scalar(self):
        def body(comm):
            r, out = comm.rank, {}
            with comm.premul_sum(r + 2, "float32") as op:  # by value
                x = np.arange(10, dtype=np.float32) + r
                comm.all_reduce(x, op=op)
                out["value"] = x
                try:
                    comm.all_reduce(np.ones(2, np.int32), op=op)
                except braid.InvalidArgumentError as e:
                    out["other type"] = str(e)
            s = np.zeros(1)  # by pointer: read when each call runs
            op = comm.premul_sum(s, np.float64)
            s[0] = r + 1
            out["pointer"] = comm.reduce_scatter(np.full(4 * comm.size, r, np.float64), op=op)
            work = comm.all_reduce(np.ones(3), op=op, async_op=True)
            op.destroy()  # the queued call is issued first
            work.wait()
            out["async"] = work.result()
            try:
                comm.premul_sum(np.zeros(2), np.float64)
            except braid.InvalidArgumentError as e:
                out["two elements"] = str(e)
            return out

        n = NRANKS
        for res in run_ranks(body):
            want = sum((r + 2) * (np.arange(10) + r) for r in range(n))
            np.testing.assert_array_equal(res["value"], want.astype(np.float32))
            self.assertIn("made for float32 and is used with int32", res["other type"])
            np.testing.assert_array_equal(res["pointer"], [sum((r + 1) * r for r in range(n))] * 4)
            np.testing.assert_array_equal(res["async"], [sum(r + 1 for r in range(n))] * 3)
            self.assertIn("one float64 element", res["two elements"])

    def test_all_gather_allocated_and_in_place(self):
        def body(comm):
            mine = np.array([comm.rank, 10 * comm.rank], np.int64)
            fresh = comm.all_gather(mine)
            buf = np.zeros((comm.size, 2), np.int64)
            buf[comm.rank] = mine
            comm.all_gather(buf[comm.rank], out=buf)  # NCCL's in-place layout
            return fresh, buf

        want = np.array([[r, 10 * r] for r in range(NRANKS)])
        for fresh, buf in run_ranks(body):
            np.testing.assert_array_equal(fresh, want)
            np.testing.assert_array_equal(buf, want)

    def test_reduce_scatter_broadcast_reduce(self):
        def body(comm):
            r = comm.rank
            rs = comm.reduce_scatter(np.arange(NRANKS * 3, dtype=np.float32).reshape(NRANKS, 3)
                                     * (r + 1))
            bc = comm.broadcast(np.full(5, r, np.int32), root=2)
            red = np.full(4, r + 1, np.float64)
            out = np.zeros(4)
            comm.reduce(red, root=1, out=out, op="max")
            return rs, bc, out

        total = sum(r + 1 for r in range(NRANKS))
        for r, (rs, bc, out) in enumerate(run_ranks(body)):
            np.testing.assert_array_equal(rs, np.arange(3 * r, 3 * r + 3) * total)
            np.testing.assert_array_equal(bc, np.full(5, 2))
            np.testing.assert_array_equal(out, np.full(4, NRANKS if r == 1 else 0))

    def test_gather_and_scatter_touch_root_buffers_only_on_root(self):
        def body(comm):
            r, n = comm.rank, comm.size
            gathered = comm.gather(np.array([r, r * r], np.int32), root=3)
            blocks = np.arange(n * 2, dtype=np.float64).reshape(n, 2) if r == 1 else None
            mine = comm.scatter(blocks, np.zeros(2), root=1)
            return gathered, mine

        for r, (gathered, mine) in enumerate(run_ranks(body)):
            if r == 3:
                np.testing.assert_array_equal(gathered, [[p, p * p] for p in range(NRANKS)])
            else:
                self.assertIsNone(gathered)
            np.testing.assert_array_equal(mine, [2 * r, 2 * r + 1])

    def test_all_to_all_even_and_uneven(self):
        def body(comm):
            r, n = comm.rank, comm.size
            even = comm.all_to_all(np.arange(n * 2, dtype=np.int32) + 100 * r)
            # Rank r sends p + 1 elements of value 10r + p to rank p.
            counts = [p + 1 for p in range(n)]
            send = np.concatenate([np.full(p + 1, 10 * r + p, np.int64) for p in range(n)])
            recv = np.zeros(n * (r + 1), np.int64)
            comm.all_to_allv(send, counts, recv, [r + 1] * n)
            return even, recv

        for r, (even, recv) in enumerate(run_ranks(body)):
            np.testing.assert_array_equal(
                even, np.concatenate([[100 * p + 2 * r, 100 * p + 2 * r + 1]
                                      for p in range(NRANKS)]))
            np.testing.assert_array_equal(
                recv, np.concatenate([np.full(r + 1, 10 * p + r) for p in range(NRANKS)]))

    def test_async_operations_complete_in_order_with_results(self):
        def body(comm):
            x = np.ones(1 << 16, np.float32)
            works = [comm.all_reduce(x, async_op=True) for _ in range(3)]
            last = works[-1].result()
            comm.barrier()
            return [w.is_completed() for w in works], last[0]

        for done, value in run_ranks(body):
            self.assertEqual(done, [True] * 3)
            self.assertEqual(value, NRANKS ** 3)  # three in-place sums, in order

    def test_async_ring_exchange_larger_than_the_fifos_completes(self):
        # One by one, every rank's 4 MiB send would wait for a receive that is
        # queued behind it: the held-back sends and receives must run as a group.
        def body(comm):
            r, n = comm.rank, comm.size
            got = np.zeros(1 << 20, np.float32)
            a = comm.send(np.full(1 << 20, r, np.float32), (r + 1) % n, async_op=True)
            b = comm.recv(got, (r - 1) % n, async_op=True)
            while not b.is_completed():
                pass
            a.wait()
            return got

        for r, got in enumerate(run_ranks(body)):
            self.assertTrue((got == (r - 1) % NRANKS).all())

    def test_group_context_and_split(self):
        def body(comm):
            r, n = comm.rank, comm.size
            got = np.zeros(8, np.int32)
            with braid.group():
                comm.send(np.full(8, r, np.int32), (r + 1) % n)
                comm.recv(got, (r - 1) % n)
            sub = comm.split(r % 2, key=-r)  # reversed order inside each half
            total = sub.all_reduce(np.array([r]))
            info = (sub.rank, sub.size, int(total[0]))
            sub.close()
            none = comm.split(braid.SPLIT_NOCOLOR if r == 0 else 1)
            if none is not None:
                none.close()
            return got, info, none is None

        for r, (got, (srank, ssize, total), none) in enumerate(run_ranks(body)):
            self.assertTrue((got == (r - 1) % NRANKS).all())
            half = [p for p in range(NRANKS) if p % 2 == r % 2]
            self.assertEqual((srank, ssize, total),
                             (sorted(half, reverse=True).index(r), len(half), sum(half)))
            self.assertEqual(none, r == 0)


class ExitTest(unittest.TestCase):
    def test_worker_threads_end_before_the_interpreter_finalizes(self):
        # A worker thread still alive once finalization begins may drop a tensor
        # there, which aborts the process inside torch's deallocator. A handler
        # registered before braid's runs after it (atexit is last in, first out)
        # and finds every braid worker thread ended, closed communicator or open,
        # even one still running a done-callback when the exit hook starts.
        script = textwrap.dedent("""
            import atexit, os, sys, threading, time
            def check():
                alive = [t.name for t in threading.enumerate() if t.name.startswith("braid-")]
                if alive:
                    print("alive at exit:", alive, flush=True)
                    os._exit(3)
            atexit.register(check)
            sys.path.insert(0, os.environ["BRAID_PYTHONPATH"])
            import numpy as np
            import braid
            closed = braid.init_rank(1, braid.get_unique_id(), 0)
            closed.all_reduce(np.ones(4), async_op=True).wait()
            closed.close()
            kept = braid.init_rank(1, braid.get_unique_id(), 0)
            work = kept.all_reduce(np.ones(1 << 22), async_op=True)
            work.add_done_callback(lambda _: time.sleep(0.5))  # the worker is still busy at exit
        """)
        env = dict(os.environ)
        env.setdefault("BRAID_PYTHONPATH", os.path.join(os.path.dirname(__file__), ".."))
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                              text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)


if __name__ == "__main__":
    unittest.main()
