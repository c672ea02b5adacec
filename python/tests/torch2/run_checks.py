"""Runs parallel_ranks.py's checks on gloo and on braid, same seeds, and tabulates them.

    PYTHONPATH=build/python python run_checks.py --out DIR [--only fsdp2,compile]

Run it with the interpreter whose torch is tested (PyTorch 2.x): each job is
`python -m braid.run -n N parallel_ranks.py CHECK --backend B`, one process a rank,
bounded by --timeout seconds (braidrun's own limit, then a kill). For every check,
both backends must match one rank (parallel_ranks.py asserts it), and their losses
are compared with each other too (the table's last column: the largest difference
between gloo's and braid's losses). Exits 1 if any job failed or timed out.
"""

import argparse
import json
import os
import subprocess
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
RANKS = os.path.join(_HERE, "parallel_ranks.py")

# (check, ranks): FSDP2 at 2 and 4 ranks, TP on a 2 x 2 mesh, the pipeline's 2 stages.
JOBS = [("fsdp2", 2), ("fsdp2", 4), ("tp2d", 4), ("pipeline", 2), ("compile", 2)]
BACKENDS = ("gloo", "braid")


def run_job(check, ranks, backend, out, timeout):
    """(outcome, seconds, result dict or None, log path)."""
    tag = f"{check}_{ranks}_{backend}"
    result_path = os.path.join(out, tag + ".json")
    log_path = os.path.join(out, tag + ".log")
    cmd = [sys.executable, "-m", "braid.run", "-n", str(ranks), "--timeout", str(timeout),
           RANKS, check, "--backend", backend, "--out", result_path,
           "--timeout", str(max(10, timeout - 15))]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1",
               PYTHONUNBUFFERED="1")
    start = time.monotonic()
    with open(log_path, "w") as log:
        try:
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                timeout=timeout + 30).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    seconds = time.monotonic() - start
    result = None
    if rc == 0 and os.path.exists(result_path):
        with open(result_path) as f:
            result = json.load(f)
    outcome = "ok" if result else ("TIMEOUT" if rc == "timeout" else f"FAIL rc {rc}")
    return outcome, seconds, result, log_path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for each job's log and result")
    ap.add_argument("--timeout", type=int, default=150, help="seconds a job")
    ap.add_argument("--only", help="comma-separated checks (default: all)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    only = set(args.only.split(",")) if args.only else None
    import torch
    print(f"torch2 checks: torch {torch.__version__}, {sys.executable}", flush=True)

    rows, failed = [], 0
    for check, ranks in JOBS:
        if only and check not in only:
            continue
        done = {}
        for backend in BACKENDS:
            outcome, seconds, result, log = run_job(check, ranks, backend, args.out,
                                                    args.timeout)
            done[backend] = (outcome, seconds, result)
            print(f"  {check} {ranks} ranks {backend}: {outcome} ({seconds:.0f} s)", flush=True)
            if result is None:
                failed += 1
                with open(log) as f:
                    print("    " + "    ".join(f.readlines()[-25:]), flush=True)
        results = [done[b][2] for b in BACKENDS]
        between = "-"
        if all(results):
            between = f"{max(abs(a - b) for a, b in zip(*(r['losses'] for r in results))):.1e}"
        rows.append((f"{check} x{ranks}",) + tuple(
            f"{done[b][0]} {done[b][1]:.0f}s"
            + (f" diff {done[b][2]['max_diff']:.1e}" if done[b][2] else "") for b in BACKENDS)
            + (between,))

    print("\ntorch 2.x parallelism checks (each against one rank; diff: largest |distributed -"
          " one rank| over weights or outputs; seconds with process start):")
    header = ("check", "gloo", "braid", "gloo-braid losses")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(4)]
    for r in [header] + rows:
        print("  " + "  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    ran = sum(2 for _ in rows)
    print(f"torch2 checks: {ran - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
