"""The torch Work objects of the "braid" backend (see braid.torch).

A BraidWork wraps a braid.Work. wait() raises Braid's error; a deadline passed
(the group's timeout, or wait's own) raises a BraidTimeoutError whose text says
"Timed out", as gloo's and torch's own timeouts do. get_future() works on every
Work, CPU or CUDA.
"""

import collections
import datetime
import threading

import torch
from torch._C._distributed_c10d import Work as _TorchWorkBase

from . import errors

# pybind11 forwards C++ calls (DDP's wait, get_future) to a Work's Python
# methods only while its Python object lives, and PyTorch 1.13 keeps only the
# C++ half. Works are held here until waited on or their future taken; works
# nobody waits for are let go once done and this many newer ones exist.
_KEEP_LIMIT = 1024
_kept = collections.OrderedDict()
_kept_lock = threading.Lock()


def _keep(work):
    with _kept_lock:
        _kept[id(work)] = work
        while len(_kept) > _KEEP_LIMIT:
            oldest = next(iter(_kept.values()))
            if not oldest._work._done:
                break
            _kept.popitem(last=False)


def _release(work):
    with _kept_lock:
        _kept.pop(id(work), None)


def seconds(timeout):
    """A timeout given as timedelta or seconds, as seconds (None: no limit)."""
    if isinstance(timeout, datetime.timedelta):
        timeout = timeout.total_seconds()
    return timeout


def timed_out(error, what):
    """error (a Braid deadline) restated for torch callers, who match 'Timed out'."""
    return errors.BraidTimeoutError(f"braid: {what}: Timed out ({error})", 8)


class BraidWork(_TorchWorkBase):
    """A torch Work over a braid.Work: wait() raises Braid's error.

    stream: the CUDA stream a call on CUDA tensors was enqueued on (the call itself is
    then done); an event recorded after it says when the stream has run it.
    source: a dict whose "src" a receive from any rank fills in when it runs.
    """

    def __init__(self, work, outputs, stream=None, what="operation", source=None):
        super().__init__()
        self._work = work
        self._outputs = outputs
        self._stream = stream
        self._what = what
        self._source = source
        self._event = None
        if stream is not None:
            self._event = torch.cuda.Event()
            self._event.record(stream)
        _keep(self)

    def wait(self, timeout=None):
        if self._event is not None:  # the caller's stream goes on after the call's
            torch.cuda.current_stream(self._stream.device).wait_event(self._event)
            _release(self)
            return True
        limit = seconds(timeout) or None
        try:
            done = self._work.wait(limit)
        except errors.BraidTimeoutError as e:
            raise timed_out(e, self._what) from e
        finally:
            if self._work._done:
                _release(self)
        if not done:  # torch code ignores the result: a timeout must raise, as in gloo
            raise errors.BraidTimeoutError(
                f"braid: {self._what}: Timed out waiting {limit} s for it (Work.wait "
                "timeout); the operation goes on", 8)
        return True

    def synchronize(self):
        self.wait()

    def is_completed(self):
        if self._event is not None:
            return self._event.query()
        return self._work.is_completed()

    def is_success(self):
        return self.is_completed() and self._work.exception() is None

    def exception(self):
        return self._work.exception()

    def result(self):
        self.wait()
        return self._outputs

    def source_rank(self):
        """The rank a receive from any source got its message from (after wait())."""
        if self._source is None:
            raise ValueError("braid: source_rank() is for receives from any source")
        self.wait()
        return self._source["src"]

    _source_rank = source_rank

    def get_future(self):
        if self._event is not None:
            return self._cuda_future()
        # Future.set_exception only makes Python's wait() raise: C++ readers such as
        # DDP's reducer would take the exception object for the call's tensors (and
        # crash). An error raised in a then() callback is a C++ error of the child
        # future, which every reader sees.
        done_fut = torch.futures.Future()
        self._work.add_done_callback(lambda work: done_fut.set_result(None))

        def outputs_or_error(_):
            error = self._work.exception()
            if isinstance(error, errors.BraidTimeoutError):
                error = timed_out(error, self._what)
            if error is not None:
                raise error
            return self._outputs

        self._work.is_completed()  # lets held-back sends and receives run: nobody may wait()
        _release(self)
        return done_fut.then(outputs_or_error)

    def _cuda_future(self):
        """Done now (the call is on its stream); its value is ready once the stream has
        run the call: the future records that on the caller's current stream."""
        device = self._stream.device
        torch.cuda.current_stream(device).wait_event(self._event)
        fut = torch.futures.Future(devices=[device])
        fut.set_result(self._outputs)
        _release(self)
        return fut
