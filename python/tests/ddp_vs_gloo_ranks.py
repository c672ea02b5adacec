"""DistributedDataParallel trains to the same losses with backend "braid" as with "gloo".

Run under braidrun. Both backends live in the same job (gloo is the default
group, braid a new_group over all ranks); two copies of one small model start
from the same weights, see the same batches, and take 20 SGD steps each. Every
rank's loss must agree within 1e-5 at every step, and the loss must fall (the
gradients really were averaged and applied). Exits 77 without torch.

TORCH_DDP_DEVICE=cuda trains on CUDA tensors (every rank on device 0; gloo takes
CUDA tensors too), as scripts/gpu_torch_check.sh runs it; exits 77 without CUDA.
"""

import os
import sys

from braid_test_env import RANK, WORLD, torch_init_method

try:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
except ImportError:
    print("skipped: torch is not installed")
    sys.exit(77)

import braid.torch  # noqa: E402,F401

DEVICE = torch.device(os.environ.get("TORCH_DDP_DEVICE", "cpu"), 0)
if DEVICE.type == "cuda" and not torch.cuda.is_available():
    print("skipped: torch has no CUDA device")
    sys.exit(77)
STEPS = 20
TOLERANCE = 1e-5


def make_model():
    torch.manual_seed(1234)  # same weights for both copies, on every rank
    return torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(),
                               torch.nn.Linear(64, 64), torch.nn.Tanh(),
                               torch.nn.Linear(64, 4)).to(DEVICE)


def batch(step):
    g = torch.Generator().manual_seed(1000 * step + RANK)  # this rank's slice of step's data
    x = torch.randn(32, 16, generator=g)
    y = torch.stack([x[:, :4].sum(1), x[:, 4:8].prod(1), x[:, 8:12].max(1).values,
                     x[:, 12:].mean(1)], dim=1)
    return x.to(DEVICE), y.to(DEVICE)


def train(group):
    model = DDP(make_model(), process_group=group, bucket_cap_mb=0.01)  # several buckets
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for step in range(STEPS):
        x, y = batch(step)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def main():
    dist.init_process_group("gloo", init_method=torch_init_method("ddp"), rank=RANK,
                            world_size=WORLD)
    braid_group = dist.new_group(backend="braid")
    gloo = train(dist.group.WORLD)
    braid_losses = train(braid_group)
    worst = max(abs(a - b) for a, b in zip(gloo, braid_losses))
    print(f"rank {RANK} ({DEVICE.type}): losses {gloo[0]:.6f} -> {gloo[-1]:.6f}; "
          f"largest |gloo - braid| over {STEPS} steps: {worst:.3g}")
    assert worst <= TOLERANCE, list(zip(gloo, braid_losses))
    assert braid_losses[-1] < 0.8 * braid_losses[0], braid_losses
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
