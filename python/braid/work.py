"""Asynchronous operations: Work handles and the per-communicator executor.

Braid's C calls on one communicator must come from one thread at a time and be
issued in the same order on every rank. An Executor keeps that order: every
operation of a communicator, blocking or not, passes through its queue and
runs one at a time. Asynchronous operations are run by the executor's worker
thread (ctypes releases the GIL during the C call, so Python keeps running);
a blocking operation, or a wait() on a queued one, runs the queue's head in
the caller's own thread when nothing else is running, which saves two thread
hand-offs per call.

Thread-safety: Work and Executor may be used from any thread.
"""

import collections
import threading


class Work:
    """Handle of an operation started with ``async_op=True``.

    ``wait()`` blocks until the operation has finished and raises its error,
    if any; ``is_completed()`` asks without blocking; ``result()`` is the
    operation's output object once finished.
    """

    __slots__ = ("_run", "_executor", "_done", "_error", "_result", "_callbacks", "_keep")

    def __init__(self, run, executor, result=None, keep=None):
        self._run = run
        self._executor = executor
        self._done = False
        self._error = None
        self._result = result
        self._callbacks = []
        self._keep = keep

    def is_completed(self):
        """True once the operation has finished, successfully or not."""
        return self._done

    def wait(self, timeout=None):
        """Blocks until done (at most ``timeout`` seconds); re-raises its error.

        Returns True when finished, False when the timeout passed first.
        """
        if not self._done:
            self._executor.wait_for(self, timeout)
        if not self._done:
            return False
        if self._error is not None:
            raise self._error
        return True

    def exception(self):
        """The error the operation ended with, or None."""
        return self._error

    def result(self):
        """Waits, then returns the operation's output (the receive buffer)."""
        self.wait()
        return self._result

    def add_done_callback(self, fn):
        """Calls fn(work) once finished, on the thread that finished it (now if done)."""
        with self._executor.cond:
            if not self._done:
                self._callbacks.append(fn)
                return
        fn(self)

    def _execute(self):
        try:
            self._run()
        except BaseException as e:  # handed to the waiter, not lost in a thread
            self._error = e
        self._run = None
        self._keep = None


class Executor:
    """Runs one communicator's operations in order, one at a time."""

    def __init__(self, name):
        self.cond = threading.Condition(threading.Lock())
        self._queue = collections.deque()
        self._busy = False
        self._closed = False
        self._name = name
        self._thread = None

    def submit(self, work):
        """Queues work for the worker thread and returns it."""
        with self.cond:
            if self._closed:
                raise RuntimeError(f"braid: {self._name} is closed")
            self._queue.append(work)
            if self._thread is None:
                self._thread = threading.Thread(target=self._worker, daemon=True,
                                                name=f"braid-{self._name}")
                self._thread.start()
            self.cond.notify_all()
        return work

    def run(self, work):
        """Runs work now, after everything queued before it; raises its error."""
        with self.cond:
            if self._closed:
                raise RuntimeError(f"braid: {self._name} is closed")
            self._queue.append(work)
        return work.wait()

    def wait_for(self, work, timeout):
        """Blocks until work is done, running queued operations here when idle."""
        with self.cond:
            while not work._done:
                if not self._busy and self._queue:
                    head = self._take()
                    self.cond.release()
                    try:
                        self._finish(head)
                    finally:
                        self.cond.acquire()
                    continue
                if not self.cond.wait(timeout) and timeout is not None:
                    return

    def drain(self):
        """Waits for every queued operation; errors stay with their Work."""
        with self.cond:
            last = self._queue[-1] if self._queue else None
        if last is not None:
            self.wait_for(last, None)

    def close(self):
        """Refuses new work; the worker thread ends once the queue is empty."""
        with self.cond:
            self._closed = True
            self.cond.notify_all()

    def _take(self):
        self._busy = True
        return self._queue.popleft()

    def _finish(self, work):
        work._execute()
        with self.cond:
            self._busy = False
            work._done = True
            callbacks, work._callbacks = work._callbacks, []
            self.cond.notify_all()
        for fn in callbacks:
            fn(work)

    def _worker(self):
        while True:
            with self.cond:
                while self._busy or not self._queue:
                    if self._closed and not self._queue:
                        return
                    self.cond.wait()
                work = self._take()
            self._finish(work)
