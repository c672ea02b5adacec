"""The backend's features that PyTorch's suite runs for gloo only (it gates them by name),
checked on "braid" with exact values (run under braidrun, 2 ranks or more).

Coalesced all-reduce and all-gather, receive from any source, batched isend/irecv
with tags, sparse all-reduce, get_future, the object collectives, the group's and a
call's timeouts, the monitored barrier, PREMUL_SUM. Exits 77 where torch is missing.
"""

import datetime
import faulthandler
import os
import sys

from braid_test_env import RANK, WORLD, torch_init_method

try:
    import torch
    import torch.distributed as dist
except ImportError:
    print("skipped: torch is not installed")
    sys.exit(77)

import braid.torch  # noqa: E402,F401

R, N = RANK, WORLD


def eq(got, want, what):
    assert torch.equal(got, want), f"{what}: got {got}, want {want}"


def raises(fn, kind, text, what):
    try:
        fn()
    except kind as e:
        assert text in str(e), f"{what}: {e!r} does not say {text!r}"
        return e
    raise AssertionError(f"{what}: no {kind.__name__}")


def check_coalesced():
    # torch takes one dtype a call (a complex one with its real kind).
    ts = [torch.full((3,), float(R + 1)), torch.full((2, 2), complex(R, 1)), torch.ones(0)]
    dist.all_reduce_coalesced(ts)
    ranks = range(N)
    eq(ts[0], torch.full((3,), float(sum(r + 1 for r in ranks))), "coalesced float")
    eq(ts[1], torch.full((2, 2), complex(sum(ranks), N)), "coalesced complex")
    ints = [torch.arange(4, dtype=torch.int64) * (R + 1), torch.tensor([R], dtype=torch.int64)]
    dist.all_reduce_coalesced(ints)
    eq(ints[0], torch.arange(4) * sum(r + 1 for r in ranks), "coalesced int64")
    eq(ints[1], torch.tensor([sum(ranks)]), "coalesced int64, second tensor")
    mx = [torch.tensor([R, -R], dtype=torch.int32), torch.tensor([7 * R], dtype=torch.int32)]
    dist.all_reduce_coalesced(mx, op=dist.ReduceOp.MAX)
    eq(mx[0], torch.tensor([N - 1, 0], dtype=torch.int32), "coalesced MAX int32")
    eq(mx[1], torch.tensor([7 * (N - 1)], dtype=torch.int32), "coalesced MAX int32, second")
    pg = dist.distributed_c10d._get_default_group()
    opts = dist.AllreduceCoalescedOptions()
    opts.reduceOp = dist.ReduceOp.MAX
    raises(lambda: pg.allreduce_coalesced([torch.ones(1, dtype=torch.cfloat)], opts),
           TypeError, "complex", "complex MAX")

    inputs = [torch.full((2, 3), float(R)), torch.empty(0), torch.tensor([complex(R, -R)])]
    outs = [[torch.zeros_like(t) for t in inputs] for _ in range(N)]
    dist.all_gather_coalesced(outs, inputs)
    for r in range(N):
        eq(outs[r][0], torch.full((2, 3), float(r)), f"gather_coalesced float of {r}")
        eq(outs[r][1], torch.empty(0), f"gather_coalesced empty of {r}")
        eq(outs[r][2], torch.tensor([complex(r, -r)]), f"gather_coalesced complex of {r}")
    # The group's own method also takes tensors of several dtypes in one call.
    inputs = [torch.full((3,), R, dtype=torch.int16), torch.tensor([R % 2 == 0])]
    outs = [[torch.zeros_like(t) for t in inputs] for _ in range(N)]
    pg.allgather_coalesced(outs, inputs).wait()
    for r in range(N):
        eq(outs[r][0], torch.full((3,), r, dtype=torch.int16), f"gather_coalesced int16 of {r}")
        eq(outs[r][1], torch.tensor([r % 2 == 0]), f"gather_coalesced bool of {r}")


def check_any_source():
    if R == 0:
        seen = []
        for i in range(2 * (N - 1)):
            t = torch.full((5,), -1.0)
            if i % 2:
                work = dist.irecv(t)
                work.wait()
                src = work._source_rank()
            else:
                src = dist.recv(t)
            eq(t, torch.full((5,), float(src)), f"message {i} from any source")
            seen.append(src)
        assert sorted(seen) == sorted(list(range(1, N)) * 2), seen
    else:
        for _ in range(2):
            dist.send(torch.full((5,), float(R)), 0)
    # A receive naming its source after any-source ones keeps the counts right. (After a
    # barrier: sent earlier, it could be the message an any-source receive takes.)
    dist.barrier()
    if R == 1:
        dist.send(torch.full((2,), 7.0), 0)
    elif R == 0:
        t = torch.zeros(2)
        dist.recv(t, 1)
        eq(t, torch.full((2,), 7.0), "named receive after any-source ones")
    dist.barrier()


def check_batched_tags():
    """Four-element float tensors both ways, tagged, in either order on each rank."""
    peer_next, peer_prev = (R + 1) % N, (R - 1) % N
    for order in range(2):
        send = torch.arange(4, dtype=torch.float32) + 10 * R
        recv = torch.full((4,), -1.0)
        ops = [dist.P2POp(dist.isend, send, peer_next, tag=R),
               dist.P2POp(dist.irecv, recv, peer_prev, tag=peer_prev)]
        if order ^ (R % 2):
            ops.reverse()
        for req in dist.batch_isend_irecv(ops):
            req.wait()
        eq(recv, torch.arange(4, dtype=torch.float32) + 10 * peer_prev, f"batched order {order}")
    # Tags out of order: rank 0 lists a 4-element tensor (tag 2) before a 1-element one
    # (tag 1); rank 1 lists the tag 1 receive first. Tags pair them, as on gloo.
    if R in (0, 1) and N >= 2:
        if R == 0:
            ops = [dist.P2POp(dist.isend, torch.arange(4.0), 1, tag=2),
                   dist.P2POp(dist.isend, torch.tensor([9.0]), 1, tag=1)]
        else:
            one, four = torch.zeros(1), torch.zeros(4)
            ops = [dist.P2POp(dist.irecv, one, 0, tag=1), dist.P2POp(dist.irecv, four, 0, tag=2)]
        for req in dist.batch_isend_irecv(ops):
            req.wait()
        if R == 1:
            eq(one, torch.tensor([9.0]), "batched tag 1")
            eq(four, torch.arange(4.0), "batched tag 2")
    # Sizes that differ per rank, as the suite's case sends them.
    for peer in range(N):
        if peer == R:
            continue
        send, recv = torch.full((R + 1,), float(R)), torch.zeros(peer + 1)
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.irecv, recv, peer, tag=peer),
                                       dist.P2POp(dist.isend, send, peer, tag=R)])
        for req in reqs:
            req.wait()
        eq(recv, torch.full((peer + 1,), float(peer)), f"batched sizes from {peer}")


def check_sparse():
    # Rank r holds (r, 0) = r + 1 and (0, 1) = 1: the sum has (0, 1) = N.
    idx = torch.tensor([[R % 4, 0], [0, 1]])
    t = torch.sparse_coo_tensor(idx, torch.tensor([float(R + 1), 1.0]), (4, 2))
    dist.all_reduce(t)
    want = torch.zeros(4, 2)
    for r in range(N):
        want[r % 4, 0] += r + 1
        want[0, 1] += 1
    assert t.is_sparse and t.is_coalesced(), "sparse all_reduce result is sparse, coalesced"
    eq(t.to_dense(), want, "sparse all_reduce")
    assert t._nnz() == int((want != 0).sum()), f"nnz {t._nnz()}"
    raises(lambda: dist.all_reduce(t.clone(), op=dist.ReduceOp.MAX), ValueError, "sums only",
           "sparse MAX")


def check_futures():
    pg = dist.distributed_c10d._get_default_group()
    fut = pg.allreduce([torch.full((3,), 2.0)]).get_future()
    got = fut.then(lambda f: [t * 3 for t in f.wait()]).wait()
    eq(got[0], torch.full((3,), 6.0 * N), "get_future then")
    assert pg.barrier().get_future().wait() == [], "barrier future"
    if N >= 2 and R < 2:
        t = torch.full((2,), float(R))
        work = pg.send([t], 1 - R, 0) if R == 0 else pg.recv([t], 1 - R, 0)
        work.get_future().wait()
        eq(t, torch.zeros(2), "recv future")
    dist.barrier()


def check_objects():
    objs = [None] * N
    dist.all_gather_object(objs, {"rank": R, "s": "x" * R})
    assert objs == [{"rank": r, "s": "x" * r} for r in range(N)], objs
    got = [None] * N if R == 0 else None
    dist.gather_object(("g", R), got, dst=0)
    if R == 0:
        assert got == [("g", r) for r in range(N)], got
    lst = [R, "b"] if R == 0 else [None, None]
    dist.broadcast_object_list(lst, src=0)
    assert lst == [0, "b"], lst
    out = [None]
    dist.scatter_object_list(out, [f"to {r}" for r in range(N)] if R == 0 else None, src=0)
    assert out == [f"to {R}"], out


def check_monitored_barrier():
    group = dist.new_group(backend="braid")
    group.monitored_barrier(datetime.timedelta(seconds=10))
    group.monitored_barrier(datetime.timedelta(seconds=10), wait_all_ranks=True)
    if R == 0:
        raises(lambda: group.monitored_barrier(datetime.timedelta(seconds=0.3)), RuntimeError,
               "Rank 1 failed to pass monitoredBarrier", "monitored barrier without rank 1")
        raises(lambda: group.monitored_barrier(datetime.timedelta(seconds=0)), RuntimeError,
               "Rank 0 timed out in monitoredBarrier", "monitored barrier, timeout 0")
    elif R > 1:
        raises(lambda: group.monitored_barrier(datetime.timedelta(seconds=0.3)), RuntimeError,
               "successfully reached monitoredBarrier", "monitored barrier left by rank 0")
    dist.barrier()
    if N < 3:
        return
    # Every missing rank named (wait_all_ranks); the first missing one named otherwise,
    # while the ranks that came are told rank 0 failed them. Fresh groups: ranks that
    # skip a barrier are a barrier behind. Rank 1 comes to `partial` well within 3 s.
    lonely, partial = dist.new_group(backend="braid"), dist.new_group(backend="braid")
    if R == 0:
        missing = ", ".join(str(r) for r in range(1, N))
        raises(lambda: lonely.monitored_barrier(datetime.timedelta(seconds=0.3),
                                                wait_all_ranks=True),
               RuntimeError, f"Ranks {missing} failed to pass monitoredBarrier", "wait_all_ranks")
    if R < 2:
        raises(lambda: partial.monitored_barrier(datetime.timedelta(seconds=3)), RuntimeError,
               "Rank 2 failed to pass" if R == 0 else "Rank 1 successfully reached",
               "monitored barrier without rank 2")
    dist.barrier()


def check_premul_sum():
    make = getattr(dist, "_make_nccl_premul_sum", None)
    if make is None:
        return
    t = torch.full((3,), float(R + 1))
    try:
        dist.all_reduce(t, op=make(2.0))
    except ValueError as e:  # torch hides the factor from Python
        assert "PREMUL_SUM" in str(e), e
    else:
        eq(t, torch.full((3,), 2.0 * sum(r + 1 for r in range(N))), "PREMUL_SUM")
    dist.barrier()


def check_timeouts():
    """A group's timeout ends a barrier only rank 0 enters; a call's timeout ends a wait."""
    short = dist.new_group(timeout=datetime.timedelta(seconds=1), backend="braid")
    if R == 0:
        raises(lambda: dist.barrier(group=short), RuntimeError, "Timed out", "group timeout")
    dist.barrier()
    dist.destroy_process_group(short)
    pair = dist.new_group(backend="braid")
    if R == 0:
        t = torch.zeros(2)
        work = dist.irecv(t, 1, group=pair)
        raises(lambda: work.wait(datetime.timedelta(seconds=0.2)), RuntimeError, "Timed out",
               "Work.wait timeout")
        dist.barrier()
        work.wait()  # the receive goes on, and completes once rank 1 sends
        eq(t, torch.ones(2), "receive after its wait timed out")
    else:
        dist.barrier()
        if R == 1:
            dist.send(torch.ones(2), 0, group=pair)
    dist.barrier()


def main():
    faulthandler.dump_traceback_later(int(os.environ.get("TORCH_GATED_DUMP_S", "150")), exit=True)
    dist.init_process_group("braid", init_method=torch_init_method("gated"), rank=RANK,
                            world_size=WORLD)
    for check in (check_coalesced, check_any_source, check_batched_tags, check_sparse,
                  check_futures, check_objects, check_monitored_barrier, check_premul_sum,
                  check_timeouts):
        check()
        print(f"rank {R}: {check.__name__}: ok", flush=True)
    dist.destroy_process_group()
    print(f"rank {R}: ok")


if __name__ == "__main__":
    main()
