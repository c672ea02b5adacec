#!/usr/bin/env python3
"""BRAID_TRACE's cost on a 64 KiB all-reduce: all_reduce_perf under braidrun with tracing off
and on, interleaved (off, on, off, on, ...) so that a machine whose load drifts weighs on both
alike; prints the median time per call of each and the overhead, with the spread.

  perf/trace/trace_overhead.py BUILD_DIR [--ranks 4] [--rounds 8] [--iters 2000]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


def run_once(build, ranks, iters, size, trace_dir, transports):
    env = dict(os.environ)
    env.pop("BRAID_TRACE", None)
    if trace_dir:
        env["BRAID_TRACE"] = trace_dir
    if transports:
        env["BRAID_TRANSPORTS"] = transports
    cmd = [os.path.join(build, "tools", "braidrun", "braidrun"), "-n", str(ranks),
           os.path.join(build, "perf", "coll", "all_reduce_perf"), "-b", size, "-e", size,
           "-n", str(iters), "-w", "200", "-c", "0"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.split()
        if f and f[0].startswith("[") and f[0].endswith("]"):
            f = f[1:]  # braidrun's rank prefix
        if len(f) > 6 and f[0].isdigit() and f[2] == "float":
            return float(f[5])  # out-of-place time, us
    sys.exit("no result line in:\n" + out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("build")
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--iters", type=int, default=2000)
    p.add_argument("--size", default="64K")
    p.add_argument("--transports", default="")
    a = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="braid-trace-overhead-")
    off, on = [], []
    try:
        for i in range(a.rounds):
            off.append(run_once(a.build, a.ranks, a.iters, a.size, None, a.transports))
            on.append(run_once(a.build, a.ranks, a.iters, a.size, os.path.join(tmp, str(i)),
                               a.transports))
            print(f"round {i}: off {off[-1]:.2f} us, on {on[-1]:.2f} us", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ratios = [b / o for o, b in zip(off, on)]
    print(f"\n{a.size} all-reduce, {a.ranks} ranks, {a.rounds} interleaved rounds of {a.iters}:")
    print(f"  off: median {statistics.median(off):.2f} us (min {min(off):.2f}, max {max(off):.2f})")
    print(f"  on:  median {statistics.median(on):.2f} us (min {min(on):.2f}, max {max(on):.2f})")
    print(f"  on/off per round: median {statistics.median(ratios):.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f})")


if __name__ == "__main__":
    main()
