"""torch.distributed with backend "braid" on CUDA tensors, ranks as processes on one GPU.

Run under braidrun where torch has CUDA (scripts/gpu_check.sh); exits 77 (skipped)
elsewhere. Every call is enqueued on torch's current stream; results are read after
the stream (or the Work's wait) says they are there.
"""

import sys

from braid_test_env import RANK, WORLD, torch_init_method

try:
    import torch
    import torch.distributed as dist
except ImportError:
    print("skipped: torch is not installed")
    sys.exit(77)
if not torch.cuda.is_available():
    print("skipped: torch has no CUDA device")
    sys.exit(77)

import braid.torch  # noqa: E402,F401

R, N = RANK, WORLD
dev = torch.device("cuda", 0)


def eq(got, want, what):
    want = torch.as_tensor(want, dtype=got.dtype, device=got.device)
    assert torch.equal(got, want.expand_as(got)), f"{what}: got {got.tolist()}, want {want}"


def check_stream_order():
    """The orders ProcessGroupNCCL gives CUDA tensors: after the producer's work on the
    current stream (no host sync), tensors kept for the stream, wait() orders the caller's
    stream after the call, a call on a side stream correct without a host sync."""
    # Producer queued behind a long kernel: the call must see its result, not the tensor's
    # state when the call was made.
    t = torch.full((1 << 22,), 1.0, device=dev)
    torch.cuda._sleep(50_000_000)  # ~tens of ms of GPU time ahead of the producer
    t.mul_(float(R + 2))
    dist.all_reduce(t)
    eq(t, sum(r + 2 for r in range(N)), "all_reduce after a queued producer")

    # Async on a side stream; the main stream waits through work.wait() only.
    side = torch.cuda.Stream(dev)
    main = torch.cuda.current_stream(dev)
    side.wait_stream(main)
    with torch.cuda.stream(side):
        u = torch.full((1 << 20,), float(R + 1), device=dev)
        torch.cuda._sleep(20_000_000)
        u.add_(1.0)
        work = dist.all_reduce(u, async_op=True)
    work.wait()  # on main: main now runs after the call
    got = u.clone()  # a read on the main stream
    eq(got, sum(r + 2 for r in range(N)), "wait() orders the current stream")

    # The caching allocator must not hand a tensor's memory out while the call still uses
    # it: drop the tensor before the stream has run the call, then allocate its size again.
    with torch.cuda.stream(side):
        v = torch.full((1 << 20,), float(R + 1), device=dev)
        torch.cuda._sleep(20_000_000)
        work = dist.all_reduce(v, async_op=True)
        fut = work.get_future()
        del v
        w = torch.full((1 << 20,), -7.0, device=dev)
    fut.wait()
    torch.cuda.synchronize()
    eq(w, -7.0, "a tensor allocated after a dropped one (recordStream)")
    print(f"rank {R}: stream order ok ({braid.torch.IMPLEMENTATION} group)")


def main():
    dist.init_process_group("braid", init_method=torch_init_method("cuda"), rank=R,
                            world_size=N)
    check_stream_order()
    # A side stream: the calls go on it, and reading on it sees them.
    side = torch.cuda.Stream(dev)
    with torch.cuda.stream(side):
        t = torch.full((1 << 20,), float(R + 1), device=dev)
        dist.all_reduce(t)
        eq(t, N * (N + 1) / 2, "all_reduce on a side stream")

    t = torch.full((1000,), R + 1, dtype=torch.int64, device=dev)
    work = dist.all_reduce(t, op=dist.ReduceOp.MAX, async_op=True)
    work.wait()
    eq(t, N, "all_reduce max, async")

    out = torch.empty(N * 3, dtype=torch.float16, device=dev)
    dist.all_gather_into_tensor(out, torch.full((3,), float(R), dtype=torch.float16, device=dev))
    eq(out, torch.arange(N, dtype=torch.float16).repeat_interleave(3), "all_gather_into_tensor")

    outs = [torch.empty(2, device=dev) for _ in range(N)]
    dist.all_gather(outs, torch.full((2,), float(R), device=dev))
    for p, o in enumerate(outs):
        eq(o, p, f"all_gather [{p}]")

    rs = torch.empty(4, dtype=torch.bfloat16, device=dev)
    dist.reduce_scatter_tensor(rs, torch.ones(N * 4, dtype=torch.bfloat16, device=dev))
    eq(rs, N, "reduce_scatter_tensor")

    b = torch.full((5,), R, dtype=torch.int32, device=dev)
    dist.broadcast(b, src=N - 1)
    eq(b, N - 1, "broadcast")

    a2a = torch.arange(N * 2, dtype=torch.float32, device=dev) + 100 * R
    got = torch.empty_like(a2a)
    dist.all_to_all_single(got, a2a)
    want = torch.cat([torch.arange(2 * R, 2 * R + 2, dtype=torch.float32) + 100 * p
                      for p in range(N)])
    eq(got, want, "all_to_all_single")

    recv = torch.empty(7, device=dev)
    ops = [dist.P2POp(dist.isend, torch.full((7,), float(R), device=dev), (R + 1) % N),
           dist.P2POp(dist.irecv, recv, (R - 1) % N)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    eq(recv, (R - 1) % N, "batch_isend_irecv")

    torch.cuda.synchronize()
    dist.destroy_process_group()
    print(f"rank {R}: torch CUDA ok")


if __name__ == "__main__":
    main()
