"""torch.distributed all_reduce on CPU tensors: backend "braid" against "gloo", same run.

    build/tools/braidrun/braidrun -n 4 /usr/bin/python3 perf/compare/torch_allreduce.py
    python3 -m braid.run -n 4 perf/compare/torch_allreduce.py -e 1M

Both process groups live in the same processes (gloo is the default group,
braid a new_group over the same ranks); each size is timed on gloo, then on
braid, with the same float32 tensor. Time per call is the slowest rank's mean
over the iterations (nccl-tests' -a 3); busbw = size / time * 2(n-1)/n.
Rank 0 prints one row per size and checks every result against the exact sum.
"""

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import braid.torch  # noqa: E402,F401  (registers the backend)


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1].upper() in units:
        return int(float(text[:-1]) * units[text[-1].upper()])
    return int(text)


def time_allreduce(t, group, seconds, max_iters):
    """Mean seconds per call over enough iterations to fill ``seconds``."""
    dist.all_reduce(t, group=group)  # warm-up: connections, schedules, first touch
    iters, spent = 1, 0.0
    while True:
        dist.barrier(group=group)
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(t, group=group)
        spent = time.perf_counter() - start
        if spent >= seconds / 4 or iters >= max_iters:
            break
        iters = min(max_iters, iters * 4)
    # One agreed count, so every rank runs the same number of calls.
    n = torch.tensor([iters], dtype=torch.int64)
    dist.all_reduce(n, op=dist.ReduceOp.MAX, group=group)
    iters = int(n)
    dist.barrier(group=group)
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(t, group=group)
    per_call = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64)
    dist.all_reduce(per_call, op=dist.ReduceOp.MAX, group=group)
    return float(per_call)


def check(group, nbytes, rank, world):
    count = max(1, nbytes // 4)
    t = torch.full((count,), float(rank + 1))
    dist.all_reduce(t, group=group)
    return int((t != world * (world + 1) / 2).sum())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-b", "--min-bytes", default="8")
    p.add_argument("-e", "--max-bytes", default="64M")
    p.add_argument("-f", "--factor", type=int, default=4)
    p.add_argument("-t", "--seconds", type=float, default=0.4,
                   help="time spent per size and backend")
    p.add_argument("-n", "--max-iters", type=int, default=2000)
    args = p.parse_args()

    rank = int(os.environ.get("BRAID_RANK", os.environ.get("RANK", "0")))
    world = int(os.environ.get("BRAID_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1")))
    tag = os.environ.get("BRAID_SECRET", os.environ.get("MASTER_PORT", "x"))[:16]
    store = os.path.join(tempfile.gettempdir(), f"braid-torch-bench-{tag}")
    dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=world)
    groups = {"gloo": dist.group.WORLD, "braid": dist.new_group(backend="braid")}

    sizes = []
    size = parse_size(args.min_bytes)
    while size <= parse_size(args.max_bytes):
        sizes.append(size)
        size *= args.factor
    if sizes[-1] != parse_size(args.max_bytes):
        sizes.append(parse_size(args.max_bytes))

    factor = 2 * (world - 1) / world
    if rank == 0:
        print(f"# torch {torch.__version__}, {world} ranks, float32 sum, CPU tensors; "
              "time = slowest rank's mean per call")
        print(f"# {'size (B)':>10} {'gloo us':>10} {'gloo busbw':>11} {'braid us':>10} "
              f"{'braid busbw':>12} {'busbw x':>8} {'#wrong':>7}")
    wrong_total = 0
    for nbytes in sizes:
        t = torch.ones(max(1, nbytes // 4))
        row = {}
        wrong = 0
        for name, group in groups.items():
            row[name] = time_allreduce(t, group, args.seconds, args.max_iters)
            wrong += check(group, nbytes, rank, world)
        wrong_total += wrong
        if rank == 0:
            bw = {k: nbytes / v * factor / 1e9 for k, v in row.items()}
            print(f"  {nbytes:>10} {row['gloo'] * 1e6:>10.1f} {bw['gloo']:>11.3f} "
                  f"{row['braid'] * 1e6:>10.1f} {bw['braid']:>12.3f} "
                  f"{bw['braid'] / bw['gloo']:>8.2f} {wrong:>7}", flush=True)
    dist.destroy_process_group()
    return 1 if wrong_total else 0


if __name__ == "__main__":
    sys.exit(main())
