"""Runs parallel_ranks.py's checks on gloo and on braid, same seeds, and tabulates them.

    PYTHONPATH=build/python python run_checks.py --out DIR [--only fsdp2,compile]

Run it with the interpreter whose torch is tested (PyTorch 2.x). Two jobs, one a world
size: `python -m braid.run -n N parallel_ranks.py CHECKS`, one process a rank, each
check run on gloo and then on braid (one torch import a rank for all of them), the
job bounded by --timeout seconds (braidrun's own limit, then a kill). For every check
both backends must match one rank (parallel_ranks.py asserts it); the table also
gives the largest difference between gloo's and braid's losses. Exits 1 if any check
failed, was not run or timed out.
"""

import argparse
import json
import os
import subprocess
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
RANKS = os.path.join(_HERE, "parallel_ranks.py")

# ranks -> checks: FSDP2 at 2 and 4 ranks, TP on a 2 x 2 mesh, the pipeline's 2 stages.
JOBS = {2: ["fsdp2", "pipeline", "compile"], 4: ["fsdp2", "tp2d"]}
BACKENDS = ("gloo", "braid")


def run_job(ranks, checks, out, timeout):
    """(the job's results from rank 0, exit code or "timeout", seconds, log path)."""
    result_path = os.path.join(out, f"ranks{ranks}.json")
    log_path = os.path.join(out, f"ranks{ranks}.log")
    cmd = [sys.executable, "-m", "braid.run", "-n", str(ranks), "--timeout", str(timeout),
           RANKS, ",".join(checks), "--backends", ",".join(BACKENDS), "--out", result_path]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1",
               PYTHONUNBUFFERED="1")
    start = time.monotonic()
    with open(log_path, "w") as log:
        try:
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                timeout=timeout + 30).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    results = {}
    if os.path.exists(result_path):
        with open(result_path) as f:
            results = json.load(f)["checks"]
    return results, rc, time.monotonic() - start, log_path


def cell(record):
    if record is None:
        return "missing"
    if record["outcome"] != "ok":
        return "FAIL"
    return f"ok {record['seconds']:.0f}s diff {record['max_diff']:.1e}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for each job's log and results")
    ap.add_argument("--timeout", type=int, default=420, help="seconds a job")
    ap.add_argument("--only", help="comma-separated checks (default: all)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    only = set(args.only.split(",")) if args.only else None
    import torch
    print(f"torch2 checks: torch {torch.__version__}, {sys.executable}", flush=True)

    rows, passed, failed, groups = [], 0, 0, set()
    for ranks, checks in JOBS.items():
        checks = [c for c in checks if not only or c in only]
        if not checks:
            continue
        results, rc, seconds, log = run_job(ranks, checks, args.out, args.timeout)
        print(f"  {ranks} ranks ({', '.join(checks)}): exit {rc}, {seconds:.0f} s", flush=True)
        failed_before = failed
        for check in checks:
            records = [results.get(f"{check}/{b}") for b in BACKENDS]
            for b, r in zip(BACKENDS, records):
                ok = r is not None and r["outcome"] == "ok"
                if ok:
                    groups.add(f"{b}: {r['group']}")
                passed, failed = passed + ok, failed + (not ok)
                if r is not None and not ok:
                    print(f"  {check} x{ranks} {b}: {r['outcome']}")
            between = "-"
            if all(r is not None and r["outcome"] == "ok" for r in records):
                between = f"{max(abs(a - b) for a, b in zip(*(r['losses'] for r in records))):.1e}"
            rows.append((f"{check} x{ranks}",) + tuple(cell(r) for r in records) + (between,))
        if rc != 0:
            with open(log) as f:
                print("  its log's end:\n    " + "    ".join(f.readlines()[-30:]), flush=True)
            if failed == failed_before:
                failed += 1  # the job failed outside its checks (start, teardown)

    print("\ntorch 2.x parallelism checks, each against one rank (diff: largest |distributed - "
          "one rank| over the weights or outputs; s: the check's own time, where gloo, run "
          "first, pays the lazy imports and inductor's compile):")
    header = ("check", "gloo", "braid", "gloo-braid losses")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(4)]
    for r in [header] + rows:
        print("  " + "  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    print(f"  the groups: {', '.join(sorted(groups))}")
    print(f"torch2 checks: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
