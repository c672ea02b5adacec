"""perf/compare's pure parts: every collective is measured by Braid and by the MPIs
with nccl-tests' busbw factors, and the single-copy floor follows its formula
(compare_report.single_copy_floor). Expected values are worked by hand from
REFERENCE.md's nccl-tests conventions, not from the code. Run by ctest."""
import os
import re
import sys
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import compare  # noqa: E402
import compare_report as report  # noqa: E402

KIB, MIB = 1 << 10, 1 << 20


class Collectives(unittest.TestCase):
    def test_every_collective_has_a_braid_tool_and_an_mpi_call(self):
        self.assertEqual(len(report.COLLS), 9)
        with open(os.path.join(HERE, "mpi_coll_perf.c")) as f:
            mpi = f.read()
        names = re.search(r"kCollNames\[kNumColls\] = \{([^}]*)\}", mpi).group(1)
        self.assertEqual(re.findall(r'"(\w+)"', names), report.COLLS)
        for coll in report.COLLS:
            tool = compare.BRAID_TOOLS[coll]
            self.assertTrue(os.path.exists(os.path.join(ROOT, "perf", "coll", tool + ".cc")), tool)
            self.assertIn(coll, report.COLL_TITLES)
        for call in ("MPI_Reduce(", "MPI_Gather(", "MPI_Scatter(", "MPI_Sendrecv("):
            self.assertIn(call, mpi)

    def test_bus_factors_are_nccl_tests(self):
        # REFERENCE.md: all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all,
        # gather, scatter (n-1)/n; broadcast, reduce, sendrecv 1.
        want = {"allreduce": 1.5, "allgather": 0.75, "reduce_scatter": 0.75, "alltoall": 0.75,
                "gather": 0.75, "scatter": 0.75, "bcast": 1.0, "reduce": 1.0, "sendrecv": 1.0}
        for coll, factor in want.items():
            self.assertAlmostEqual(report.bus_factor(coll, 4), factor, msg=coll)

    def test_rows_of_the_new_collectives_parse(self):
        out = "row mpich gather 4 1048576 1048576 100.000 10.4858 7.8643 0\n" \
              "row openmpi sendrecv 2 65536 65536 8.000 8.1920 8.1920 3\n"
        rows = compare.parse_rows(out)
        self.assertEqual([r["coll"] for r in rows], ["gather", "sendrecv"])
        self.assertAlmostEqual(rows[0]["busbw"], 1048576 / 100e3 * 0.75)
        self.assertAlmostEqual(rows[1]["busbw"], 65536 / 8e3)
        self.assertEqual(rows[1]["wrong"], 3)


def make_report(probe, colls, ranks, sizes, cpus=2, rows=None):
    args = types.SimpleNamespace(colls=colls, ranks=ranks, sizes=sizes, libs=compare.LIBS)
    meta = {"cpus": cpus, "braid": "test", "date": "today", "loads": [0.0], "minutes": 0,
            "reps": 1, "seconds": 0.1, "notes": []}
    return report.Report(args, rows or {}, {}, probe, meta)


class SingleCopyFloor(unittest.TestCase):
    def test_bytes_each_collective_must_move(self):
        s = MIB
        want2 = {"allgather": s, "alltoall": s, "reduce_scatter": s, "bcast": s, "reduce": s,
                 "allreduce": 2 * s, "gather": s // 2, "scatter": s // 2, "sendrecv": 2 * s}
        want4 = {"allgather": 3 * s, "alltoall": 3 * s, "reduce_scatter": 3 * s, "bcast": 3 * s,
                 "reduce": 3 * s, "allreduce": 6 * s, "gather": 3 * s // 4,
                 "scatter": 3 * s // 4, "sendrecv": 4 * s}
        for p, want in ((2, want2), (4, want4)):
            for coll, nbytes in want.items():
                self.assertEqual(report.single_copy_reads(coll, p, s), nbytes, (coll, p))

    def test_floor_takes_the_faster_reading_and_adds_the_reduction(self):
        probe = {"stream": {"2/4194304": 100.0},
                 "single_copy": {str(512 * KIB): 40.0, str(MIB): 70.0},
                 "single_copy_burst": {str(MIB): 65.0},
                 "single_copy_one": {str(MIB): 100.0, str(2 * MIB): 30.0}}
        r = make_report(probe, ["allgather", "allreduce"], [2], [MIB])
        # all-gather of 2 ranks: 1 MiB to move, 512 KiB a reader, or 1 MiB by one.
        self.assertAlmostEqual(r.single_copy_floor("allgather", 2, MIB), 40.0)
        # all-reduce: 2 MiB to move; one reader's 30 us beats the pair's 65 (burst) and
        # 70; plus 3 MiB of reduction traffic at 100 GB/s.
        self.assertAlmostEqual(r.single_copy_floor("allreduce", 2, MIB), 30.0 + 3 * MIB / 1e5)
        # below 64 KiB, and where nothing was measured, there is none.
        self.assertIsNone(r.single_copy_floor("allgather", 2, 8))
        self.assertIsNone(r.single_copy_floor("gather", 2, MIB))

    def test_reads_past_the_largest_measured_scale_with_their_bytes(self):
        probe = {"stream": {}, "single_copy": {str(64 * MIB): 5000.0}}
        r = make_report(probe, ["allgather"], [4], [64 * MIB])
        # 4 ranks on 2 cores: 192 MiB to move, 96 MiB a reader, at the 64 MiB read's rate.
        self.assertAlmostEqual(r.single_copy_floor("allgather", 4, 64 * MIB), 7500.0)

    def test_probe_is_asked_for_every_read_the_floor_needs(self):
        sizes = report.single_copy_sizes(report.COLLS, [2, 4], [64 * KIB, MIB], 2)
        for coll in report.COLLS:
            for p in (2, 4):
                for s in (64 * KIB, MIB):
                    total = report.single_copy_reads(coll, p, s)
                    self.assertIn(total // 2, sizes, (coll, p, s))
                    self.assertIn(total, sizes, (coll, p, s))


class Page(unittest.TestCase):
    def test_a_table_per_collective_with_the_single_copy_ratio(self):
        rows = {}
        for coll in report.COLLS:
            for lib, us in (("braid", 50.0), ("openmpi", 60.0), ("mpich", 40.0)):
                rows[(lib, coll, 2, 64 * KIB)] = {
                    "lib": lib, "coll": coll, "nranks": 2, "size": 64 * KIB, "bytes": 64 * KIB,
                    "time_us": us, "busbw": 1.0, "wrong": 0}
        probe = {"stream": {"2/262144": 100.0}, "latency": {},
                 "single_copy": {str(b): 10.0 for b in (16 * KIB, 32 * KIB, 64 * KIB)}}
        text = make_report(probe, report.COLLS, [2], [64 * KIB], rows=rows).markdown()
        for coll in report.COLLS:
            self.assertIn(f"#### {report.COLL_TITLES[coll]}, 2 ranks", text)
        self.assertEqual(text.count("braid / single-copy floor"), 9)
        self.assertIn("| 64 KiB | 50.0 us / 1.00 | 60.0 us / 1.00 | 40.0 us / 1.00 | 10.0 us | "
                      "5.00x | 1.25x | mpich 40.0 us |", text)
        self.assertNotIn("Not in this run", text)

    def test_points_behind_the_best_mpi_are_listed_with_their_runs_and_cause(self):
        def row(lib, coll, s, us, spread):
            return {"lib": lib, "coll": coll, "nranks": 2, "size": s, "bytes": s,
                    "time_us": us, "busbw": 1.0, "wrong": 0, "runs": 3, "spread": spread}
        rows = {}
        for coll, s, braid, mpi in (
                ("bcast", 8, (0.4, [0.38, 0.4, 0.45]), (0.1, [0.09, 0.1, 0.12])),
                ("allgather", MIB, (90.0, [80.0, 90.0, 100.0]), (85.0, [84.0, 85.0, 95.0])),
                ("reduce", MIB, (100.0, [99.0, 100.0, 101.0]), (50.0, [49.0, 50.0, 51.0])),
                ("alltoall", MIB, (70.0, [69.0, 70.0, 71.0]), (85.0, [84.0, 85.0, 95.0]))):
            rows[("braid", coll, 2, s)] = row("braid", coll, s, *braid)
            rows[("openmpi", coll, 2, s)] = row("openmpi", coll, s, *mpi)
        r = make_report({}, ["bcast", "allgather", "reduce", "alltoall"], [2], [8, MIB],
                        rows=rows)
        text = "\n".join(r.trailing_table())
        # 0.4 us against 0.1: every run behind, a small call's cost.
        self.assertIn("| broadcast | 2 | 8 B | 0.40 us (0.38 us-0.45 us) | openmpi 0.10 us "
                      "(0.09 us-0.12 us) | 4.00x | every run behind | "
                      + report.TRAIL_CAUSES["small"] + " |", text)
        # 90 us against 85: Braid's fastest run (80) beats the MPI's slowest (95).
        self.assertIn("| all-gather | 2 | 1 MiB | 90.0 us (80.0 us-100 us) | openmpi 85.0 us "
                      "(84.0 us-95.0 us) | 1.06x | overlap | " + report.TRAIL_CAUSES["copies"],
                      text)
        self.assertIn("| reduce | 2 | 1 MiB |", text)
        self.assertIn(report.TRAIL_CAUSES["reductions"], text)
        # ahead: not listed.
        self.assertNotIn("all-to-all", text)
        self.assertIn("behind at 8 B 4.00x openmpi", "\n".join(r.single_copy_goals()))

    def test_runs_overlap_when_either_range_reaches_the_other(self):
        a = {"spread": [1.0, 2.0, 3.0]}
        self.assertTrue(report.runs_overlap(a, {"spread": [3.0, 4.0, 5.0]}))
        self.assertTrue(report.runs_overlap({"spread": [0.5, 4.0, 9.0]}, a))
        self.assertFalse(report.runs_overlap(a, {"spread": [3.5, 4.0, 5.0]}))
        self.assertFalse(report.runs_overlap(a, {"time_us": 4.0}))


if __name__ == "__main__":
    unittest.main()
