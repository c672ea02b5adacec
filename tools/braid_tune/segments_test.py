"""braid-tune's bands (segments()): contiguous from 0 to infinity, valid for the tuning
parser (base_us >= 0, gbps > 0), and exact at every measured size, so that the selector
ranks algorithms at a measured size by what was measured there; and paired(), whose
ranking survives drift that moves whole runs. Run by ctest."""
import os
import random
import sys
from importlib.machinery import SourceFileLoader

tune = SourceFileLoader("braid_tune", os.path.join(os.path.dirname(__file__), "braid-tune")).load_module()

SIZES = [8, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1 << 20, 4 << 20, 16 << 20, 64 << 20]


def check(times):
    segs = tune.segments(times)
    assert segs[0][0] == "0", segs[0]
    assert segs[-1][1] == "inf", segs[-1]
    for (lo, hi, _, _), (nlo, _, _, _) in zip(segs, segs[1:]):
        assert hi == nlo, (hi, nlo)  # no gap, no overlap
    for lo, hi, base, gbps in segs:
        assert base >= 0 and gbps > 0, (lo, hi, base, gbps)
    for i, size in enumerate(sorted(times)):
        lo, hi, base, gbps = segs[i]
        assert int(lo) <= size < (float("inf") if hi == "inf" else int(hi)), (size, lo, hi)
        predicted = base + size / (gbps * 1e3)
        assert abs(predicted - times[size]) <= 1e-6 * max(1.0, times[size]), (size, predicted, times[size])


def check_paired(rng):
    # Runs drift as a whole (levels 0.5x to 4x); within a run, ring is 0.9x tree and
    # direct 3x tree. paired() recovers those ratios exactly.
    reps = []
    for _ in range(7):
        level = rng.uniform(0.5, 4.0)
        reps.append({"ring": {64: (90.0 * level, "")}, "tree": {64: (100.0 * level, "")},
                     "direct": {64: (300.0 * level, "")}})
    est = tune.paired(reps)
    assert abs(est["ring"][64] / est["tree"][64] - 0.9) < 1e-9, est
    assert abs(est["direct"][64] / est["tree"][64] - 3.0) < 1e-9, est
    # The level kept is the runs' median one.
    levels = sorted(r["tree"][64][0] / 100.0 for r in reps)
    assert abs(est["tree"][64] / 100.0 - levels[3]) < 1e-9, (est, levels)
    # Levels 1..5 and one run each way where ring stumbled or flew: the ratio of plain
    # medians says ring is 0.67x tree; within runs it was 0.9x in three of five.
    ratios = [0.9, 0.9, 0.9, 0.5, 2.0]
    reps = [{"ring": {64: (r * lv, "")}, "tree": {64: (float(lv), "")}}
            for lv, r in zip([1, 2, 3, 4, 5], ratios)]
    est = tune.paired(reps)
    assert abs(est["ring"][64] / est["tree"][64] - 0.9) < 0.02, est


def main():
    rng = random.Random(7)
    check_paired(rng)
    # Latency then bandwidth, as measured.
    check({s: 0.3 + s / 9e3 for s in SIZES})
    # Noise: times that fall between neighbours (flat bands).
    check({s: rng.uniform(0.2, 0.8) if s < 4096 else s / 9e3 for s in SIZES})
    # Super-linear growth (out of cache), where no base >= 0 meets both ends.
    check({s: (s / 9e3) * (1 + (s >= 4 << 20) * 3) + 0.2 for s in SIZES})
    for _ in range(200):
        check({s: rng.uniform(0.1, 2.0) * (0.2 + s / 5e3) for s in SIZES})
    print("segments and paired ok")


if __name__ == "__main__":
    sys.exit(main())
