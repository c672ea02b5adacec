"""Run by ``python -m braid.run -n 3`` (test Python.RunModule): each rank checks its
launcher environment, then a plain env:// torch.distributed job on backend "braid"
(or braid.init() where torch is missing)."""

import os
import sys

env = os.environ
rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
assert (rank, world) == (int(env["BRAID_RANK"]), int(env["BRAID_WORLD_SIZE"])), dict(env)
assert env["LOCAL_RANK"] == env["RANK"] and env["MASTER_ADDR"] and env["MASTER_PORT"]
assert sys.argv[1:] == ["--flag", "value"], sys.argv  # the script's own arguments

try:
    import torch
    import torch.distributed as dist
except ImportError:
    import numpy as np

    import braid
    comm = braid.init()
    total = comm.all_reduce(np.array([rank + 1]))
else:
    import braid.torch  # noqa: F401

    dist.init_process_group("braid")  # env://, from the variables braid.run set
    total = torch.tensor([rank + 1])
    dist.all_reduce(total)
    dist.destroy_process_group()
assert int(total[0]) == world * (world + 1) // 2, total
print(f"rank {rank} of {world}: ok")
