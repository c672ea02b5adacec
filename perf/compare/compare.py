#!/usr/bin/python3
"""Braid against the host peers on one node, in one run (issue 5's yardstick).

    perf/compare/compare.py [--build build] [--quick] [--out DIR]

Runs, interleaved and --reps times (default 3), on the same sizes and rank
counts: Braid's perf tools under braidrun; OpenMPI (ob1 + vader with CMA, and
the UCX pml) and MPICH, both from perf/compare/mpi_coll_perf.c (MPI_Allreduce,
MPI_Allgather, MPI_Reduce_scatter_block, MPI_Bcast, MPI_Alltoall, MPI_Reduce,
MPI_Gather, MPI_Scatter, and MPI_Sendrecv in nccl-tests' ring); Gloo's
all-reduce from C++ (gloo_allreduce_perf) and torch.distributed's gloo
backend; and floor_probe, whose STREAM bandwidth and hand-off latency give
floor A:

    floor A = ceil(log2 P) x one-way latency + 2 P n / B

n the bytes per rank, P the ranks, the latency the cross-core spin hand-off
when every rank has a CPU and the same-core sched_yield hand-off when ranks
share them, B the best STREAM bandwidth of min(P, 2) threads over the working
set of the call, 2 P n bytes (every rank's input and output). Latency and
bandwidth take their best over the reps.

The single-copy floor of every collective (compare_report.single_copy_floor
gives the formula) comes from floor_probe --single-copy at the sizes the run
needs, which this script works out from the collectives, rank counts and sizes.

Each measurement is nccl-tests' (time per call, the slowest rank's mean; busbw
with nccl-tests' factors; float32, sum); a row is the median over the reps.
Output in --out (default <build>/perf/compare/<UTC time>): table.md (printed
too), busbw.png (busbw against size, one line per library), results.json, and
every run's log. What is not installed is skipped with a note.
"""

import argparse
import datetime
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import compare_report  # noqa: E402
import priority  # noqa: E402

KIB, MIB = 1 << 10, 1 << 20
SIZES = [8, 64 * KIB, 1 * MIB, 16 * MIB, 64 * MIB]
QUICK_SIZES = [8, 64 * KIB]
COLLS = compare_report.COLLS
BRAID_TOOLS = {"allreduce": "all_reduce_perf", "allgather": "all_gather_perf",
               "reduce_scatter": "reduce_scatter_perf", "bcast": "broadcast_perf",
               "alltoall": "alltoall_perf", "reduce": "reduce_perf", "gather": "gather_perf",
               "scatter": "scatter_perf", "sendrecv": "sendrecv_perf"}
# Libraries in table order; the MPIs run every collective, the Gloos all-reduce.
# braid-memalloc: Braid with buffers from braidMemAlloc (-P 1), which peers read
# in place on the shared windows; braid-registered: heap buffers passed to
# braidCommRegister first (-R 1, nccl-tests' local registration), whose pages are
# then shared the same way.
BRAID_LIBS = {"braid": [], "braid-memalloc": ["-P", "1"], "braid-registered": ["-R", "1"]}
LIBS = ["braid", "braid-memalloc", "braid-registered", "openmpi", "openmpi-ucx", "mpich", "gloo", "torch-gloo"]
ALLREDUCE_ONLY = {"gloo", "torch-gloo"}
OMPI_ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def machine():
    """CPU model, count and kernel, for the report's header (docs/performance.md)."""
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f
                         if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{model}, {cpus()} CPUs usable, Linux {os.uname().release}"


def cpus():
    return os.sysconf("SC_NPROCESSORS_ONLN")


class Runner:
    """Starts every measured program, keeps its log, and bounds its time."""

    def __init__(self, args, out):
        self.args = args
        self.out = out
        self.build = args.build
        self.notes = []
        self.count = 0
        self.loads = []  # 1-minute load average at the start of each rep

    def path(self, *parts):
        return os.path.join(self.build, *parts)

    def note(self, text):
        if text not in self.notes:
            self.notes.append(text)
            print(f"# {text}", flush=True)

    def log_name(self, tag):
        self.count += 1
        return os.path.join(self.out, "logs", f"{self.count:04d}-{tag}.log")

    def run(self, tag, cmd, env=None, timeout=None):
        """Runs cmd in its own session (priority.Keeper raises it); returns (rc, output)."""
        full_env = dict(os.environ, **(env or {}))
        timeout = timeout or self.args.run_timeout
        started = time.monotonic()
        with open(self.log_name(tag), "w") as log:
            log.write("$ " + " ".join(cmd) + "\n")
            log.flush()
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    env=full_env, text=True, start_new_session=True)
            try:
                output, _ = proc.communicate(timeout=timeout)
                rc = proc.returncode
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                output, _ = proc.communicate()
                output += f"\n(timed out after {timeout} s)\n"
                rc = 124
            log.write(output + f"(rc {rc}, {time.monotonic() - started:.1f} s)\n")
        return rc, output

    def run_ranks(self, tag, nranks, cmd, env_of):
        """P copies of cmd, rank r with env_of(r); rank 0's output is returned."""
        procs, outputs = [], []
        started = time.monotonic()
        for r in range(nranks):
            env = dict(os.environ, **env_of(r))
            procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                          env=env, text=True, start_new_session=True))
        deadline = time.monotonic() + self.args.run_timeout
        rc = 0
        for p in procs:
            try:
                out, _ = p.communicate(timeout=max(1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                for q in procs:
                    if q.poll() is None:
                        os.killpg(q.pid, signal.SIGKILL)
                out, _ = p.communicate()
                rc = 124
            outputs.append(out)
            rc = rc or p.returncode
        with open(self.log_name(tag), "w") as log:
            log.write("$ " + " ".join(cmd) + "\n")
            for r, out in enumerate(outputs):
                log.write(f"--- rank {r}\n{out}")
            log.write(f"(rc {rc}, {time.monotonic() - started:.1f} s)\n")
        return rc, outputs[0]


def busbw(coll, nranks, nbytes, time_us):
    """GB/s, from the time (the programs print few digits)."""
    factor = compare_report.bus_factor(coll, nranks)
    return nbytes / time_us / 1e3 * factor if time_us > 0 else 0.0


def parse_rows(output):
    rows = []
    for line in output.splitlines():
        f = line.split()
        if len(f) == 10 and f[0] == "row":
            row = {"lib": f[1], "coll": f[2], "nranks": int(f[3]), "size": int(f[4]),
                   "bytes": int(f[5]), "time_us": float(f[6]), "wrong": int(f[9])}
            row["busbw"] = busbw(row["coll"], row["nranks"], row["bytes"], row["time_us"])
            rows.append(row)
    return rows


def failed(runner, lib, coll, nranks, rc, output):
    tail = " | ".join(output.strip().splitlines()[-3:])
    runner.note(f"{lib} {coll} {nranks} ranks failed (rc {rc}): {tail[:300]}")
    return []


# ---- the libraries --------------------------------------------------------

def run_braid(runner, coll, nranks, sizes, estimates, lib="braid"):
    braidrun = runner.path("tools", "braidrun", "braidrun")
    tool = runner.path("perf", "coll", BRAID_TOOLS[coll])
    if not (os.access(braidrun, os.X_OK) and os.access(tool, os.X_OK)):
        runner.note(f"braid skipped: build braidrun and {BRAID_TOOLS[coll]} in {runner.build}")
        return []
    rows = []
    for size in sizes:
        key = (coll, nranks, size)
        if key not in estimates:  # a short pilot sizes the timed run
            got = braid_once(runner, coll, nranks, size, iters=3, warmup=1, check=0, lib=lib)
            if not got:
                continue
            estimates[key] = got["time_us"]
        iters = int(min(200000, max(3, runner.args.seconds * 1e6 / max(estimates[key], 0.05))))
        got = braid_once(runner, coll, nranks, size, iters, max(1, min(iters // 10, 50)), 1,
                         lib=lib)
        if got:
            estimates[key] = got["time_us"]
            rows.append(got)
    return rows


def braid_once(runner, coll, nranks, size, iters, warmup, check, lib="braid"):
    braidrun = runner.path("tools", "braidrun", "braidrun")
    tool = runner.path("perf", "coll", BRAID_TOOLS[coll])
    # -J never writes over a file (nccl-tests' rule): a fresh name in a fresh directory.
    tmp = tempfile.mkdtemp(prefix="braid-compare-")
    json_path = os.path.join(tmp, "r.json")
    # Bound to cores where every rank has one, as OpenMPI's mpirun binds by default at
    # up to 2 ranks, and free when oversubscribed, as mpirun --oversubscribe leaves its
    # ranks (braidrun's own default, auto, would bind them too).
    bind = ["--bind", "core" if nranks <= cpus() else "none"]
    # -y 1: calls on the NULL stream, each done when it returns, as MPI's and Gloo's are.
    cmd = ([braidrun, "-n", str(nranks), "--timeout", str(runner.args.run_timeout)] + bind +
           [tool, "-b", str(size), "-e", str(size), "-n", str(iters), "-w", str(warmup),
            "-c", str(check), "-a", "3", "-y", "1", "-J", json_path])
    cmd += BRAID_LIBS[lib]
    rc, output = runner.run(f"braid-{coll}-{nranks}-{size}", cmd,
                            timeout=runner.args.run_timeout + 5)
    try:
        with open(json_path) as f:
            result = json.load(f)
    except (OSError, ValueError):
        result = None
    shutil.rmtree(tmp, ignore_errors=True)
    if rc != 0 or not result or not result.get("results"):
        failed(runner, lib, coll, nranks, rc, output)
        return None
    # nccl-tests' schema: times in us under "time", wrong elements under "nwrong"
    # (null when unchecked); Braid's algorithm under "braid".
    r = result["results"][0]
    oop = r["out_of_place"]
    return {"lib": lib, "coll": coll, "nranks": nranks, "size": size, "bytes": r["size"],
            "time_us": oop["time"], "busbw": busbw(coll, nranks, r["size"], oop["time"]),
            "wrong": int(oop["nwrong"]) if oop["nwrong"] is not None else 0,
            "algorithm": r.get("braid", {}).get("algorithm", "")}


def mpi_command(runner, lib, nranks):
    """mpirun command line for lib, or None (with a note) when not installed."""
    flavour = "mpich" if lib == "mpich" else "openmpi"
    exe = runner.path("perf", "compare", f"mpi_coll_perf.{flavour}")
    mpirun = shutil.which(f"mpirun.{flavour}")
    if mpirun is None or not os.access(exe, os.X_OK):
        runner.note(f"{lib} skipped: needs mpirun.{flavour} and {exe} "
                    f"(scripts/setup.sh; build target build_mpi_coll_perf_{flavour})")
        return None
    cmd = [mpirun, "-np", str(nranks)]
    if flavour == "openmpi":
        if nranks > cpus():
            cmd.append("--oversubscribe")  # also makes idle ranks yield
        if lib == "openmpi-ucx":
            cmd += ["--mca", "pml", "ucx", "--mca", "pml_ucx_tls", "any",
                    "--mca", "pml_ucx_devices", "any", "--mca", "btl", "self"]
        else:
            cmd += ["--mca", "pml", "ob1", "--mca", "btl", "vader,self",
                    "--mca", "btl_vader_single_copy_mechanism", "cma"]
    return cmd + [exe]


def run_mpi(runner, lib, coll, nranks, sizes):
    cmd = mpi_command(runner, lib, nranks)
    if cmd is None:
        return []
    cmd += [lib, coll, "-t", str(runner.args.seconds)] + [str(s) for s in sizes]
    rc, output = runner.run(f"{lib}-{coll}-{nranks}", cmd, env=OMPI_ROOT_ENV)
    rows = parse_rows(output)
    if rc != 0 or len(rows) != len(sizes):
        failed(runner, lib, coll, nranks, rc, output)
    return rows


def run_gloo(runner, coll, nranks, sizes):
    exe = runner.path("perf", "compare", "gloo_allreduce_perf")
    if not os.access(exe, os.X_OK):
        runner.note(f"gloo skipped: no {exe} (libgloo-dev; build target gloo_allreduce_perf)")
        return []
    store = tempfile.mkdtemp(prefix="braid-compare-gloo-")
    try:
        cmd = [exe, "-t", str(runner.args.seconds)] + [str(s) for s in sizes]
        rc, output = runner.run_ranks(f"gloo-{nranks}", nranks, cmd, lambda r: {
            "RANK": str(r), "WORLD_SIZE": str(nranks), "GLOO_STORE": store})
    finally:
        shutil.rmtree(store, ignore_errors=True)
    rows = parse_rows(output)
    if rc != 0 or len(rows) != len(sizes):
        failed(runner, "gloo", coll, nranks, rc, output)
    return rows


def run_torch(runner, coll, nranks, sizes):
    python = "/usr/bin/python3"  # python3-torch lives there (REFERENCE.md)
    probe = subprocess.run([python, "-c", "import torch.distributed"], capture_output=True)
    if probe.returncode != 0:
        runner.note("torch-gloo skipped: /usr/bin/python3 has no torch (python3-torch)")
        return []
    store = tempfile.mktemp(prefix="braid-compare-torch-")
    cmd = [python, os.path.join(HERE, "torch_gloo_perf.py"), "-t", str(runner.args.seconds)]
    cmd += [str(s) for s in sizes]
    try:
        rc, output = runner.run_ranks(f"torch-gloo-{nranks}", nranks, cmd, lambda r: {
            "RANK": str(r), "WORLD_SIZE": str(nranks), "TORCH_STORE": store,
            "OMP_NUM_THREADS": "1"})
    finally:
        if os.path.exists(store):
            os.unlink(store)
    rows = parse_rows(output)
    if rc != 0 or len(rows) != len(sizes):
        failed(runner, "torch-gloo", coll, nranks, rc, output)
    return rows


# ---- floor ---------------------------------------------------------------

# floor_probe's lines "<kind> <bytes> <us>": floors B and C, and the single-copy floor's
# reads (both ranks at once, and one while the other waits; a hand-off a read, or bursts).
TIMED_PROBES = ("exchange", "inplace", "single_copy", "single_copy_one", "single_copy_burst",
                "single_copy_one_burst")


def run_probe(runner, ranks, sizes):
    exe = runner.path("perf", "compare", "floor_probe")
    if not os.access(exe, os.X_OK):
        runner.note(f"floor A unknown: build floor_probe in {runner.build}")
        return None
    sets = sorted({compare_report.working_set(p, s) for p in ranks for s in sizes})
    cmd = [exe] + (["--quick"] if runner.args.quick else [])
    exchanges = [s for s in sizes if s >= 64 * KIB]
    if 2 in ranks and cpus() >= 2 and exchanges:  # floor B: 2 ranks on 2 cores
        cmd += ["--exchange", ",".join(str(s) for s in exchanges)]
        cmd += ["--inplace", ",".join(str(s) for s in exchanges)]  # floor C
    singles = compare_report.single_copy_sizes(runner.args.colls, ranks, exchanges, cpus())
    if cpus() >= 2 and singles:  # the single-copy floor
        cmd += ["--single-copy", ",".join(str(b) for b in singles)]
    cmd += [str(s) for s in sets]
    rc, output = runner.run("floor_probe", cmd)
    if rc != 0:
        failed(runner, "floor_probe", "-", 0, rc, output)
        return None
    probe = {"latency": {}, "stream": {}}
    probe.update({kind: {} for kind in TIMED_PROBES})
    for line in output.splitlines():
        f = line.split()
        if len(f) == 3 and f[0] == "latency" and float(f[2]) > 0:
            probe["latency"][f[1]] = float(f[2])
        elif len(f) == 3 and f[0] in TIMED_PROBES and float(f[2]) > 0:
            probe[f[0]][f[1]] = float(f[2])  # str keys: the probe goes to JSON
        elif len(f) == 5 and f[0] == "stream":
            key = f"{f[1]}/{f[2]}"
            probe["stream"][key] = max(probe["stream"].get(key, 0.0), float(f[4]))
    return probe


def best_probe(probes):
    """Lowest latency and highest bandwidth over the reps (STREAM's best-of rule)."""
    best = {"latency": {}, "stream": {}}
    best.update({kind: {} for kind in TIMED_PROBES})
    for p in probes:
        for kind in ("latency",) + TIMED_PROBES:
            for k, v in p.get(kind, {}).items():
                best[kind][k] = min(best[kind].get(k, math.inf), v)
        for k, v in p["stream"].items():
            best["stream"][k] = max(best["stream"].get(k, 0.0), v)
    return best


def floor_a_us(probe, nranks, size):
    """Issue 5's floor A for an all-reduce of `size` bytes per rank, or None."""
    if probe is None:
        return None
    shared = nranks > cpus()
    latency = probe["latency"].get("yield" if shared else "spin")
    working_set = compare_report.working_set(nranks, size)
    bandwidth = probe["stream"].get(f"{min(nranks, 2, cpus())}/{working_set}")
    if latency is None or not bandwidth:
        return None
    steps = math.ceil(math.log2(nranks)) if nranks > 1 else 0
    return steps * latency + 2 * nranks * size / (bandwidth * 1e9) * 1e6


# ---- the run -------------------------------------------------------------

def measure(runner, args):
    """Every (lib, coll, nranks, size) measured args.reps times, interleaved."""
    samples, probes, estimates = {}, [], {}
    for rep in range(args.reps):
        runner.loads.append(os.getloadavg()[0])
        print(f"# rep {rep + 1}/{args.reps}: load average {runner.loads[-1]:.2f}", flush=True)
        probe = run_probe(runner, args.ranks, args.sizes)
        if probe:
            probes.append(probe)
        for nranks in args.ranks:
            for coll in args.colls:
                libs = [lib for lib in args.libs
                        if coll == "allreduce" or lib not in ALLREDUCE_ONLY]
                shift = rep % len(libs)  # rotate the order so no library always goes first
                for lib in libs[shift:] + libs[:shift]:
                    if lib in BRAID_LIBS:
                        rows = run_braid(runner, coll, nranks, args.sizes, estimates, lib)
                    elif lib == "gloo":
                        rows = run_gloo(runner, coll, nranks, args.sizes)
                    elif lib == "torch-gloo":
                        rows = run_torch(runner, coll, nranks, args.sizes)
                    else:
                        rows = run_mpi(runner, lib, coll, nranks, args.sizes)
                    for row in rows:
                        if row["wrong"] != 0:
                            runner.note(f"{lib} {coll} {nranks} ranks {row['size']} B: "
                                        f"{row['wrong']} wrong elements (row dropped)")
                            continue
                        key = (lib, coll, nranks, row["size"])
                        samples.setdefault(key, []).append(row)
    return samples, (best_probe(probes) if probes else None)


def medians(samples):
    """The median row (by time) of each key."""
    out = {}
    for key, rows in samples.items():
        rows = sorted(rows, key=lambda r: r["time_us"])
        row = dict(rows[(len(rows) - 1) // 2])
        row["runs"] = len(rows)
        row["spread"] = [r["time_us"] for r in rows]
        out[key] = row
    return out


def braid_source(build):
    """Which Braid the build holds: its source's commit (a git checkout, with
    "+ uncommitted changes" when it has them, or a snapshot's .snapshot-commit)."""
    home = None
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("CMAKE_HOME_DIRECTORY:"):
                    home = line.split("=", 1)[1].strip()
    except OSError:
        return "unknown"
    if home is None:
        return "unknown"
    snapshot = os.path.join(home, ".snapshot-commit")
    if os.path.exists(snapshot):
        with open(snapshot) as f:
            return f"commit {f.read().strip()} (snapshot)"
    git = subprocess.run(["git", "-C", home, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True)
    if git.returncode != 0:
        return home
    dirty = subprocess.run(["git", "-C", home, "diff", "--quiet", "HEAD", "--", "src",
                            "algorithms", "transports", "include"]).returncode != 0
    return f"commit {git.stdout.strip()}" + (" + uncommitted changes" if dirty else "")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--build", default=os.path.join(ROOT, "build"),
                   help="build directory with Braid's perf tools and the peers (default: build)")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 1 rep, 8 B and 64 KiB, 0.03 s a size")
    p.add_argument("--reps", type=int, default=None, help="runs of everything (default 3)")
    p.add_argument("--seconds", type=float, default=None,
                   help="timed seconds per size and library (default 0.3)")
    p.add_argument("--sizes", default=None, help="comma-separated bytes (default 8,64K,1M,16M,64M)")
    p.add_argument("--ranks", default="2,4", help="rank counts (default 2,4)")
    p.add_argument("--colls", default=",".join(COLLS), help="collectives (default all nine)")
    p.add_argument("--libs", default=",".join(LIBS), help="libraries (default all)")
    p.add_argument("--run-timeout", type=int, default=240,
                   help="seconds one program may run before it is killed (default 240)")
    p.add_argument("--out", default=None, help="output directory")
    p.add_argument("--report", metavar="RESULTS_JSON", default=None,
                   help="measure nothing: write table.md and busbw.png again from a run's "
                        "results.json (into its directory, or --out)")
    args = p.parse_args()
    args.build = os.path.abspath(args.build)
    args.reps = args.reps or (1 if args.quick else 3)
    args.seconds = args.seconds or (0.03 if args.quick else 0.3)
    args.sizes = ([compare_report.parse_size(s) for s in args.sizes.split(",")] if args.sizes
                  else (QUICK_SIZES if args.quick else SIZES))
    args.ranks = [int(r) for r in args.ranks.split(",")]
    args.colls = args.colls.split(",")
    args.libs = args.libs.split(",")
    bad = [c for c in args.colls if c not in COLLS] + [lib for lib in args.libs if lib not in LIBS]
    if bad or args.reps < 1 or args.seconds <= 0 or min(args.ranks) < 2:
        p.error(f"unknown or bad: {', '.join(bad) or 'reps, seconds or ranks'} "
                f"(collectives: {', '.join(COLLS)}; libraries: {', '.join(LIBS)}; ranks >= 2)")
    return args


def rerender(args):
    """table.md and busbw.png again from a results.json (after a change of the report)."""
    with open(args.report) as f:
        saved = json.load(f)
    rows = {(r["lib"], r["coll"], r["nranks"], r["size"]): r for r in saved["rows"]}
    args.sizes = sorted({k[3] for k in rows})
    args.ranks = sorted({k[2] for k in rows})
    args.colls = [c for c in COLLS if any(k[1] == c for k in rows)]
    args.libs = [lib for lib in LIBS if any(k[0] == lib for k in rows)]
    floors = {}
    for key, us in saved["floor_a_us"].items():
        p, s = key.split("/")
        floors[(int(p), int(s))] = us
    report = compare_report.Report(args, rows, floors, saved["probe"], saved["meta"])
    out = args.out or os.path.dirname(os.path.abspath(args.report))
    text = report.markdown()
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(text)
    print(text)
    report.plot(os.path.join(out, "busbw.png"))
    return 0


def main():
    args = parse_args()
    if args.report:
        return rerender(args)
    stamp = datetime.datetime.now(datetime.timezone.utc)
    out = args.out or os.path.join(args.build, "perf", "compare", stamp.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(os.path.join(out, "logs"), exist_ok=True)
    keeper = priority.Keeper().start()
    runner = Runner(args, out)
    started = time.monotonic()
    source = braid_source(args.build)  # before the run: the tree may change during it
    try:
        samples, probe = measure(runner, args)
    finally:
        keeper.stop()
    if keeper.problem:
        runner.note(keeper.problem)
    meta = {"date": stamp.strftime("%Y-%m-%d %H:%M UTC"), "braid": source,
            "loads": runner.loads + [os.getloadavg()[0]], "cpus": cpus(), "machine": machine(),
            "reps": args.reps,
            "seconds": args.seconds, "minutes": (time.monotonic() - started) / 60,
            "quick": args.quick, "notes": runner.notes}
    rows = medians(samples)
    floors = {(p, s): floor_a_us(probe, p, s) for p in args.ranks for s in args.sizes}
    report = compare_report.Report(args, rows, floors, probe, meta)
    text = report.markdown()
    print(text)
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"meta": meta, "probe": probe,
                   "rows": [dict(r) for r in rows.values()],
                   "floor_a_us": {f"{p}/{s}": v for (p, s), v in floors.items()}}, f, indent=1)
    plotted = report.plot(os.path.join(out, "busbw.png"))
    if not plotted:
        print(f"# no plot: {sys.executable} has no matplotlib (python3-matplotlib is in "
              "/usr/bin/python3)")
    print(f"# wrote {out}/table.md, results.json{', busbw.png' if plotted else ''} and logs/")
    return 1 if any("failed" in n or "wrong" in n for n in runner.notes) else 0


if __name__ == "__main__":
    sys.exit(main())
