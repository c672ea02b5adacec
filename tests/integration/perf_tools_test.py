"""Every perf tool, run by braidrun as real ranks (processes x threads x ranks
per thread), with every nccl-tests option, read back with nccl_tests_format:
a reader written against nccl-tests' documented output and JSON, so what a
script written for nccl-tests would see. Expected sizes, counts and
bandwidth factors are nccl-tests' rules, restated here.

    python3 perf_tools_test.py BUILD_DIR
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from nccl_tests_format import TIMESTAMP, check_json, nccl_tests_sizes, parse_output

BUILD = sys.argv.pop(1) if len(sys.argv) > 1 else "build"
BRAIDRUN = os.path.join(BUILD, "tools", "braidrun", "braidrun")

TYPE_SIZE = {"int8": 1, "uint8": 1, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8,
             "half": 2, "float": 4, "double": 8, "bfloat16": 2, "f8e4m3": 1, "f8e5m2": 1}
OPS = ["sum", "prod", "max", "min", "avg", "mulsum"]


def gathered(nbytes, es, n):
    """nccl-tests' per-rank block of a gathering collective: 16-byte multiples."""
    align = 16 // es if es < 16 else 1
    return nbytes // es // n // align * align


# tool: (has op, has root, in place checked, (count, size column) of a row, algbw's S, busbw factor)
def whole(b, es, n):
    return b // es, b // es * es


def blocks(b, es, n):
    return gathered(b, es, n), gathered(b, es, n) * n * es


def per_peer(b, es, n):
    return b // es // n, b // es // n * n * es


def cube(b, es, n):
    block = b // es // (4 * n) * 4
    return block, block * n * es


ROW_S = lambda count, size, es, n: size  # noqa: E731
TOOLS = {
    "all_reduce_perf": (True, False, True, whole, ROW_S, lambda n: 2 * (n - 1) / n),
    "all_gather_perf": (False, False, True, blocks, ROW_S, lambda n: (n - 1) / n),
    "reduce_scatter_perf": (True, False, True, blocks, ROW_S, lambda n: (n - 1) / n),
    "broadcast_perf": (False, True, True, whole, ROW_S, lambda n: 1.0),
    "reduce_perf": (True, True, True, whole, ROW_S, lambda n: 1.0),
    "gather_perf": (False, True, True, blocks, ROW_S, lambda n: (n - 1) / n),
    "scatter_perf": (False, True, True, blocks, ROW_S, lambda n: (n - 1) / n),
    "alltoall_perf": (False, False, True, blocks, ROW_S, lambda n: (n - 1) / n),
    "alltoallv_perf": (False, False, False, per_peer, ROW_S, lambda n: (n - 1) / n),
    "sendrecv_perf": (False, False, True, whole, ROW_S, lambda n: 1.0),
    "hypercube_perf": (False, False, True, cube,
                       lambda count, size, es, n: count * es * (n - 1), lambda n: 1.0),
}

# Every nccl-tests option appears in at least one configuration, each value of
# -z, -a, -y, -p and -R in one: (processes, options, what the run must show).
CONFIGS = {
    "threads": (2, ["-t", "2", "-g", "1", "-p", "1", "-b", "8", "-e", "64K", "-f", "8", "-n", "4",
                    "-m", "2", "-w", "1", "-N", "2", "-c", "2", "-o", "all", "-d", "float",
                    "-r", "1", "-z", "0", "-y", "0", "-T", "60", "-C", "1", "-S", "1", "-a", "3",
                    "-R", "1", "-M", "1", "-u", "4", "-I", "1", "-K", "1"]),
    "ranks_per_thread": (1, ["-t", "1", "-g", "4", "-b", "1K", "-e", "4K", "-i", "3K", "-n", "2",
                             "-w", "0", "-c", "1", "-d", "f8e4m3", "-o", "sum", "-r", "3",
                             "-z", "1", "-y", "0", "-G", "2", "-a", "0", "-R", "2", "-D", "1",
                             "-x", "1", "-V", "32", "-P", "1", "-M", "0", "-I", "0", "-S", "0",
                             "-C", "0", "-p", "0"]),
    "processes": (4, ["--minbytes", "64", "--maxbytes", "64", "--iters", "3",
                      "--datatype", "f8e5m2", "--op", "max", "--blocking", "2", "--average", "2",
                      "--unalign", "0", "--run_cycles", "1", "--parallel_init", "0",
                      "--check", "1", "--root", "2", "--stream_null", "1"]),
    "mixed": (2, ["--nthreads", "1", "--ngpus", "2", "--minbytes", "256", "--maxbytes", "1K",
                  "--stepfactor", "2", "--iters", "3", "--agg_iters", "3", "--blocking", "3",
                  "--average", "1", "--datatype", "bfloat16", "--op", "mulsum",
                  "--warmup_iters", "2", "--local_register", "0", "--memory_report", "1",
                  "--per_iter_timing", "1", "--per_iter_skip", "2", "--report_timestamps", "0",
                  "--report_cputime", "0", "--cudagraph", "0", "--timeout", "60",
                  "--cta_policy", "2", "--device_cta_count", "16"]),
}


def opt(args, short, long, default):
    """The value of an option given as short or long, else nccl-tests' default."""
    for flag in (short, long):
        if flag in args:
            return args[args.index(flag) + 1]
    return default


def size_value(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * mult[text[-1]] if text[-1] in mult else int(text)


def run(tool, procs, args, timeout=120):
    cmd = [BRAIDRUN, "-n", str(procs), "--no-prefix", "--timeout", str(timeout),
           os.path.join(BUILD, "perf", "coll", tool)] + args
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout + 10)
    return p.returncode, p.stdout


class PerfTools(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="perf-tools-test-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def expected_rows(self, tool, args, nranks):
        has_op, has_root, _, sizes_of, _, _ = TOOLS[tool]
        b = size_value(opt(args, "-b", "--minbytes", "32M"))
        e = size_value(opt(args, "-e", "--maxbytes", "32M"))
        f = size_value(opt(args, "-f", "--stepfactor", "1"))
        i = size_value(opt(args, "-i", "--stepbytes", "1M"))
        op = opt(args, "-o", "--op", "sum")
        ops = (OPS if op == "all" else [op]) if has_op else ["none"]
        dtype = opt(args, "-d", "--datatype", "float")
        root = int(opt(args, "-r", "--root", "0")) if has_root else -1
        cycles = int(opt(args, "-N", "--run_cycles", "1"))
        rows = []
        for _ in range(cycles):
            for o in ops:
                for nbytes in nccl_tests_sizes(b, e, f, i):
                    es = TYPE_SIZE[dtype]
                    count, size = sizes_of(nbytes // es * es, es, nranks)
                    rows.append((size, count, dtype, o, root))
        return rows

    def check_run(self, tool, name, procs, args):
        json_path = os.path.join(self.tmp, f"{tool}.{name}.json")
        rc, text = run(tool, procs, args + ["-J", json_path])
        self.assertEqual(rc, 0, text[-3000:])
        out = parse_output(text)
        threads = int(opt(args, "-t", "--nthreads", "1"))
        per_thread = int(opt(args, "-g", "--ngpus", "1"))
        n = procs * threads * per_thread
        _, _, in_place_checked, _, alg_s, factor = TOOLS[tool]
        # The run line, as nccl-tests prints it.
        self.assertEqual(out.run["nThread"], threads)
        self.assertEqual(out.run["nGpus"], per_thread)
        self.assertEqual(out.run["iters"], int(opt(args, "-n", "--iters", "20")))
        self.assertEqual(out.run["agg_iters"], int(opt(args, "-m", "--agg_iters", "1")))
        self.assertEqual(out.run["warmup_iters"], int(opt(args, "-w", "--warmup_iters", "1")))
        self.assertEqual(out.run["validation"], int(opt(args, "-c", "--check", "1")))
        self.assertEqual(out.run["unalign"], int(opt(args, "-u", "--unalign", "0")))
        # One line per rank, in order; ranks of one process (threads x ranks) share a pid.
        self.assertEqual([r["rank"] for r in out.ranks], list(range(n)), text[:3000])
        pids = [r["pid"] for r in out.ranks]
        for r in range(n):
            for q in range(n):
                same = r // (threads * per_thread) == q // (threads * per_thread)
                self.assertEqual(pids[r] == pids[q], same, (r, q, pids))
        # The rows: nccl-tests' sizes, counts, types, ops and roots, every value right.
        want = self.expected_rows(tool, args, n)
        got = [(r.size, r.count, r.type, r.redop, r.root) for r in out.rows]
        self.assertEqual(got, want, text[-3000:])
        for r in out.rows:
            self.assertEqual(r.out_of_place.wrong, 0, text[-3000:])
            self.assertEqual(r.in_place.wrong, 0 if in_place_checked else None, text[-3000:])
        self.assertEqual((out.out_of_bounds, out.out_of_bounds_ok), (0, True))
        per_iter = opt(args, "-I", "--per_iter_timing", "0") == "1"
        self.assertEqual(out.per_iter, per_iter)
        for r in out.rows:
            self.assertEqual(len(r.out_of_place.per_iter), 4 if per_iter else 0)
        cpu = opt(args, "-C", "--report_cputime", "0") == "1"
        self.assertEqual(out.time_title, "cputime" if cpu else "time")
        stamps = opt(args, "-S", "--report_timestamps", "0") == "1"
        for r in out.rows:
            self.assertTrue(TIMESTAMP.match(r.timestamp) if stamps else r.timestamp == "", r)
        memory = opt(args, "-M", "--memory_report", "0") == "1"
        self.assertEqual(any("memory usage" in c for c in out.comments), memory, out.comments)
        self.check_json_file(json_path, tool, args, out, n, procs, alg_s, factor, cpu)
        return out

    def check_json_file(self, path, tool, args, out, n, procs, alg_s, factor, cpu):
        with open(path) as f:
            doc = json.load(f)
        self.assertEqual(check_json(doc), [])
        config = doc["config"]
        self.assertEqual(config["nthreads"], out.run["nThread"])
        self.assertEqual(config["ngpus"], out.run["nGpus"])
        self.assertEqual(config["iterations"], out.run["iters"])
        self.assertEqual(config["aggregated_iterations"], out.run["agg_iters"])
        self.assertEqual(len(config["devices"]), n)
        self.assertEqual(doc["args"][-2:], ["-J", path])
        self.assertEqual(len(doc["results"]), len(out.rows))
        skip = int(opt(args, "-K", "--per_iter_skip", "0"))
        iters = out.run["iters"]
        for row, res in zip(out.rows, doc["results"]):
            self.assertEqual((res["size"], res["count"], res["type"], res["redop"]),
                             (row.size, row.count, row.type, row.redop))
            self.assertEqual(int(res["root"]), row.root)
            es = TYPE_SIZE[row.type]
            for key in ("out_of_place", "in_place"):
                p = res[key]
                t = p["cpu_time" if cpu else "time"]
                if p["alg_bw"] > 1e-3:  # bandwidth = S / time, busbw = algbw x factor
                    s = alg_s(row.count, row.size, es, n)
                    self.assertAlmostEqual(p["alg_bw"] * t * 1e3 / s, 1.0, delta=0.01)
                    self.assertAlmostEqual(p["bus_bw"] / p["alg_bw"], factor(n), delta=0.01)
                if out.per_iter:
                    it = res[key + "_per_iter"]
                    self.assertEqual(len(it["times_us"]), iters)
                    self.assertEqual(it["skipped_iterations"], skip)
                    # nccl-tests' statistics over the iterations after the skipped ones.
                    kept = sorted(it["times_us"][skip:])
                    self.assertAlmostEqual(it["min_us"], kept[0], delta=1e-3)
                    self.assertAlmostEqual(it["max_us"], kept[-1], delta=1e-3)
                    self.assertAlmostEqual(it["p50_us"], kept[len(kept) // 2], delta=1e-3)
                    self.assertAlmostEqual(it["avg_us"], sum(kept) / len(kept), delta=1e-3)
                    if procs > 1:  # each iteration: the max over the processes' rows
                        rows = it["per_process_max_times_us"]
                        self.assertEqual(len(rows), procs)
                        for i, t in enumerate(it["times_us"]):
                            self.assertAlmostEqual(t, max(r[i] for r in rows), delta=1e-3)
        self.assertEqual(doc["out_of_bounds"], {"count": 0, "okay": "true"})
        self.assertAlmostEqual(doc["average_bus_bandwidth"]["bandwidth"], out.avg_busbw,
                               delta=max(1e-3, out.avg_busbw * 1e-3))

    def test_every_tool_with_every_option(self):
        for tool in TOOLS:
            for name, (procs, args) in CONFIGS.items():
                with self.subTest(tool=tool, config=name):
                    out = self.check_run(tool, name, procs, args)
                    if name == "ranks_per_thread":  # -x -D -V -R 2 -G: named, no effect
                        line = [c for c in out.comments if "no effect" in c]
                        self.assertEqual(len(line), 1, out.comments)
                        for flag in ("-x", "-D", "-V", "-R 2", "-G"):
                            self.assertIn(flag, line[0])

    def test_hypercube_needs_a_power_of_two(self):
        rc, text = run("hypercube_perf", 3, ["-b", "1K", "-e", "1K"])
        self.assertEqual(rc, 0, text)
        self.assertIn("nRanks 3 is not a power of 2, skipping", text)
        self.assertEqual(parse_output(text).rows, [])

    def test_json_never_overwrites(self):
        path = os.path.join(self.tmp, "again.json")
        for expect in (path, path + ".0"):
            rc, text = run("all_reduce_perf", 2, ["-b", "8", "-e", "8", "-n", "1", "-J", path])
            self.assertEqual(rc, 0, text)
            self.assertIn("# Writing JSON output to " + expect + "\n", text)
            with open(expect) as f:
                self.assertEqual(check_json(json.load(f)), [])

    def test_nccl_tests_rules_between_options(self):
        rc, text = run("all_reduce_perf", 1, ["-D", "1"])
        self.assertNotEqual(rc, 0)
        self.assertIn("-R 2", text)
        rc, text = run("all_reduce_perf", 1, ["-h"])
        self.assertEqual(rc, 0)
        nccl, braid = text.split("Braid's own options:")
        for flag in ("-t, --nthreads", "-R, --local_register", "-D, --device_implementation",
                     "-I, --per_iter_timing", "-J, --output_file"):
            self.assertIn(flag, nccl)
        for flag in ("-A, --algo", "-P, --memalloc", "-E, --device_buffers"):
            self.assertIn(flag, braid)


if __name__ == "__main__":
    unittest.main(verbosity=2)
