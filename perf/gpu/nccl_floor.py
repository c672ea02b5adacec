"""NVIDIA's NCCL at 1 rank on this GPU, through torch.distributed ("nccl" backend, the NCCL
that PyTorch ships): the time floor a device collective cannot beat here, per size.

All-reduce at 1 rank is in place (NCCL launches a kernel that has nothing to move), so it
measures the launch and stream cost; all_gather_into_tensor at 1 rank is an out-of-place
copy, so it also measures the device's copy bandwidth. Times are CUDA-event medians over
`iters` calls after warm-up. Usage: python3 perf/gpu/nccl_floor.py [max_bytes]
"""
import os
import sys

import torch
import torch.distributed as dist


def timed(fn, iters):
    start = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    end = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    for i in range(iters):
        start[i].record()
        fn()
        end[i].record()
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) * 1000.0 for s, e in zip(start, end))
    return times[len(times) // 2]


def main():
    max_bytes = int(sys.argv[1]) if len(sys.argv) > 1 else 256 << 20
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
    print(f"torch {torch.__version__}, NCCL {torch.cuda.nccl.version()}, "
          f"{torch.cuda.get_device_name(0)}")
    print(f"{'bytes':>12} {'all_reduce us':>14} {'all_gather us':>14} {'copy GB/s':>10}")
    size = 8
    while size <= max_bytes:
        x = torch.ones(size // 4, dtype=torch.float32, device="cuda")
        y = torch.empty_like(x)
        iters = 50 if size >= (64 << 20) else 200
        ar = timed(lambda: dist.all_reduce(x), iters)
        ag = timed(lambda: dist.all_gather_into_tensor(y, x), iters)
        print(f"{size:>12} {ar:>14.2f} {ag:>14.2f} {2 * size / ag / 1e3:>10.1f}")
        size *= 8 if size < (1 << 20) else 4
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
