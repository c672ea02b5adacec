"""torch.distributed with backend "braid", ranks as processes (run under braidrun).

Every call PyTorch users make through the backend, with exact integer-valued
data; exits 77 (skipped) where torch is not installed.
"""

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
TRI = N * (N + 1) // 2  # sum of rank + 1 over ranks


def eq(got, want, what):
    want = torch.as_tensor(want, dtype=got.dtype)
    assert torch.equal(got, want.expand_as(got)), f"{what}: got {got.tolist()}, want {want}"


def check_all_reduce():
    ops = {dist.ReduceOp.SUM: TRI, dist.ReduceOp.PRODUCT: 1, dist.ReduceOp.MAX: N,
           dist.ReduceOp.MIN: 1, dist.ReduceOp.AVG: TRI / N}
    for r in range(1, N + 1):
        ops[dist.ReduceOp.PRODUCT] *= r
    for op, want in ops.items():
        for dtype in (torch.float32, torch.float64, torch.bfloat16):
            t = torch.full((37,), float(R + 1), dtype=dtype)
            dist.all_reduce(t, op=op)
            eq(t, want, f"all_reduce {op} {dtype}")
    t = torch.arange(10, dtype=torch.int64) * (R + 1)
    dist.all_reduce(t)
    eq(t, torch.arange(10) * TRI, "all_reduce int64")
    flags = torch.tensor([R == 0, R != 0, True])
    dist.all_reduce(flags, op=dist.ReduceOp.MAX)
    eq(flags, torch.tensor([True, True, True]), "all_reduce bool MAX (or)")
    flags = torch.tensor([R == 0, R != 0, True])
    dist.all_reduce(flags, op=dist.ReduceOp.MIN)
    eq(flags, torch.tensor([False, False, True]), "all_reduce bool MIN (and)")
    try:
        dist.all_reduce(torch.zeros(4, 4).t())
    except ValueError as e:
        assert "contiguous" in str(e)
    else:
        raise AssertionError("non-contiguous tensor accepted")
    try:
        dist.all_reduce(torch.zeros(4, dtype=torch.int32), op=dist.ReduceOp.BAND)
    except ValueError as e:
        assert "not supported" in str(e)
    else:
        raise AssertionError("BAND accepted")


def check_gathers_and_scatters():
    outs = [torch.full((2, 3), -1, dtype=torch.int32) for _ in range(N)]
    dist.all_gather(outs, torch.full((2, 3), R, dtype=torch.int32))
    for p, o in enumerate(outs):
        eq(o, p, "all_gather")
    flat = torch.empty(N * 3)
    dist.all_gather_into_tensor(flat, torch.full((3,), float(R)))
    eq(flat, torch.arange(N).repeat_interleave(3).float(), "all_gather_into_tensor")

    out = torch.empty(2)
    dist.reduce_scatter(out, [torch.full((2,), float(p * (R + 1))) for p in range(N)])
    eq(out, R * TRI, "reduce_scatter")
    out = torch.empty(2, dtype=torch.int64)
    dist.reduce_scatter_tensor(out, torch.arange(2 * N) * (R + 1), op=dist.ReduceOp.MAX)
    eq(out, torch.tensor([2 * R, 2 * R + 1]) * N, "reduce_scatter_tensor")

    t = torch.full((5,), float(R))
    dist.broadcast(t, src=N - 1)
    eq(t, N - 1, "broadcast")
    gathered = [torch.full((2,), -1.0) for _ in range(N)] if R == 2 else None
    dist.gather(torch.full((2,), float(R)), gathered, dst=2)
    if R == 2:
        for p, o in enumerate(gathered):
            eq(o, p, "gather")
    got = torch.full((3,), -1, dtype=torch.int64)
    dist.scatter(got, [torch.full((3,), 7 * p) for p in range(N)] if R == 0 else None, src=0)
    eq(got, 7 * R, "scatter")

    t = torch.full((5,), float(R + 1))
    dist.reduce(t, dst=1, op=dist.ReduceOp.SUM)
    if R == 1:
        eq(t, TRI, "reduce on root")


def check_all_to_all():
    out = torch.empty(2 * N)
    dist.all_to_all_single(out, torch.arange(2 * N, dtype=torch.float32) + 100 * R)
    eq(out, torch.tensor([[100 * p + 2 * R, 100 * p + 2 * R + 1] for p in range(N)]).flatten(),
       "all_to_all_single")
    # Uneven: rank r sends p + 1 rows (of 2) to rank p, each row holding 10r + p.
    rows_in = [p + 1 for p in range(N)]
    inp = torch.cat([torch.full((p + 1, 2), 10 * R + p) for p in range(N)])
    out = torch.empty((N * (R + 1), 2), dtype=inp.dtype)
    dist.all_to_all_single(out, inp, [R + 1] * N, rows_in)
    eq(out, torch.cat([torch.full((R + 1, 2), 10 * p + R) for p in range(N)]),
       "all_to_all_single uneven")
    outs = [torch.empty(R + 1) for _ in range(N)]
    dist.all_to_all(outs, [torch.full((p + 1,), float(R)) for p in range(N)])
    for p, o in enumerate(outs):
        eq(o, p, "all_to_all lists")


def check_point_to_point():
    if R == 0:
        dist.send(torch.arange(6.0), dst=N - 1)
    elif R == N - 1:
        t = torch.zeros(6)
        dist.recv(t, src=0)
        eq(t, torch.arange(6.0), "send/recv")
    # Ring of isend/irecv bigger than the FIFOs, waited on out of order.
    got = torch.zeros(1 << 20)
    send = dist.isend(torch.full((1 << 20,), float(R)), (R + 1) % N)
    recv = dist.irecv(got, (R - 1) % N)
    recv.wait()
    send.wait()
    eq(got, (R - 1) % N, "isend/irecv ring")
    got = torch.zeros(1 << 20)
    reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, torch.full((1 << 20,), float(R)),
                                              (R - 1) % N),
                                   dist.P2POp(dist.irecv, got, (R + 1) % N)])
    for q in reqs:
        q.wait()
    eq(got, (R + 1) % N, "batch_isend_irecv")


def check_async_and_groups():
    t = torch.ones(1 << 16)
    works = [dist.all_reduce(t, async_op=True) for _ in range(3)]
    fut = works[-1].get_future()
    works[0].wait()
    fut.wait()
    assert all(w.is_completed() for w in works)
    eq(t, N ** 3, "three async all_reduces in order")
    dist.barrier()

    odd = dist.new_group([p for p in range(N) if p % 2])
    even = dist.new_group([p for p in range(N) if p % 2 == 0])
    mine = odd if R % 2 else even
    t = torch.tensor([float(R)])
    dist.all_reduce(t, group=mine)
    eq(t, sum(p for p in range(N) if p % 2 == R % 2), "new_group all_reduce")
    assert dist.get_backend(mine) == "braid"
    dist.barrier()


def check_cuda():
    if not torch.cuda.is_available():
        if R == 0:
            print("CUDA tensors: skipped: this torch sees no CUDA device")
        return
    t = torch.ones(4, device="cuda")
    try:
        dist.all_reduce(t)
    except braid.BraidError as e:
        assert "CUDA" in str(e), e  # the device hook says what is missing
    else:
        eq(t.cpu(), N, "CUDA all_reduce")


def main():
    dist.init_process_group("braid", init_method=torch_init_method("backend"), rank=RANK,
                            world_size=WORLD)
    assert dist.get_backend() == "braid" and dist.get_world_size() == N
    check_all_reduce()
    check_gathers_and_scatters()
    check_all_to_all()
    check_point_to_point()
    check_async_and_groups()
    check_cuda()
    dist.destroy_process_group()
    print(f"rank {R}: ok")


if __name__ == "__main__":
    main()
