"""Per-call cost of an all_reduce through the torch backend "braid" (its native C++ group
and its Python group), against gloo and against Braid's C all_reduce_perf, at small
sizes where the call's overhead is the time.

    python3 perf/compare/torch_overhead.py [--ranks 2 4] [--sizes 8 64K] [--build build]
    python3 perf/compare/torch_overhead.py --python /opt/braid/torch2-venv/bin/python

For each rank count it starts the ranks under braidrun twice: once running this file as
a rank (float32 sum, in place; gloo is the default group; "braid" a new_group of the same
ranks served by the native group where it loads; the Python group, PyProcessGroupBraid, a
second new_group; and braid.Communicator, the Python layer under the Python group, on
NumPy arrays), once running all_reduce_perf (in place, -a 3). Each measure is interleaved with the
others, size by size, and is the slowest rank's mean over --iters calls after a warm-up.
Rank 0 prints one row per size: microseconds per call, and braid's torch backend over
gloo and over the C call.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units \
        else int(text)


def rank_main(args):
    sys.path.insert(0, os.environ.get("BRAID_PYTHONPATH", os.path.join(HERE, "..", "..",
                                                                        "python")))
    import numpy as np
    import torch
    import torch.distributed as dist

    import braid
    import braid.torch  # noqa: F401  registers the backend

    rank, world = int(os.environ["BRAID_RANK"]), int(os.environ["BRAID_WORLD_SIZE"])
    store = os.path.join(tempfile.gettempdir(), f"braid-overhead-{os.environ['BRAID_SECRET'][:16]}")
    dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=world)
    groups = {"gloo": dist.group.WORLD, "braid": dist.new_group(backend="braid")}
    native, braid.torch._native = braid.torch._native, None  # the next group: Python's
    groups["braid_py"] = dist.new_group(backend="braid")
    braid.torch._native = native
    comm = groups["braid_py"].communicator

    def timed(call, iters):
        for _ in range(max(10, iters // 20)):
            call()
        comm.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            call()
        per = np.array([(time.perf_counter() - start) / iters])
        comm.all_reduce(per, op="max")
        return float(per[0]) * 1e6

    rows = []
    for nbytes in args.sizes:
        t = torch.ones(max(1, nbytes // 4))
        a = np.ones(max(1, nbytes // 4), dtype=np.float32)
        row = {"size": nbytes}
        for rep in range(args.repeats):  # interleaved: drift hits every column alike
            for name, group in groups.items():
                us = timed(lambda g=group: dist.all_reduce(t, group=g), args.iters)
                row[name] = min(row.get(name, us), us)
            us = timed(lambda: comm.all_reduce(a), args.iters)
            row["communicator"] = min(row.get("communicator", us), us)
            us = timed(lambda: dist.all_reduce(t, group=groups["braid"], async_op=True).wait(),
                       args.iters)
            row["braid_async"] = min(row.get("braid_async", us), us)
        rows.append(row)
    if rank == 0:
        print(json.dumps({"impl": braid.torch.IMPLEMENTATION, "torch": torch.__version__,
                          "rows": rows}))
    dist.destroy_process_group()


def launch(args, n, build):
    braidrun = os.path.join(build, "tools", "braidrun", "braidrun")
    env = dict(os.environ)
    env.setdefault("BRAID_PYTHONPATH", os.path.join(build, "python"))
    sizes = [str(s) for s in args.sizes]
    out = subprocess.run([braidrun, "-n", str(n), args.python, os.path.abspath(__file__),
                          "--rank", "--iters", str(args.iters), "--repeats", str(args.repeats),
                          "--sizes", *sizes], env=env, check=True, capture_output=True,
                         text=True).stdout
    report = json.loads([ln for ln in out.splitlines() if ln.startswith("[0] {")][0][4:])
    rows = report["rows"]
    c_us = {}
    for _ in range(args.repeats):  # separate launches: the best of as many as the others
        for size in args.sizes:
            with tempfile.TemporaryDirectory() as tmp:  # -J wants a path of its own
                path = os.path.join(tmp, "all_reduce.json")
                subprocess.run([braidrun, "-n", str(n), os.path.join(build, "perf", "coll",
                                                                     "all_reduce_perf"),
                                "-b", str(size), "-e", str(size), "-n", str(args.iters),
                                "-w", "50", "-a", "3", "-J", path], check=True,
                               capture_output=True)
                with open(path) as f:
                    in_place = json.load(f)["results"][0]["in_place"]
                us = in_place.get("time_us", in_place.get("time"))  # nccl-tests: "time"
                c_us[size] = min(c_us.get(size, us), us)
    for row in rows:
        row["c"] = c_us[row["size"]]
    return report


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--sizes", nargs="+", default=["8", "64K"])
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3, help="interleaved rounds; the best counts")
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--python", default=sys.executable, help="the ranks' interpreter (its torch)")
    ap.add_argument("--rank", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.sizes = [parse_size(str(s)) for s in args.sizes]
    if args.rank:
        return rank_main(args)
    print("# all_reduce float32 sum, in place, CPU; us per call (slowest rank's mean, best of "
          f"{args.repeats} interleaved rounds of {args.iters} calls)")
    header = True
    for n in args.ranks:
        report = launch(args, n, os.path.abspath(args.build))
        if header:
            print(f"# torch {report['torch']}; braid: the {report['impl']} group; braid py: the "
                  "Python group")
            print(f"# {'ranks':>5} {'size B':>7} {'C':>8} {'Communicator':>12} {'braid':>8} "
                  f"{'braid async':>11} {'braid py':>9} {'gloo':>8} {'braid/C':>8} "
                  f"{'py/braid':>8}")
            header = False
        for r in report["rows"]:
            print(f"  {n:>5} {r['size']:>7} {r['c']:>8.1f} {r['communicator']:>12.1f} "
                  f"{r['braid']:>8.1f} {r['braid_async']:>11.1f} {r['braid_py']:>9.1f} "
                  f"{r['gloo']:>8.1f} {r['braid'] / r['c']:>8.2f} "
                  f"{r['braid_py'] / r['braid']:>8.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
