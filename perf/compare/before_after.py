#!/usr/bin/python3
"""Braid against Braid: two builds' perf tools, paired and interleaved (a change's yardstick).

    perf/compare/before_after.py --before BUILD_A --after BUILD_B [--reps 5]
        [--ranks 2,4] [--colls allreduce,allgather] [--sizes 8,64K,1M,16M]
        [--libs braid,braid-memalloc] [--seconds 0.5] [--out DIR]

Each rep runs every point (collective, ranks, size, buffers) once with each build, back to
back, the order alternating by rep, so both builds meet the same machine state; a point's
figure is the median over the reps of nccl-tests' time per call (the slowest rank's mean),
measured by compare.py's braid_once under braidrun. Both builds run the same iteration
count at a point (sized once, on the before build). Prints a markdown table with the
after/before ratio of the medians and each build's spread (slowest rep / fastest), and
writes it with every run's log to --out.
"""

import argparse
import datetime
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import compare  # noqa: E402

KIB, MIB = 1 << 10, 1 << 20


def size_arg(text):
    text = text.strip().upper()
    scale = {"K": KIB, "M": MIB}.get(text[-1:], 1)
    return int(text[:-1] if scale != 1 else text) * scale


def human(n):
    return f"{n // MIB} MiB" if n >= MIB else f"{n // KIB} KiB" if n >= KIB else f"{n} B"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--before", required=True, help="build directory of the baseline")
    p.add_argument("--after", required=True, help="build directory of the change")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--ranks", default="2,4")
    p.add_argument("--colls", default="allreduce,allgather")
    p.add_argument("--sizes", default="8,64K,1M,16M")
    p.add_argument("--libs", default="braid,braid-memalloc")
    p.add_argument("--seconds", type=float, default=0.5, help="target time per run")
    p.add_argument("--run-timeout", type=int, default=240)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    out = args.out or os.path.join(
        args.after, "perf", "before_after", datetime.datetime.utcnow().strftime("%Y%m%d-%H%M%S"))
    runners = {}
    for name in ("before", "after"):  # each build's logs in a folder of its own
        os.makedirs(os.path.join(out, name, "logs"), exist_ok=True)
        a = argparse.Namespace(**vars(args))
        a.build = getattr(args, name)
        runners[name] = compare.Runner(a, os.path.join(out, name))
    points = [(c, int(n), size_arg(s), lib) for c in args.colls.split(",")
              for n in args.ranks.split(",") for s in args.sizes.split(",")
              for lib in args.libs.split(",")]
    iters = {}
    for pt in points:  # a pilot on the before build sizes every run of the point
        coll, n, size, lib = pt
        got = compare.braid_once(runners["before"], coll, n, size, 3, 1, 0, lib=lib)
        t = got["time_us"] if got else 1000.0
        iters[pt] = int(min(200000, max(3, args.seconds * 1e6 / max(t, 0.05))))
    times = {(pt, name): [] for pt in points for name in runners}
    for rep in range(args.reps):
        order = ["before", "after"] if rep % 2 == 0 else ["after", "before"]
        for pt in points:
            coll, n, size, lib = pt
            for name in order:
                it = iters[pt]
                got = compare.braid_once(runners[name], coll, n, size, it,
                                         max(1, min(it // 10, 50)), 0, lib=lib)
                if got:
                    times[(pt, name)].append(got["time_us"])
        print(f"# rep {rep + 1} of {args.reps} done", flush=True)
    # The spread (slowest rep / fastest) says how far the machine moved under a point.
    lines = ["| collective | ranks | size | buffers | before us | after us | after/before "
             "| spread before | spread after |",
             "|---|---|---|---|---|---|---|---|---|"]
    for pt in points:
        coll, n, size, lib = pt
        b, a = times[(pt, "before")], times[(pt, "after")]
        if not b or not a:
            lines.append(f"| {coll} | {n} | {human(size)} | {lib} | - | - | failed | - | - |")
            continue
        mb, ma = statistics.median(b), statistics.median(a)
        lines.append(f"| {coll} | {n} | {human(size)} | {lib} | {mb:.2f} | {ma:.2f} | "
                     f"{ma / mb:.3f} | {max(b) / min(b):.2f} | {max(a) / min(a):.2f} |")
    table = "\n".join(lines)
    print(table)
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(table + "\n")


if __name__ == "__main__":
    main()
