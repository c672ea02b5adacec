"""The per-communicator executor (braid/work.py) on its own: no communicator, no C calls.

Each operation is a Python function; events say when one has started, so every ordering
below is forced, not timed.
"""

import threading
import unittest

import braid_test_env  # noqa: F401

from braid.work import Executor, Work

WAIT = 10  # seconds: only reached when the code under test is wrong


def _no_fusion(works):
    raise AssertionError("nothing here is fusable")


class DrainTest(unittest.TestCase):
    def test_drain_waits_for_the_operation_the_worker_is_running(self):
        # The worker has taken the only operation off the queue and runs it: drain must
        # still wait for it (PreMulSum.destroy drains, then frees the op that call uses).
        ex = Executor("drain-test", _no_fusion)
        started, release, finished = threading.Event(), threading.Event(), threading.Event()

        def run():
            started.set()
            release.wait(WAIT)
            finished.set()

        work = ex.submit(Work(run, ex))
        self.assertTrue(started.wait(WAIT))
        drained = threading.Event()
        drainer = threading.Thread(target=lambda: (ex.drain(), drained.set()))
        drainer.start()
        self.assertFalse(drained.wait(0.2), "drain returned while the operation ran")
        release.set()
        self.assertTrue(drained.wait(WAIT))
        self.assertTrue(finished.is_set())
        drainer.join(WAIT)
        self.assertTrue(work.wait(WAIT))
        ex.close()
        ex.join(WAIT)

    def test_drain_with_nothing_queued_returns(self):
        ex = Executor("drain-idle", _no_fusion)
        ex.drain()
        ex.run(Work(lambda: None, ex))
        ex.drain()
        ex.close()


class WaitTimeoutTest(unittest.TestCase):
    def test_a_wait_with_a_timeout_leaves_the_operation_to_the_worker(self):
        # A held-back receive whose sender comes later: wait(timeout) must return once
        # the timeout passes, so the operation cannot run in the waiting thread.
        ex = Executor("wait-timeout", lambda works: [w._run() for w in works])
        release = threading.Event()
        ran_in = []

        def run():
            ran_in.append(threading.current_thread())
            release.wait(WAIT)

        work = ex.submit(Work(run, ex, fusable=True))
        self.assertFalse(work.wait(0.05), "the operation ended before its release")
        release.set()
        self.assertTrue(work.wait(WAIT))
        self.assertIsNot(ran_in[0], threading.current_thread())
        ex.close()
        ex.join(WAIT)


class FusionTest(unittest.TestCase):
    def test_a_wake_for_running_work_does_not_release_the_next_fusable_work(self):
        # A wait with a timeout on the work the worker is running wakes the worker for it.
        # The next fusable work, queued once that work ended, must still wait for its
        # group (a wait on it), even when the worker wakes for no reason in between (as a
        # condition variable may): run alone, a tagged send would meet the wrong receive.
        batches = []
        ex = Executor("fusion", lambda works: (batches.append(list(works)),
                                               [w._run() for w in works]))
        started, release = threading.Event(), threading.Event()

        def first():
            started.set()
            release.wait(WAIT)

        a = ex.submit(Work(first, ex, fusable=True))
        self.assertFalse(a.wait(0.01), "the first work ended before its release")
        self.assertTrue(started.wait(WAIT))
        self.assertFalse(a.wait(0.01), "the first work ended before its release")  # a wake
        release.set()
        self.assertTrue(a.wait(WAIT))
        ran = []
        b = ex.submit(Work(lambda: ran.append("b"), ex, fusable=True))
        with ex.cond:
            ex._ready.notify()  # a wake-up for no reason
        self.assertFalse(threading.Event().wait(0.2))
        self.assertEqual(ran, [], "the fusable work ran before its group was queued")
        c = ex.submit(Work(lambda: ran.append("c"), ex, fusable=True))
        self.assertTrue(b.wait(WAIT))
        self.assertTrue(c.wait(WAIT))
        self.assertEqual(ran, ["b", "c"])
        self.assertEqual(batches, [[b, c]])
        ex.close()
        ex.join(WAIT)


if __name__ == "__main__":
    unittest.main()
