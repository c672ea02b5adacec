"""Asynchronous operations: Work handles and the per-communicator executor.

Braid's C calls on one communicator must come from one thread at a time and be
issued in the same order on every rank. An Executor keeps that order: every
operation of a communicator, blocking or not, passes through its queue and
runs one at a time. Asynchronous operations are run by the executor's worker
thread (ctypes releases the GIL during the C call, so Python keeps running);
a blocking operation, or a wait() on a queued one, runs the queue's head in
the caller's own thread when nothing else is running, which saves two thread
hand-offs per call.

Point-to-point operations started asynchronously are held back until someone
waits on them, asks whether they are done, or queues a collective behind them;
consecutive ones then run together as one Braid group. That is what makes
``isend(a, 1); irecv(b, 1); wait; wait`` on two ranks complete when one by one
both sends would wait for receives that were never posted.

Thread-safety: Work and Executor may be used from any thread.
"""

import collections
import threading
import time
import weakref

# Every executor, so the exit hook can stop their worker threads while the
# interpreter still runs: a daemon thread that drops a tensor once finalization
# has begun is ended inside torch's deallocator, which aborts the process.
_executors = weakref.WeakSet()


class Work:
    """Handle of an operation started with ``async_op=True``.

    ``wait()`` blocks until the operation has finished and raises its error,
    if any; ``is_completed()`` asks without blocking; ``result()`` is the
    operation's output object once finished.
    """

    __slots__ = ("_run", "_executor", "_done", "_error", "_result", "_callbacks", "_keep",
                 "_fusable", "_order", "_number")

    def __init__(self, run, executor, result=None, keep=None, fusable=False, order=None):
        self._run = run
        self._fusable = fusable
        self._order = order  # fusable works run together sorted by it (a tuple; None first)
        self._executor = executor
        self._done = False
        self._error = None
        self._result = result
        self._callbacks = []
        self._keep = keep
        self._number = 0  # its place in its executor's queue, counted from 1

    def is_completed(self):
        """True once the operation has finished, successfully or not."""
        if not self._done:
            self._executor.kick()
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

    def _release(self, error):
        self._error = error
        self._run = None
        self._keep = None


class Executor:
    """Runs one communicator's operations in order, one at a time."""

    def __init__(self, name, run_fused):
        """run_fused(works) runs several fusable works' calls as one group."""
        self._run_fused = run_fused
        # cond: waiters for operations to finish; ready: the worker, for work to run.
        # Apart, so that finishing an operation does not wake an idle worker (a thread
        # switch, and a fight for the GIL, on every blocking call).
        lock = threading.Lock()
        self.cond = threading.Condition(lock)
        self._ready = threading.Condition(lock)
        self._queue = collections.deque()
        self._busy = False
        self._closed = False
        self._name = name
        self._thread = None
        # Works numbered as they are queued; the worker may run fusable work numbered up
        # to the last wake's count (later fusable work waits for a wake of its own).
        self._queued = 0
        self._woken_through = 0
        _executors.add(self)

    def submit(self, work):
        """Queues work for the worker thread and returns it (fusable work waits)."""
        with self.cond:
            if self._closed:
                raise RuntimeError(f"braid: {self._name} is closed")
            self._append(work)
            if not work._fusable:
                self._wake()
        return work

    def _append(self, work):
        self._queued += 1
        work._number = self._queued
        self._queue.append(work)

    def kick(self):
        """Lets the worker run held-back work."""
        with self.cond:
            if self._queue:
                self._wake()

    def _wake(self):
        if self._thread is None:
            self._thread = threading.Thread(target=self._worker, daemon=True,
                                            name=f"braid-{self._name}")
            self._thread.start()
        self._woken_through = self._queued
        self._ready.notify()

    def run(self, work):
        """Runs work now, after everything queued before it; raises its error."""
        with self.cond:
            if self._closed:
                raise RuntimeError(f"braid: {self._name} is closed")
            self._append(work)
        return work.wait()

    def wait_for(self, work, timeout):
        """Blocks until work is done, running queued operations here when idle.

        With a timeout the worker thread runs them instead: a C call blocked in this
        thread could not be left when the timeout passes.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.cond:
            if deadline is not None and not work._done:
                self._wake()
            while not work._done:
                if deadline is None and not self._busy and self._queue:
                    head = self._take()
                    self.cond.release()
                    try:
                        self._finish(head)
                    finally:
                        self.cond.acquire()
                    continue
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return
                self.cond.wait(left)

    def drain(self):
        """Waits for every queued operation and the one running; errors stay with their Work.

        Not from inside an operation of this executor (it would wait for itself).
        """
        with self.cond:
            last = self._queue[-1] if self._queue else None
            # Nothing queued, but the worker (or a waiter) may have taken the last one off
            # the queue and be running it: a PreMulSum destroyed now would be gone before
            # its call reads it.
            while last is None and self._busy:
                self.cond.wait()
        if last is not None:
            self.wait_for(last, None)

    def close(self):
        """Refuses new work; the worker thread ends once the queue is empty."""
        with self.cond:
            self._closed = True
            self.cond.notify_all()
            self._ready.notify()

    def join(self, timeout=None):
        """After close(): waits up to timeout seconds for the worker thread to end."""
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _take(self):
        """The queue's head, with the fusable works right behind a fusable head."""
        self._busy = True
        batch = [self._queue.popleft()]
        while batch[0]._fusable and self._queue and self._queue[0]._fusable:
            batch.append(self._queue.popleft())
        return batch

    def _finish(self, batch):
        error = None
        try:
            if len(batch) == 1:
                batch[0]._run()
            else:
                self._run_fused(batch)
        except BaseException as e:  # handed to the waiters, not lost in a thread
            error = e
        callbacks = []
        with self.cond:
            self._busy = False
            for work in batch:
                work._release(error)
                work._done = True
                callbacks += [(fn, work) for fn in work._callbacks]
                work._callbacks = []
            self.cond.notify_all()
            if self._queue:  # the worker may have waited for this one to end
                self._ready.notify()
        for fn, work in callbacks:
            fn(work)
        del callbacks

    def _worker(self):
        while True:
            with self.cond:
                while self._busy or not self._queue or not self._runnable():
                    if self._closed and not self._queue:
                        return
                    self._ready.wait()
                batch = self._take()
            self._finish(batch)
            del batch  # its tensors go now, not when the thread ends

    def _runnable(self):
        # Fusable work alone in the queue waits for a wait(), an is_completed() or a
        # collective behind it. A wake counts for the work queued when it came: one that
        # came while the worker ran the very work it was for (a wait with a timeout) must
        # not let the next fusable work run before the rest of its group is queued.
        return (self._queue[0]._number <= self._woken_through
                or any(not w._fusable for w in self._queue))
