"""A plain env:// data-parallel training script, as users write it for torchrun.

    python3 -m torch.distributed.run --nproc_per_node 2 torchrun_train.py --steps 40

Nothing in it knows about the launcher: rank, world size and the rendezvous come
from torchrun's variables through init_process_group's env:// default; the one
Braid-specific line is the import that registers the backend. Each rank fits a
small MLP to a linear target on its own data through DistributedDataParallel,
then checks that every replica holds the same parameters (all_gather) and that
the loss fell. scripts/ci/launchers.sh runs it, and kills some of its ranks.
"""

import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import braid.torch  # noqa: F401  registers backend "braid"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()

    dist.init_process_group("braid")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ["LOCAL_RANK"])

    torch.manual_seed(0)  # the same initial model on every rank
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    ddp = DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(1000 + rank)  # each rank its own samples
    target = torch.linspace(-1, 1, 16).unsqueeze(1)

    first = last = None
    for step in range(args.steps):
        x = torch.randn(64, 16, generator=data)
        loss = torch.nn.functional.mse_loss(ddp(x), x @ target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        last = loss.item()
        first = last if first is None else first
        if step % 10 == 0:
            print(f"rank {rank} step {step} loss {last:.4f}", flush=True)

    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    replicas = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(replicas, flat)
    assert all(torch.equal(r, replicas[0]) for r in replicas), "replicas differ"
    assert last < first / 2, f"loss did not fall: {first:.4f} -> {last:.4f}"
    print(f"rank {rank} of {world} (local {local_rank}): loss {first:.4f} -> {last:.4f}, "
          f"{world} replicas equal", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
