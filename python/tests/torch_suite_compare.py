"""Compares torch_suite.py's outcomes for gloo and braid; exits 1 where braid falls short.

    torch_suite_compare.py GLOO.json BRAID.json BRAID_AS_GLOO.json [--table FILE]

Rules, case by case:
- gloo passed: braid passed; or braid skipped it because the suite gates the case by
  backend name, and the same body passed on braid (the --as-gloo run).
- gloo failed: braid failed with the same exception line (both named in the output).
- no case timed out on either backend.
A case whose as-gloo run cannot pass because torch itself refuses a backend other than
gloo by name is in EXPECTED below, with the exception line it must end with.
"""

import argparse
import json
import sys

# torch's own code (not the suite's) checks the backend's name in these: their bodies
# run on braid in torch_gated_ranks.py instead.
EXPECTED = {
    "test_get_backend": "AssertionError: String comparison failed: 'braid' != 'gloo'",
    "test_monitored_barrier_gloo":
        "RuntimeError: monitored_barrier is only implemented for GLOO backend.",
    "test_monitored_barrier_gloo_subgroup": "monitored_barrier is only implemented for GLOO",
    # World size 3 and up:
    "test_monitored_barrier_failure_order": "monitored_barrier is only implemented for GLOO",
    "test_monitored_barrier_wait_all_ranks": "monitored_barrier is only implemented for GLOO",
}

# On torch 2.x a C++ extension backend is held by a ProcessGroup that torch makes itself,
# whose getBackendName() is its BackendType's name, "custom", for every backend registered
# from an extension (the native ProcessGroupBraid among them); DDP's logging data reads
# that name. The case passes on the Python group, which is its own ProcessGroup.
NAMED_BY_TORCH = {
    "test_ddp_logging_data_cpu": "AssertionError: String comparison failed: 'custom' != 'braid'",
}


def load(path):
    with open(path) as f:
        return json.load(f)["cases"]


def verdict(name, gloo, braid, as_gloo):
    """(ok, note) for one case."""
    g, b, a = gloo["outcome"], braid["outcome"], as_gloo.get("outcome")
    if "timeout" in (g, b, a):
        return False, "timed out"
    if g == "passed":
        if b == "passed":
            return True, ""
        if b == "skipped" and a == "passed":
            return True, "gated by name; body passed on braid (as-gloo run)"
        if b == "failed" and name in NAMED_BY_TORCH and NAMED_BY_TORCH[name] in braid["detail"]:
            return True, "torch names a C++ extension backend's group 'custom'"
        if b == "skipped" and name in EXPECTED and EXPECTED[name] in as_gloo.get("detail", ""):
            return True, "torch refuses non-gloo backends here; see torch_gated_ranks.py"
        return False, f"braid {b}: {braid['detail'] or as_gloo.get('detail', '')}"
    if g == "failed":
        if b == "failed" and braid["detail"] == gloo["detail"]:
            return True, f"fails on both: {gloo['detail']}"
        if b == "skipped" and a == "failed" and as_gloo["detail"] == gloo["detail"]:
            return True, f"fails on both (as-gloo run): {gloo['detail']}"
        return False, f"gloo failed ({gloo['detail']}), braid {b} ({braid['detail']})"
    return True, ""  # skipped on gloo: nothing to match


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gloo")
    ap.add_argument("braid")
    ap.add_argument("as_gloo")
    ap.add_argument("--table", help="write every case's outcomes here")
    args = ap.parse_args()
    gloo, braid, as_gloo = load(args.gloo), load(args.braid), load(args.as_gloo)
    missing = sorted(set(gloo) ^ set(braid))
    if missing:
        print(f"torch suite: cases run on one backend only: {missing}")
        return 1
    rows, bad, same_failures = [], [], []
    for name in sorted(gloo):
        ok, note = verdict(name, gloo[name], braid[name], as_gloo.get(name, {}))
        rows.append(f"{name:70s} {gloo[name]['outcome']:8s} {braid[name]['outcome']:8s} "
                    f"{as_gloo.get(name, {}).get('outcome', '-'):8s} {note}")
        if not ok:
            bad.append(f"{name}: {note}")
        elif note.startswith("fails on both"):
            same_failures.append(f"{name}: {note}")
    if args.table:
        with open(args.table, "w") as f:
            f.write(f"{'case':70s} {'gloo':8s} {'braid':8s} {'as-gloo':8s} note\n")
            f.write("\n".join(rows) + "\n")

    def count(cases, outcome):
        return sum(c["outcome"] == outcome for c in cases.values())

    for label, cases in (("gloo", gloo), ("braid", braid), ("braid, gloo's gates", as_gloo)):
        print(f"torch suite {label}: {count(cases, 'passed')} passed, "
              f"{count(cases, 'failed')} failed, {count(cases, 'skipped')} skipped, "
              f"{count(cases, 'timeout')} timed out")
    for line in same_failures:
        print(f"  same failure on gloo and braid: {line}")
    for line in bad:
        print(f"  BRAID FALLS SHORT: {line}")
    cases_ok = len(gloo) - len(bad)
    print(f"torch_suite: {cases_ok} passed, {len(bad)} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
