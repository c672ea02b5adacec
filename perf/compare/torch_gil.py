"""Does a torch backend's all_reduce hold Python back? Pure-Python work in one thread while
another thread runs large all_reduces through "braid" (native C++ group, then the Python
group) and gloo.

    python3 perf/compare/torch_gil.py [--ranks 2] [--mib 64] [--calls 8] [--build build]

The ranks start under braidrun. On each rank a worker thread runs --calls in-place float32
all_reduces of --mib MiB on a group while the main thread counts pure-Python loops (no
allocation, no I/O) until the worker is done; the count per second is set against the same
loop's rate with nothing else running, measured just before (interleaved, --repeats
rounds). Rank 0 prints each backend's median ratio (1.0: Python ran as if alone) and the
all_reduce time. A backend that holds the GIL while it waits or reduces shows a low ratio;
one that does not still shares the machine's cores with the reduction, so on a machine
with fewer cores than threads the ratio says as much about the cores as about the GIL:
the gloo row is that floor's reference.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def spin(stop):
    """Pure-Python loops until stop() says so: (loops, seconds)."""
    loops, start = 0, time.perf_counter()
    while not stop():
        x = 0
        for i in range(2000):
            x += i
        loops += 1
    return loops, time.perf_counter() - start


def rank_main(args):
    sys.path.insert(0, os.environ.get("BRAID_PYTHONPATH", os.path.join(HERE, "..", "..",
                                                                        "python")))
    import torch
    import torch.distributed as dist

    import braid.torch

    rank, world = int(os.environ["BRAID_RANK"]), int(os.environ["BRAID_WORLD_SIZE"])
    store = os.path.join(tempfile.gettempdir(), f"braid-gil-{os.environ['BRAID_SECRET'][:16]}")
    dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=world)
    groups = {"braid": dist.new_group(backend="braid")}
    native, braid.torch._native = braid.torch._native, None  # the next group: Python's
    groups["braid_py"] = dist.new_group(backend="braid")
    braid.torch._native = native
    groups["gloo"] = dist.group.WORLD
    t = torch.ones(args.mib * (1 << 20) // 4)
    results = {name: {"ratio": [], "call_ms": []} for name in groups}
    for _ in range(args.repeats):
        for name, group in groups.items():
            dist.barrier(group=groups["gloo"])
            deadline = time.perf_counter() + args.alone_s
            loops, secs = spin(lambda: time.perf_counter() > deadline)
            alone = loops / secs
            dist.barrier(group=groups["gloo"])
            done = threading.Event()

            def reduce_many(group=group):
                start = time.perf_counter()
                for _ in range(args.calls):
                    dist.all_reduce(t, group=group)
                results[name]["call_ms"].append((time.perf_counter() - start) / args.calls * 1e3)
                done.set()

            worker = threading.Thread(target=reduce_many)
            worker.start()
            loops, secs = spin(done.is_set)
            worker.join()
            results[name]["ratio"].append(loops / secs / alone)
    if rank == 0:
        print(json.dumps({"impl": braid.torch.IMPLEMENTATION, "torch": torch.__version__,
                          "results": results}))
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--calls", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--alone-s", type=float, default=1.0)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--python", default=sys.executable, help="the ranks' interpreter (its torch)")
    ap.add_argument("--rank", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rank:
        return rank_main(args)
    build = os.path.abspath(args.build)
    env = dict(os.environ)
    env.setdefault("BRAID_PYTHONPATH", os.path.join(build, "python"))
    out = subprocess.run([os.path.join(build, "tools", "braidrun", "braidrun"), "-n",
                          str(args.ranks), args.python, os.path.abspath(__file__), "--rank",
                          "--mib", str(args.mib), "--calls", str(args.calls), "--repeats",
                          str(args.repeats), "--alone-s", str(args.alone_s)],
                         env=env, check=True, capture_output=True, text=True).stdout
    report = json.loads([ln for ln in out.splitlines() if ln.startswith("[0] {")][0][4:])
    print(f"# pure-Python loop rate while another thread runs {args.mib} MiB all_reduces, "
          f"over its rate alone; {args.ranks} ranks, {os.cpu_count()} cores, torch "
          f"{report['torch']}, braid = the {report['impl']} group; median of {args.repeats}")
    print(f"# {'backend':>9} {'ratio':>6} {'(min-max)':>12} {'ms/call':>8}")
    for name, r in report["results"].items():
        print(f"  {name:>9} {statistics.median(r['ratio']):>6.2f} "
              f"{min(r['ratio']):>5.2f}-{max(r['ratio']):<5.2f} "
              f"{statistics.median(r['call_ms']):>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
