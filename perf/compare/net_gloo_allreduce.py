"""Gloo's TCP all-reduce (torch.distributed, backend "gloo", float32 sum) for
perf/compare/net_allreduce.sh. One process per rank:

    RANK=r WORLD_SIZE=n MASTER_ADDR=10.77.0.1 MASTER_PORT=p GLOO_SOCKET_IFNAME=veth0 \
        /usr/bin/python3 net_gloo_allreduce.py 8 64 4096 ...

Rank 0 prints one row per size: bytes, time per call in us (the slowest
rank's mean), busbw in GB/s (size / time * 2(n-1)/n), and whether the sum was
exact (checked on a separate call). Tensors are allocated once per size.
"""

import sys
import time

import torch
import torch.distributed as dist


def iters_for(nbytes):
    if nbytes <= 1 << 16:
        return 200
    if nbytes <= 1 << 22:
        return 20
    return 3


def main():
    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        print("# gloo  bytes  time_us  busbw_GBps  exact", flush=True)
    for arg in sys.argv[1:]:
        nbytes = int(arg)
        count = max(1, nbytes // 4)
        pattern = torch.arange(count, dtype=torch.int64) % 7
        base = (pattern + rank + 1).to(torch.float32)
        t = base.clone()
        dist.all_reduce(t)  # warm-up
        iters = iters_for(nbytes)
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(t)  # in place: values grow, the time does not depend on them
        mine = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64)
        dist.all_reduce(mine, op=dist.ReduceOp.MAX)
        t.copy_(base)
        dist.all_reduce(t)
        want = (pattern * size + size * (size + 1) // 2).to(torch.float32)
        exact = bool(torch.equal(t, want))
        if rank == 0:
            busbw = nbytes / mine.item() / 1e9 * 2 * (size - 1) / size
            print(f"gloo {nbytes} {mine.item() * 1e6:.2f} {busbw:.3f} {'yes' if exact else 'NO'}",
                  flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
