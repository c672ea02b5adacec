"""Point-to-point calls of the "braid" torch backend: send, recv, recv from any source.

Braid's receives name their source; gloo's recv_anysource does not. Each send
therefore counts itself in the group's store (one counter per sender and
receiver), and a receive from any source waits until some rank's counter is
ahead of the messages this rank has taken from it, then receives from that
rank.

Tags: sends and receives started together (batch_isend_irecv, or isend/irecv
before a wait) run as one Braid group sorted by peer and tag on both sides, so
that a receive meets the send of its tag, as on gloo, whatever order each side
listed them in. Otherwise messages between two ranks meet in the order they
were sent, and a tag does not reorder them.

BRAID_TORCH_ANY_SOURCE=0 leaves the counting out (one store call less per send);
recv_anysource then says so.
"""

import os
import threading
import time

from . import _lib
from . import errors
from ._torch_common import one, ptr, stream_of

_POLL_MIN_S, _POLL_MAX_S = 0.0002, 0.01


class PointToPoint:
    """ProcessGroupBraid's send/recv (a mixin: needs _run, _comm, _store, _timeout_s)."""

    def _init_p2p(self, store):
        self._store = store
        self._announce = os.environ.get("BRAID_TORCH_ANY_SOURCE", "1") != "0"
        self._taken = [0] * self.size()  # messages received from each rank, as run
        self._taken_lock = threading.Lock()
        self._next_any = 0

    def _sent_key(self, dst, src):
        return f"braid_sent/{dst}/{src}"

    def send(self, tensors, dstRank, tag=0):
        t = one(tensors, "send")
        p, n, dt = ptr(t, "send tensor")
        self._check_peer(dstRank, "send")
        if self._announce:
            self._store.add(self._sent_key(dstRank, self.rank()), 1)
        return self._run("send", lambda c, s: _lib.lib.braidSend(p, n, dt, dstRank, c, s),
                         tensors, t, fusable=True, stream=stream_of("send", t),
                         order=("send", dstRank, tag))

    def recv(self, tensors, srcRank, tag=0):
        t = one(tensors, "recv")
        p, n, dt = ptr(t, "recv tensor")
        self._check_peer(srcRank, "recv")

        def call(c, s):
            self._took(srcRank)
            return _lib.lib.braidRecv(p, n, dt, srcRank, c, s)

        return self._run("recv", call, tensors, t, fusable=True, stream=stream_of("recv", t),
                         order=("recv", srcRank, tag))

    def recv_anysource(self, tensors, tag=0):
        """Receives the next message any rank sends here; the work's source_rank() says
        which rank sent it."""
        if not self._announce:
            raise errors.InvalidUsageError(
                "braid: recv from any source needs the senders to count their sends "
                "(unset BRAID_TORCH_ANY_SOURCE=0 on every rank)", 5)
        t = one(tensors, "recv")
        p, n, dt = ptr(t, "recv tensor")
        source = {"src": -1}

        def call(c, s):
            src = self._any_sender()
            source["src"] = src
            self._took(src)
            return _lib.lib.braidRecv(p, n, dt, src, c, s)

        # Not fusable: its source must be known before the receive is issued.
        return self._run("recv from any source", call, tensors, t,
                         stream=stream_of("recv", t), source=source)

    def _took(self, src):
        with self._taken_lock:
            self._taken[src] += 1

    def _any_sender(self):
        """A rank that has sent this rank a message not yet received (waits, polling the
        store, up to the group's timeout; ranks are tried in turn from the last one)."""
        deadline = None if self._timeout_s is None else time.monotonic() + self._timeout_s
        pause = _POLL_MIN_S
        peers = [r for r in range(self.size()) if r != self.rank()]
        if not peers:
            raise errors.InvalidUsageError("braid: recv from any source in a group of one rank", 5)
        while True:
            for i in range(len(peers)):
                src = peers[(self._next_any + i) % len(peers)]
                if self._store.add(self._sent_key(self.rank(), src), 0) > self._taken[src]:
                    self._next_any = (self._next_any + i + 1) % len(peers)
                    return src
            if deadline is not None and time.monotonic() > deadline:
                raise errors.BraidTimeoutError(
                    f"braid: rank {self.rank()}: recv from any source: Timed out after "
                    f"{self._timeout_s:g} s (the group's timeout): no rank sent a message", 8)
            time.sleep(pause)
            pause = min(pause * 2, _POLL_MAX_S)

    def _check_peer(self, peer, what):
        if not 0 <= peer < self.size():
            raise errors.InvalidArgumentError(
                f"braid: {what}: peer {peer} is not a rank of this group of {self.size()}", 4)
