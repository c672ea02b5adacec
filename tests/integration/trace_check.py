#!/usr/bin/env python3
"""Checks BRAID_TRACE's files and braid-trace's answers for trace_test.cc (exit 1 with the
reason on the first failure).

  trace_check.py delayed DIR NRANKS CALLS DELAYED_RANK DELAYED_SEQ DELAY_MS
  trace_check.py failed DIR NRANKS DEAD_RANK
  trace_check.py signalled DIR RANK
"""

import glob
import json
import os
import subprocess
import sys

TOOL = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "braid_trace", "braid-trace")


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def rank_files(d):
    out = {}
    for path in glob.glob(os.path.join(d, "comm*.rank*.json")):
        with open(path) as f:
            doc = json.load(f)
        out[doc["otherData"]["braid"]["rank"]] = doc
    return out


def check_perfetto(doc, where):
    """The fields Perfetto's and chrome://tracing's JSON readers need."""
    if not isinstance(doc.get("traceEvents"), list) or not doc["traceEvents"]:
        fail(f"{where}: no traceEvents list")
    for e in doc["traceEvents"]:
        for key in ("name", "ph", "pid", "tid"):
            if key not in e:
                fail(f"{where}: event without {key}: {e}")
        if e["ph"] == "M":
            continue
        if not isinstance(e.get("ts"), (int, float)):
            fail(f"{where}: event without a numeric ts: {e}")
        if e["ph"] == "X" and not (isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0):
            fail(f"{where}: complete event without dur >= 0: {e}")
        if e["ph"] not in ("X", "i"):
            fail(f"{where}: unexpected phase {e['ph']}")


def tool(*args):
    r = subprocess.run([sys.executable, TOOL] + list(args), capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"braid-trace {' '.join(args)}: {r.stdout}{r.stderr}")
    return r.stdout


def rows(events, pid, tid):
    return sorted((e for e in events if e["pid"] == pid and e["tid"] == tid and e["ph"] == "X"),
                  key=lambda e: e["ts"])


def check_no_overlap(events, pid, tid, what):
    prev_end = None
    for e in rows(events, pid, tid):
        if prev_end is not None and e["ts"] < prev_end - 0.002:
            fail(f"rank {pid}: {what} overlap: {e['name']} at {e['ts']} before {prev_end}")
        prev_end = e["ts"] + e["dur"]


def delayed(d, nranks, calls, slow, slow_seq, delay_ms):
    files = rank_files(d)
    if sorted(files) != list(range(nranks)):
        fail(f"rank files {sorted(files)}, want 0..{nranks - 1}")
    for r, doc in files.items():
        check_perfetto(doc, f"rank {r}'s file")
        meta = doc["otherData"]["braid"]
        if meta["why"] != "destroy":
            fail(f"rank {r} wrote its file at {meta['why']}, want destroy")
        if r == 0 and (meta["clock_offset_ns"] != 0 or meta["clock_error_ns"] != 0):
            fail("rank 0's clock is not its own")
        if r != 0 and meta["clock_samples"] < 1:
            fail(f"rank {r} measured no clock offset")
    merged_path = os.path.join(d, "job.json")
    tool("merge", d, "-o", merged_path)
    with open(merged_path) as f:
        merged = json.load(f)
    check_perfetto(merged, "the merged trace")
    events = merged["traceEvents"]
    seqs = {}
    for r in range(nranks):
        mine = [e for e in events if e["pid"] == r and e.get("cat") == "call"]
        got = sorted(e["args"]["seq"] for e in mine if e["name"] == "allreduce")
        if len(got) != calls:
            fail(f"rank {r}: {len(got)} all-reduce calls in the merged trace, want {calls}")
        for e in mine:
            if e["args"]["state"] != "done" or e["args"]["bytes"] != 65536 or \
               e["args"]["dtype"] != "int32" or e["args"]["op"] != "sum":
                fail(f"rank {r}: call {e}")
        seqs[r] = sorted(e["args"]["seq"] for e in mine)
        check_no_overlap(events, r, 1, "calls")
        check_no_overlap(events, r, 2, "steps")
        steps = [e for e in events if e["pid"] == r and e.get("cat") == "step"]
        if not steps:
            fail(f"rank {r}: no steps")
        if set(e["args"]["seq"] for e in steps) - set(seqs[r]):
            fail(f"rank {r}: steps of calls it did not record")
        markers = [e for e in events if e["pid"] == r and e.get("cat") == "marker"]
        if len(markers) != calls:
            fail(f"rank {r}: {len(markers)} markers, want {calls}")
    if any(seqs[r] != seqs[0] for r in seqs):
        fail(f"sequence numbers differ across ranks: {seqs}")
    report = json.loads(tool("report", d, "--json"))
    top = report["worst"][0]
    if top["last_rank"] != slow or top["seq"] != slow_seq:
        fail(f"the longest wait is for rank {top['last_rank']} at #{top['seq']}, want rank "
             f"{slow} at #{slow_seq}: {top}")
    wait_ms = top["max_wait_us"] / 1000.0
    if not 0.8 * delay_ms <= wait_ms <= 1.5 * delay_ms + 50:
        fail(f"the straggler's wait is {wait_ms:.1f} ms, want about {delay_ms} ms")
    per_rank = {int(k): v for k, v in report["wait_per_rank_us"].items()}
    if min(per_rank, key=per_rank.get) != slow:
        fail(f"the delayed rank should wait least: {per_rank}")
    html_path = os.path.join(d, "report.html")
    text = tool("report", d, "--html", html_path)
    if f"rank {slow} arrived last" not in text:
        fail("report's text does not name the straggler:\n" + text)
    with open(html_path) as f:
        page = f.read()
    if "<svg" not in page or "allreduce" not in page:
        fail("the HTML page lacks the table or the picture")
    print(text)


def last_call(doc):
    calls = [e for e in doc["traceEvents"] if e.get("cat") == "call"]
    return max(calls, key=lambda e: e["args"]["seq"]) if calls else None


def failed(d, nranks, dead):
    files = rank_files(d)
    want = [r for r in range(nranks) if r != dead]
    if sorted(files) != want:
        fail(f"rank files {sorted(files)}, want {want}")
    for r in want:
        check_perfetto(files[r], f"rank {r}'s file")
        call = last_call(files[r])
        if call is None or call["name"] != "allreduce" or call["args"]["state"] == "done":
            fail(f"rank {r}: the last call is {call}, want a failed all-reduce")
        why = files[r]["otherData"]["braid"]["why"]
        if not (why.startswith("error") or why == "abort"):
            fail(f"rank {r} wrote at {why}")
        print(f"rank {r}: {call['name']} #{call['args']['seq']} {call['args']['state']} ({why})")


def signalled(d, rank):
    doc = rank_files(d).get(rank)
    if doc is None:
        fail(f"no file for rank {rank}")
    check_perfetto(doc, f"rank {rank}'s file")
    call = last_call(doc)
    print(f"why {doc['otherData']['braid']['why']}; last call {call['name']} "
          f"#{call['args']['seq']}: {call['args']['state']}")


def main():
    mode, d = sys.argv[1], sys.argv[2]
    n = [int(a) for a in sys.argv[3:]]
    {"delayed": delayed, "failed": failed, "signalled": signalled}[mode](d, *n)


if __name__ == "__main__":
    main()
