"""Ranks as processes (run under braidrun): braid.init from the launcher, collectives, abort.

Each rank exits non-zero on the first failed check; braidrun then stops the
job and names the rank.
"""

import threading
import time

from braid_test_env import RANK, WORLD
import numpy as np

import braid


def check_init(comm):
    assert (comm.rank, comm.size) == (RANK, WORLD), (comm.rank, comm.size, RANK, WORLD)


def check_collectives(comm):
    r, n = comm.rank, comm.size
    x = np.arange(1000, dtype=np.int64) * (r + 1)
    comm.all_reduce(x)
    assert (x == np.arange(1000) * n * (n + 1) // 2).all()

    # 3 MiB: above the FIFOs, so the ring really pipelines slices.
    big = np.full(3 << 18, r + 1, np.float32)
    out = np.zeros_like(big)
    comm.all_reduce(big, out=out, op="max")
    assert (out == n).all() and (big == r + 1).all()

    g = comm.all_gather(np.array([r, -r], np.int32))
    assert g.tolist() == [[p, -p] for p in range(n)], g

    counts = [(r + p) % 3 for p in range(n)]  # some blocks are empty
    send = np.concatenate([np.full(c, 100 * r + p, np.int32) for p, c in enumerate(counts)])
    recv_counts = [(p + r) % 3 for p in range(n)]
    recv = np.full(sum(recv_counts), -1, np.int32)
    comm.all_to_allv(send, counts, recv, recv_counts)
    want = np.concatenate([np.full(c, 100 * p + r, np.int32) for p, c in enumerate(recv_counts)])
    assert (recv == want).all(), (recv, want)

    w = comm.broadcast(np.full(7, r, np.float64), root=n - 1, async_op=True)
    assert (w.result() == n - 1).all()


def check_abort(comm):
    """Rank 0 aborts a communicator from another thread while blocked in it."""
    dup = comm.split(0)
    if comm.rank == 0:
        work = dup.all_reduce(np.ones(4), async_op=True)  # nobody else joins
        threading.Timer(0.3, dup.abort).start()
        try:
            work.wait()
        except braid.BraidError as e:
            print(f"rank 0: abort ended the pending all_reduce: {e}")
        else:
            raise AssertionError("all_reduce on an aborted communicator succeeded")
        time.sleep(0.1)  # the timer thread has returned from abort
    comm.barrier()


def main():
    comm = braid.init(timeout_ms=60000)
    check_init(comm)
    check_collectives(comm)
    check_abort(comm)
    comm.barrier()
    print(f"rank {comm.rank}: ok")
    comm.close()


if __name__ == "__main__":
    main()
