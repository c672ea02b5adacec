"""torch.distributed over Braid: python -m braid.run -n 2 torch_allreduce.py

braid.run starts the ranks with torchrun's variables (RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT), so init_process_group("braid") needs no arguments.
"""
import torch
import torch.distributed as dist

import braid
import braid.torch  # registers the backend "braid"

dist.init_process_group("braid")
rank, n = dist.get_rank(), dist.get_world_size()

t = torch.arange(1000, dtype=torch.float32) + rank      # sum: n * i + n(n-1)/2
dist.all_reduce(t)
want = torch.arange(1000, dtype=torch.float32) * n + n * (n - 1) // 2
exact = torch.equal(t, want)

parts = [torch.empty(3, dtype=torch.int64) for _ in range(n)]
dist.all_gather(parts, torch.full((3,), rank, dtype=torch.int64))
exact &= all(torch.equal(p, torch.full((3,), r, dtype=torch.int64)) for r, p in enumerate(parts))

model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1, bias=False))
model(torch.full((2, 4), float(rank + 1))).sum().backward()  # grad = 2 * (rank + 1) per weight
exact &= torch.equal(model.module.weight.grad, torch.full((1, 4), float(n + 1)))  # the mean

print(f"rank {rank} of {n}: torch.distributed over braid {braid.__file__}: "
      f"{'exact' if exact else 'WRONG'}", flush=True)
dist.destroy_process_group()
raise SystemExit(0 if exact else 1)
