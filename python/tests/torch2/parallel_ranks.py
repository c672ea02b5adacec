"""PyTorch 2.x's parallelism stack on one backend, checked against one rank.

    python -m braid.run -n 4 parallel_ranks.py fsdp2,tp2d [--backends gloo,braid] --out r.json

One rank of a job: `python -m braid.run` (or torchrun) gives it RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT. Each check runs on each backend in turn (gloo, then
braid: side by side, same seeds), each on a default group of its own made by
dist.init_process_group(BACKEND) over the job's store. The checks:

  fsdp2     fully_shard (FSDP2) on a small transformer, 3 SGD steps
  tp2d      ColwiseParallel/RowwiseParallel on the "tp" dimension of a 2-D DeviceMesh
            (dp x tp), fully_shard on "dp", 3 SGD steps (4 ranks: 2 x 2)
  pipeline  torch.distributed.pipelining, ScheduleGPipe then Schedule1F1B, 2 stages,
            4 microbatches, 2 SGD steps each (2 ranks)
  compile   functional collectives (all_reduce, all_gather_tensor, reduce_scatter_tensor,
            all_to_all_single) in a torch.compile'd function (inductor, fullgraph)

Every rank also computes the same training on one process (no group: the whole
batch, the same seeds) and requires the distributed run to match it. The models
are float64: the distributed run adds the same per-sample terms as the one-rank run
in another order (split over ranks and microbatches), and a sum of n terms
reordered differs by at most ~n * 2**-53 * sum(|term|); with <= 64 terms of O(1)
after a few steps that is < 1e-13, so TOL (1e-9) leaves a wide margin, while a
lost rank's share, a doubled reduction or a wrong shard moves results by >= 1e-3
(each check also requires its training to have moved the weights by more than
that). compile's inputs are integers in float64 and must match exactly.

Rank 0 writes each check's outcome on every rank, its losses and its largest
difference to --out (JSON) as it goes; the exit code is 0 when all passed. Every group
has --timeout seconds, so a stuck collective raises instead of hanging; after a
failure the job's later checks are not run (reported "not run").
"""

import argparse
import copy
import datetime
import json
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.environ.get("BRAID_PYTHONPATH", os.path.join(_HERE, "..", "..")))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

TOL = 1e-9
MOVED = 1e-3
torch.set_default_dtype(torch.float64)


class Block(nn.Module):
    """Pre-norm transformer block: causal self-attention and an MLP."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, self.heads, d // self.heads).unbind(2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                           v.transpose(1, 2), is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class Transformer(nn.Module):
    def __init__(self, vocab=32, dim=16, heads=2, layers=2, seq=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(seq, dim) * 0.1)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos[: tokens.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def lm_loss(model, tokens):
    logits = model(tokens[:, :-1])
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))


def full(t):
    """A parameter or gradient as a plain tensor (DTensors gathered)."""
    t = t.detach()
    return t.full_tensor() if hasattr(t, "full_tensor") else t


def compare(what, got, want, initial=None, exact=False):
    """The largest |got - want| over got's tensors; raises past TOL (0 if exact), and
    where initial is given, unless the one-rank training moved got's weights past MOVED."""
    worst = 0.0
    for name, g in got.items():
        diff = (full(g) - want[name]).abs().max().item()
        worst = max(worst, diff)
        if diff > (0 if exact else TOL):
            raise AssertionError(f"{what}: {name} differs from one rank by {diff:.3e}")
    if initial is not None:
        moved = max((want[n] - initial[n]).abs().max().item() for n in got)
        if moved <= MOVED:
            raise AssertionError(f"{what}: training moved the weights only {moved:.3e}")
    return worst


def mean_over(loss, group=None):
    """The mean of the ranks' losses (each rank's share of an equal split)."""
    t = loss.detach().clone()
    dist.all_reduce(t, group=group)
    return t.item() / dist.get_world_size(group)


# ---- checks -----------------------------------------------------------------------------------

def check_fsdp2(rank, world, steps=3, per_rank=2):
    from torch.distributed.fsdp import fully_shard
    torch.manual_seed(0)
    model = Transformer()
    reference = copy.deepcopy(model)
    initial = {n: p.detach().clone() for n, p in model.named_parameters()}
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.5)
    losses, ref_losses = [], []
    for step in range(steps):
        torch.manual_seed(100 + step)
        tokens = torch.randint(0, 32, (per_rank * world, 9))
        mine = tokens[rank * per_rank:(rank + 1) * per_rank]
        loss = lm_loss(model, mine)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(mean_over(loss))
        ref_loss = lm_loss(reference, tokens)
        ref_loss.backward()
        ref_opt.step()
        ref_opt.zero_grad()
        ref_losses.append(ref_loss.item())
    want = {n: p.detach() for n, p in reference.named_parameters()}
    worst = compare("fsdp2 parameters", dict(model.named_parameters()), want, initial)
    return losses, ref_losses, worst


class MLP(nn.Module):
    def __init__(self, dim=8, layers=2):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.ModuleDict({"w1": nn.Linear(dim, 4 * dim), "w2": nn.Linear(4 * dim, dim)})
            for _ in range(layers))

    def forward(self, x):
        for layer in self.layers:
            x = x + layer["w2"](torch.tanh(layer["w1"](x)))
        return x


def check_tp2d(rank, world, steps=3, per_dp=3):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                   parallelize_module)
    if world != 4:
        raise SystemExit("tp2d runs on 4 ranks (2 x 2)")
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    dp_rank = mesh["dp"].get_local_rank()
    torch.manual_seed(0)
    model = MLP()
    reference = copy.deepcopy(model)
    initial = {n: p.detach().clone() for n, p in model.named_parameters()}
    plan = {}
    for i in range(len(model.layers)):
        plan[f"layers.{i}.w1"] = ColwiseParallel()
        plan[f"layers.{i}.w2"] = RowwiseParallel()
    parallelize_module(model, mesh["tp"], plan)
    fully_shard(model, mesh=mesh["dp"])
    sharded = {n: type(p.data).__name__ for n, p in model.named_parameters()}
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.5)
    losses, ref_losses = [], []
    for step in range(steps):
        torch.manual_seed(100 + step)
        x = torch.randn(per_dp * 2, 8)
        y = torch.randn(per_dp * 2, 8)
        mine = slice(dp_rank * per_dp, (dp_rank + 1) * per_dp)
        loss = F.mse_loss(model(x[mine]), y[mine])
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(mean_over(loss))  # each dp pair twice: still the dp mean
        ref_loss = F.mse_loss(reference(x), y)
        ref_loss.backward()
        ref_opt.step()
        ref_opt.zero_grad()
        ref_losses.append(ref_loss.item())
    if set(sharded.values()) != {"DTensor"}:
        raise AssertionError(f"tp2d: parameters not DTensors: {sharded}")
    want = {n: p.detach() for n, p in reference.named_parameters()}
    worst = compare("tp2d parameters", dict(model.named_parameters()), want, initial)
    return losses, ref_losses, worst


def _pipeline_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(),
                         nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 4))


def _run_pipeline(schedule_cls, rank, world, steps, batch=8, chunks=4):
    from torch.distributed.pipelining import PipelineStage
    model = _pipeline_model()
    reference = copy.deepcopy(model)
    initial = {n: p.detach().clone() for n, p in model.named_parameters()}
    per_stage = len(model) // world + (len(model) % world > 0)
    lo, hi = rank * per_stage, min(len(model), (rank + 1) * per_stage)
    mine = nn.Sequential(*[model[i] for i in range(lo, hi)])
    stage = PipelineStage(mine, rank, world, torch.device("cpu"))
    schedule = schedule_cls(stage, n_microbatches=chunks, loss_fn=F.mse_loss)
    opt = torch.optim.SGD(mine.parameters(), lr=0.2)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.2)
    losses, ref_losses = [], []
    for step in range(steps):
        torch.manual_seed(100 + step)
        x, y = torch.randn(batch, 8), torch.randn(batch, 4)
        micro = []
        if rank == 0:
            schedule.step(x)
        elif rank == world - 1:
            schedule.step(target=y, losses=micro)
        else:
            schedule.step()
        opt.step()
        opt.zero_grad()
        # The last stage's loss, the mean over microbatches, sent to every rank.
        loss = torch.tensor(sum(m.item() for m in micro) / chunks if micro else 0.0)
        dist.broadcast(loss, world - 1)
        losses.append(loss.item())
        ref_loss = F.mse_loss(reference(x), y)
        ref_loss.backward()
        ref_opt.step()
        ref_opt.zero_grad()
        ref_losses.append(ref_loss.item())
        if abs(losses[-1] - ref_losses[-1]) > TOL:
            raise AssertionError(f"{schedule_cls.__name__}: step {step} loss {losses[-1]!r}, "
                                 f"one rank {ref_losses[-1]!r}")
    got = {f"{lo + int(n.split('.')[0])}.{n.split('.', 1)[1]}": p
           for n, p in mine.named_parameters()}
    want = {n: p.detach() for n, p in reference.named_parameters()}
    worst = compare(f"{schedule_cls.__name__} stage {rank}", got, want, initial)
    return losses, ref_losses, worst


def check_pipeline(rank, world, steps=2):
    from torch.distributed.pipelining import Schedule1F1B, ScheduleGPipe
    losses, ref_losses, worst = [], [], 0.0
    for schedule_cls in (ScheduleGPipe, Schedule1F1B):
        got, want, diff = _run_pipeline(schedule_cls, rank, world, steps)
        losses += got
        ref_losses += want
        worst = max(worst, diff)
    return losses, ref_losses, worst


def check_compile(rank, world):
    import torch._dynamo
    import torch.distributed._functional_collectives as funcol
    torch._dynamo.reset()  # the other backend's run compiled its own group's graph
    torch._dynamo.utils.counters.clear()
    group = dist.group.WORLD

    def step(x):
        y = funcol.all_reduce(x * 2 + 1, "sum", group)
        z = funcol.all_gather_tensor(y - x, 0, group)
        w = funcol.reduce_scatter_tensor(z * 3, "sum", 0, group)
        v = funcol.all_to_all_single(w + rank, None, None, group)
        return v * 2 - 1

    compiled = torch.compile(step, fullgraph=True)
    n = 4 * world

    def inputs(r, i):
        return torch.arange(n, dtype=torch.float64) * (r + 1) + 10 * i

    def expected(i):
        """step(), computed here from every rank's input."""
        xs = [inputs(r, i) for r in range(world)]
        y = sum(x * 2 + 1 for x in xs)
        z = [torch.cat([y - xs[s] for s in range(world)]) for _ in range(world)]  # per rank
        zsum = sum(zr * 3 for zr in z)
        w = list(zsum.chunk(world))
        v_parts = [(w[s] + s).chunk(world)[rank] for s in range(world)]
        return torch.cat(v_parts) * 2 - 1

    losses, ref_losses, worst = [], [], 0.0
    start = time.monotonic()
    for i in range(3):
        got = compiled(inputs(rank, i))
        want = expected(i)
        worst = max(worst, compare("compiled funcol", {"out": got}, {"out": want}, exact=True))
        losses.append(got.sum().item())
        ref_losses.append(want.sum().item())
    compile_s = time.monotonic() - start
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    if graphs != 1:
        raise AssertionError(f"compiled funcol: {graphs} graphs (expected 1, no recompiles)")
    return losses, ref_losses, worst, {"compile_and_run_s": round(compile_s, 1)}


CHECKS = {"fsdp2": check_fsdp2, "tp2d": check_tp2d, "pipeline": check_pipeline,
          "compile": check_compile}


def run_one(check, backend, store, timeout):
    """One check on a fresh default group of `backend`; returns rank 0's record."""
    dist.init_process_group(backend, store=dist.PrefixStore(f"{check}/{backend}", store),
                            rank=int(os.environ["RANK"]),
                            world_size=int(os.environ["WORLD_SIZE"]),
                            timeout=datetime.timedelta(seconds=timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    start = time.monotonic()
    result = CHECKS[check](rank, world)
    extra = result[3] if len(result) == 4 else {}
    losses, ref_losses, worst = result[:3]
    for got, want in zip(losses, ref_losses):
        if abs(got - want) > TOL:
            raise AssertionError(f"{check}: losses {losses} differ from one rank's {ref_losses}")
    dist.barrier()
    group = dist.group.WORLD
    cpu = group._get_backend(torch.device("cpu"))  # the group itself for the Python group
    record = {"losses": losses, "one_rank_losses": ref_losses, "max_diff": worst,
              "seconds": round(time.monotonic() - start, 1),
              "group": f"{type(group).__module__}.{type(group).__name__}, CPU backend "
                       f"{type(cpu).__module__}.{type(cpu).__name__}", **extra}
    dist.destroy_process_group()
    return record


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checks", help=f"comma-separated, of {', '.join(sorted(CHECKS))}")
    ap.add_argument("--backends", default="gloo,braid")
    ap.add_argument("--timeout", type=int, default=45, help="each group's timeout, seconds")
    ap.add_argument("--out", help="rank 0 writes the results here (JSON), check by check")
    args = ap.parse_args()
    checks, backends = args.checks.split(","), args.backends.split(",")
    if "braid" in backends:
        import braid.torch  # noqa: F401  registers "braid"
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    # One store for the job (MASTER_ADDR:MASTER_PORT, as env:// makes it); each group
    # rendezvous under its own prefix, and every rank's outcome is told through it, so
    # that rank 0 reports a failure seen on another rank even when the group is broken.
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world,
                          rank == 0, timeout=datetime.timedelta(seconds=args.timeout + 30))
    results, failed = {"torch": torch.__version__, "world_size": world, "checks": {}}, False
    for check in checks:
        for backend in backends:
            key = f"{check}/{backend}"
            if failed:  # a broken group may leave ranks out of step: stop here
                outcome, record = "not run", {}
            else:
                try:
                    outcome, record = "ok", run_one(check, backend, store, args.timeout)
                except Exception as e:  # noqa: BLE001  every failure is reported
                    outcome, record = f"FAIL {type(e).__name__}: {e}"[:400], {}
                    print(f"rank {rank}: {key}: {outcome}", file=sys.stderr, flush=True)
            store.set(f"outcome/{key}/{rank}", outcome)
            outcomes = [store.get(f"outcome/{key}/{r}").decode() for r in range(world)]
            bad = [f"rank {r}: {o}" for r, o in enumerate(outcomes) if o != "ok"]
            failed = failed or bool(bad)
            if rank == 0:
                results["checks"][key] = {"outcome": "; ".join(bad) if bad else "ok", **record}
                if args.out:
                    with open(args.out, "w") as f:
                        json.dump(results, f, indent=1)
                print(f"{key} {world} ranks: {'; '.join(bad) or 'ok'}"
                      + (f", max diff {record['max_diff']:.2e}, {record['seconds']} s"
                         if record and not bad else ""), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
