"""torch.distributed all_reduce on the gloo backend (float32 sum, CPU tensors),
timed like mpi_coll_perf.c, for perf/compare/compare.py. What PyTorch CPU users
run today. One process per rank, started by the caller:

    RANK=r WORLD_SIZE=P TORCH_STORE=/tmp/file OMP_NUM_THREADS=1 \
        /usr/bin/python3 torch_gloo_perf.py [-t seconds] [-m min_iters] SIZE...

Rendezvous through a file (init_method file://). Per size: two warm-up calls, a
calibration that doubles the count until a batch takes an eighth of the target
time, then the timed batch; time is the slowest rank's mean per call. A last
call on fresh inputs is checked against exact sums. Rank 0 prints
    row torch-gloo allreduce P SIZE BYTES TIME_US ALGBW BUSBW WRONG
"""

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist


def time_batch(t, iters):
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(t)
    mine = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64)
    dist.all_reduce(mine, op=dist.ReduceOp.MAX)
    return float(mine)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-t", "--seconds", type=float, default=0.3)
    p.add_argument("-m", "--min-iters", type=int, default=3)
    p.add_argument("sizes", type=int, nargs="+")
    args = p.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", init_method="file://" + os.environ["TORCH_STORE"],
                            rank=rank, world_size=world)
    for nbytes in args.sizes:
        count = max(1, nbytes // 4)
        pattern = (torch.arange(count, dtype=torch.int64) % 7).to(torch.float32)
        base = pattern + (rank + 1)
        t = base.clone()
        dist.all_reduce(t)
        dist.all_reduce(t)
        iters = 1
        per_call = time_batch(t, iters)
        while per_call * iters < args.seconds / 8 and iters < 1000000:
            iters *= 2
            per_call = time_batch(t, iters)
        iters = max(args.min_iters, int(args.seconds / max(per_call, 1e-9)))
        per_call = time_batch(t, iters)  # in place: values grow, the time does not care
        t.copy_(base)
        dist.all_reduce(t)
        want = pattern * world + world * (world + 1) / 2
        wrong = torch.tensor([int((t != want).sum())], dtype=torch.int64)
        dist.all_reduce(wrong)
        if rank == 0:
            algbw = count * 4 / per_call / 1e9
            print(f"row torch-gloo allreduce {world} {nbytes} {count * 4} {per_call * 1e6:.3f} "
                  f"{algbw:.4f} {algbw * 2 * (world - 1) / world:.4f} {int(wrong)}", flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
