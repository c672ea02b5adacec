"""compare.py's report: the side-by-side Markdown tables, issue 5's goals
checked one by one, and the busbw plot. Pure functions of the medians."""

import math

KIB, MIB = 1 << 10, 1 << 20
LIB_ORDER = ["braid", "braid-memalloc", "braid-registered", "openmpi", "openmpi-ucx", "mpich", "gloo", "torch-gloo"]
COLLS = ["allreduce", "allgather", "reduce_scatter", "bcast", "alltoall", "reduce", "gather",
         "scatter", "sendrecv"]
COLL_TITLES = {"allreduce": "all-reduce", "allgather": "all-gather",
               "reduce_scatter": "reduce-scatter", "bcast": "broadcast", "alltoall": "all-to-all",
               "reduce": "reduce", "gather": "gather", "scatter": "scatter",
               "sendrecv": "send/recv"}
# Collectives whose single-copy floor adds the reduction's memory traffic.
REDUCING = ("allreduce", "reduce_scatter", "reduce")
# The largest read floor_probe --single-copy is asked for: beyond it a read costs its
# bytes at the largest measured read's rate (memory bandwidth bound there).
SINGLE_COPY_CAP = 64 * MIB
MPI_LIBS = ("openmpi", "openmpi-ucx", "mpich")
# Issue 5's own floor A on this VM (its table), for the sizes it lists: the
# measured floor moves with the probe (vCPU placement, AVX-512 STREAM in L1/L2),
# so the report shows both and checks the goals against both.
ISSUE_FLOOR_US = {(2, 8): 0.17, (2, 64 * KIB): 3.2, (2, MIB): 48.5, (2, 16 * MIB): 840,
                  (2, 64 * MIB): 5600, (4, 8): 1.6, (4, 64 * KIB): 7.7, (4, MIB): 98,
                  (4, 16 * MIB): 2800, (4, 64 * MIB): 11300}


def bus_factor(coll, nranks):
    """nccl-tests' busbw / algbw."""
    if coll == "allreduce":
        return 2 * (nranks - 1) / nranks
    return 1.0 if coll in ("bcast", "reduce", "sendrecv") else (nranks - 1) / nranks


def working_set(nranks, size):
    """Bytes an all-reduce touches: every rank's input and output."""
    return max(2 * nranks * size, 64 * KIB)


def single_copy_reads(coll, p, s):
    """Bytes a call of p ranks on nccl-tests' size s must move between processes, each
    moved once (by one process_vm_readv or _writev): what of the output is not already
    the rank's own."""
    if coll in ("allgather", "alltoall", "reduce_scatter", "bcast", "reduce"):
        # Each rank's (P-1)/P of a whole array of s bytes (all-gather, all-to-all,
        # reduce-scatter), or the s bytes every non-root needs from the root (broadcast)
        # or the root from every non-root (reduce, combined on the way or not).
        return (p - 1) * s
    if coll == "allreduce":  # a reduce-scatter and an all-gather of s bytes
        return 2 * (p - 1) * s
    if coll in ("gather", "scatter"):  # the P-1 blocks of s/P not the root's own
        return (p - 1) * s // p
    return p * s  # send/recv: every rank's s bytes to its neighbour


def single_copy_readers(p, cpus):
    """Processes that share a call's single-copy reads: one a core, at most P."""
    return max(1, min(p, cpus))


def single_copy_sizes(colls, ranks, sizes, cpus):
    """The reads floor_probe --single-copy must time for the single-copy floor of these
    calls: the bytes of each split over its readers, and of one reader alone."""
    out = set()
    for coll in colls:
        for p in ranks:
            for s in sizes:
                total = single_copy_reads(coll, p, s)
                out.update(b for b in (total // single_copy_readers(p, cpus), total)
                           if 0 < b <= SINGLE_COPY_CAP)
    return sorted(out)


SINGLE_COPY_NOTE = (
    "The single-copy floor is what a call of private buffers takes when every byte it must "
    "move between processes moves once, with process_vm_readv (cross-memory attach): "
    "`min(read(R / C), read_one(R)) + [(P + 1) S / B]`. R is those bytes: (P-1) S for "
    "all-gather, all-to-all and reduce-scatter (each rank's (P-1)/P of the whole array S), "
    "broadcast and reduce (S to or from each non-root); 2 (P-1) S for all-reduce (a "
    "reduce-scatter and an all-gather); (P-1) S / P for gather and scatter; P S for "
    "send/recv. C = min(P, cores) processes share them; read(b) is floor_probe's time for 2 "
    "processes each reading b bytes of the other at once, read_one(b) for one reading while "
    "the other waits (each the better of a hand-off a read and reads in bursts; past 64 MiB "
    "a read costs its bytes at the 64 MiB read's rate). The bracket, for all-reduce, "
    "reduce-scatter and reduce only, is the "
    "reduction's memory traffic (P inputs of S bytes read, S written) at floor A's STREAM "
    "bandwidth B. Sizes below 64 KiB have none (hand-offs, not bytes, bound them). It bounds "
    "what moving bytes with process_vm_readv can do: where a read's fixed cost (pinning the "
    "peer's pages) outweighs a copy, two in-cache copies through a shared segment beat it, "
    "and the ratio falls below 1.")


# What makes Braid trail where it does, by kind of point (the sections of
# docs/performance-gaps.md, which measure each).
TRAIL_CAUSES = {
    "small": "[fixed cost per call](performance-gaps.md#small-calls-the-cost-of-a-call)",
    "copies": "[two copies where the MPI reads once]"
              "(performance-gaps.md#large-calls-copies-against-one-read)",
    "reductions": "[reductions](performance-gaps.md#reductions)",
}


def trail_cause(coll, s):
    """The kind of cause behind a point where Braid trails (TRAIL_CAUSES)."""
    if s < 64 * KIB:
        return TRAIL_CAUSES["small"]
    return TRAIL_CAUSES["reductions" if coll in REDUCING else "copies"]


def runs_overlap(a, b):
    """Whether two rows' runs overlap: a's fastest no slower than b's slowest, and b's
    no slower than a's (a row without its runs' spread: never)."""
    sa, sb = a.get("spread"), b.get("spread")
    if not sa or not sb:
        return False
    return sa[0] <= sb[-1] and sb[0] <= sa[-1]


def runs_name(r):
    """A row's median with its runs' range."""
    spread = r.get("spread")
    if not spread or len(spread) < 2:
        return time_name(r["time_us"])
    return f"{time_name(r['time_us'])} ({time_name(spread[0])}-{time_name(spread[-1])})"


def parse_size(text):
    units = {"K": KIB, "M": MIB, "G": 1 << 30}
    text = text.strip()
    if text and text[-1].upper() in units:
        return int(float(text[:-1]) * units[text[-1].upper()])
    return int(text)


def size_name(b):
    for unit, name in ((MIB, "MiB"), (KIB, "KiB")):
        if b >= unit and b % unit == 0:
            return f"{b // unit} {name}"
    return f"{b} B"


def time_name(us):
    if us is None:
        return "-"
    if us < 10:
        return f"{us:.2f} us"
    if us < 1000:
        return f"{us:.1f} us" if us < 100 else f"{us:.0f} us"
    return f"{us / 1000:.2f} ms" if us < 100000 else f"{us / 1000:.0f} ms"


def ratio_name(x):
    if x is None:
        return "-"
    return f"{x:.2f}x" if x < 10 else f"{x:.0f}x"


class Report:
    def __init__(self, args, rows, floors, probe, meta):
        self.args = args
        self.rows = rows  # (lib, coll, nranks, size) -> median row
        self.floors = floors  # (nranks, size) -> us or None
        self.probe = probe
        self.meta = meta

    def row(self, lib, coll, p, s):
        return self.rows.get((lib, coll, p, s))

    def libs(self, coll):
        return [lib for lib in LIB_ORDER if lib in self.args.libs and
                any(k[0] == lib and k[1] == coll for k in self.rows)]

    def best_peer(self, coll, p, s, among=None):
        """(lib, row) of the fastest peer, or (None, None)."""
        best = (None, None)
        for lib in among or [x for x in LIB_ORDER if not x.startswith("braid")]:
            r = self.row(lib, coll, p, s)
            if r and (best[1] is None or r["time_us"] < best[1]["time_us"]):
                best = (lib, r)
        return best

    # ---- tables ----------------------------------------------------------

    def table(self, coll, p):
        libs = self.libs(coll)
        if not libs:
            return []
        is_ar = coll == "allreduce"
        head = ["size"] + (["floor A", "issue's floor A"] if is_ar else []) + libs
        head += (["braid / floor A (issue's)"] if is_ar else [])
        floor_b = is_ar and any(self.two_rank_floor(p, s, "exchange") for s in self.args.sizes)
        head += ["braid / floor B"] if floor_b else []
        floor_c = is_ar and any(self.two_rank_floor(p, s, "inplace") for s in self.args.sizes)
        head += ["braid-memalloc / floor C"] if floor_c else []
        single = any(self.single_copy_floor(coll, p, s) for s in self.args.sizes)
        head += ["single-copy floor", "braid / single-copy floor"] if single else []
        head += ["braid / best peer (time)", "best peer"]
        lines = [f"#### {COLL_TITLES[coll]}, {p} ranks" +
                 (f" on {self.meta['cpus']} cores" if p > self.meta["cpus"] else ""),
                 "", "| " + " | ".join(head) + " |",
                 "|" + "---:|" * len(head)]
        for s in self.args.sizes:
            cells = [size_name(s)]
            floor = self.floors.get((p, s))
            issue_floor = ISSUE_FLOOR_US.get((p, s))
            if is_ar:
                cells += [time_name(floor), time_name(issue_floor)]
            for lib in libs:
                r = self.row(lib, coll, p, s)
                cells.append(f"{time_name(r['time_us'])} / {r['busbw']:.2f}" if r else "-")
            braid = self.row("braid", coll, p, s)
            if braid and braid["bytes"] == 0:
                braid = None  # a gathering call of 0-byte blocks: nothing to compare
            if is_ar:
                cells.append(ratio_name(braid["time_us"] / floor) + (
                    f" ({ratio_name(braid['time_us'] / issue_floor)})" if issue_floor else "")
                    if braid and floor else "-")
            if floor_b:
                b = self.two_rank_floor(p, s, "exchange")
                cells.append(ratio_name(braid["time_us"] / b) if braid and b else "-")
            if floor_c:
                c = self.two_rank_floor(p, s, "inplace")
                lent = self.row("braid-memalloc", coll, p, s)
                cells.append(ratio_name(lent["time_us"] / c) if lent and c else "-")
            if single:
                sc = self.single_copy_floor(coll, p, s)
                cells += [time_name(sc), ratio_name(braid["time_us"] / sc) if braid and sc else "-"]
            lib, peer = self.best_peer(coll, p, s)
            cells.append(ratio_name(braid["time_us"] / peer["time_us"]) if braid and peer else "-")
            cells.append(f"{lib} {time_name(peer['time_us'])}" if peer else "-")
            lines.append("| " + " | ".join(cells) + " |")
        algos = sorted({self.rows[k].get("algorithm", "") for k in self.rows
                        if k[0] == "braid" and k[1] == coll and k[2] == p} - {""})
        lines += ["", "Cells: time per call / busbw (GB/s). Braid ran: " +
                  (", ".join(algos) if algos else "-") + ".", ""]
        return lines

    # ---- goals -----------------------------------------------------------

    def goals(self):
        """Issue 5's goals, each with the measured value and met / missed."""
        out = []

        def add(ok, text):
            out.append(f"- {'met' if ok else '**missed**'}: {text}")

        for p, small_us, mult in ((2, 0.30, 2.0), (4, 2.5, 2.5)):
            if p not in self.args.ranks:
                continue
            r = self.row("braid", "allreduce", p, 8)
            if r and 8 in self.args.sizes:
                floor = self.floors.get((p, 8))
                against = (f"; floor A {time_name(floor)}, {r['time_us'] / floor:.2f}x"
                           if floor else "")
                if floor and floor > small_us and r["time_us"] > small_us:
                    against += (f"; floor A alone, {math.ceil(math.log2(p))} one-way "
                                f"hand-offs of {self.hand_off_us(p):.2f} us in this run, is "
                                "above the goal")
                add(r["time_us"] <= small_us, f"all-reduce {p} ranks 8 B: {time_name(r['time_us'])}"
                    f" (goal <= {small_us} us{self.by(r['time_us'] / small_us)}{against})")
            for s in self.args.sizes:
                floor, r = self.floors.get((p, s)), self.row("braid", "allreduce", p, s)
                if s >= 64 * KIB and r and floor:
                    x = r["time_us"] / floor
                    issue = ISSUE_FLOOR_US.get((p, s))
                    against = (f"; {r['time_us'] / issue:.2f}x issue 5's floor {time_name(issue)}"
                               if issue else "")
                    b = self.two_rank_floor(p, s, "exchange")
                    against += f"; {r['time_us'] / b:.2f}x floor B {time_name(b)}" if b else ""
                    if x > mult:
                        c = self.two_rank_floor(p, s, "inplace")
                        against += self.lent(
                            "allreduce", p, s, lambda m: m["time_us"] / floor <= mult,
                            lambda m: f"{m['time_us'] / floor:.2f}x floor A" +
                            (f" ({m['time_us'] / c:.2f}x floor C {time_name(c)})" if c else ""))
                    add(x <= mult, f"all-reduce {p} ranks {size_name(s)}: {x:.2f}x floor A "
                        f"({time_name(r['time_us'])} vs {time_name(floor)}; goal <= {mult}x"
                        f"{self.by(x / mult)}{against})")
        for p in self.args.ranks:
            for coll in ("allgather", "reduce_scatter", "bcast", "alltoall"):
                for s in (64 * KIB, MIB, 16 * MIB):
                    r = self.row("braid", coll, p, s)
                    lib, peer = self.best_peer(coll, p, s, MPI_LIBS)
                    if r and peer and s in self.args.sizes:
                        x = r["busbw"] / peer["busbw"] if peer["busbw"] else math.inf
                        lent = "" if x >= 1.5 else self.lent(
                            coll, p, s, lambda m, b=peer["busbw"]: m["busbw"] >= 1.5 * b,
                            lambda m, b=peer["busbw"]: f"{m['busbw'] / b:.2f}x")
                        add(x >= 1.5, f"{COLL_TITLES[coll]} {p} ranks {size_name(s)}: busbw "
                            f"{x:.2f}x {lib}'s ({r['busbw']:.2f} vs {peer['busbw']:.2f} GB/s; goal"
                            f" >= 1.5x{self.by(1.5 / x if x else math.inf)}{lent})")
            for s in self.args.sizes:
                rs = self.row("braid", "reduce_scatter", p, s)
                ar = self.row("braid", "allreduce", p, s)
                if rs and ar and s >= 64 * KIB:
                    add(rs["time_us"] <= ar["time_us"], f"reduce-scatter {p} ranks {size_name(s)}"
                        f" {time_name(rs['time_us'])} vs all-reduce of the same input "
                        f"{time_name(ar['time_us'])} (goal: not slower)")
            for s, want in ((8, 100), (64 * MIB, 5)):
                r = self.row("braid", "allreduce", p, s)
                t = self.row("torch-gloo", "allreduce", p, s)
                if r and t:
                    x = t["time_us"] / r["time_us"]
                    need = t["time_us"] / want
                    bound = ""
                    if x < want:
                        bound = f"; braid needs {time_name(need)}"
                        b = self.two_rank_floor(p, s, "exchange")
                        bound += f", {need / b:.2f}x floor B" if b else ""
                        floor = self.floors.get((p, s))
                        bound += f", {need / floor:.2f}x floor A" if floor else ""
                        bound += self.lent("allreduce", p, s,
                                           lambda m: t["time_us"] / m["time_us"] >= want,
                                           lambda m: f"{t['time_us'] / m['time_us']:.1f}x")
                    add(x >= want, f"torch gloo / braid {p} ranks {size_name(s)}: {x:.1f}x "
                        f"(goal >= {want}x{self.by(want / x)}{bound})")
            for s in self.args.sizes:
                r = self.row("braid", "allreduce", p, s)
                lib, peer = self.best_peer("allreduce", p, s)
                if r and peer:
                    x = r["time_us"] / peer["time_us"]
                    add(x < 1, f"all-reduce {p} ranks {size_name(s)} beats every peer: braid "
                        f"{time_name(r['time_us'])}, best {lib} {time_name(peer['time_us'])}"
                        f" ({x:.2f}x)")
        return out

    def lent(self, coll, p, s, meets, value):
        """For a missed goal: the same call on buffers peers read where they lie (one copy
        fewer), from braidMemAlloc and registered with braidCommRegister, against the same
        goal."""
        out = ""
        for lib, how in (("braid-memalloc", "from braidMemAlloc"),
                         ("braid-registered", "registered")):
            m = self.row(lib, coll, p, s)
            if m:
                out += f"; {how} {value(m)}, {'met' if meets(m) else 'missed'}"
        return out

    def hand_off_us(self, p):
        """The one-way hand-off floor A counts for p ranks: spinning across cores, or
        yielding on one core when ranks share cores."""
        lat = self.probe.get("latency", {}) if self.probe else {}
        return lat.get("yield" if p > self.meta["cpus"] else "spin", math.nan)

    def two_rank_floor(self, p, s, kind):
        """Floor B (kind "exchange": floor_probe's exchange of 2 ranks' private buffers) or
        floor C (kind "inplace": buffers peers read in place); None where not measured."""
        if p != 2 or not self.probe:
            return None
        return self.probe.get(kind, {}).get(str(s))

    def single_copy_floor(self, coll, p, s):
        """What a call that moves each byte between processes once takes, or None where
        the probe did not measure it:

            single-copy floor = min(read(R / C), read_one(R)) + [(P + 1) S / B]

        R = single_copy_reads(coll, P, S), the bytes that must cross processes; C =
        min(P, cores) processes share them; read(b) is floor_probe's time for 2 processes
        each reading b bytes of the other's private memory with one process_vm_readv at
        once, read_one(b) for one reading while the other waits (each the better of a
        hand-off a read and reads in bursts; past 64 MiB, a read costs its bytes at the
        64 MiB read's rate). The bracket is the reduction's
        memory traffic, for all-reduce, reduce-scatter and reduce only: P inputs of S
        bytes read and S bytes of results written at floor A's STREAM bandwidth B."""
        if not self.probe or s < 64 * KIB:
            return None
        total = single_copy_reads(coll, p, s)
        readers = single_copy_readers(p, self.meta["cpus"])
        times = [t for t in (self.probe_read("single_copy", total // readers),
                             self.probe_read("single_copy_burst", total // readers),
                             self.probe_read("single_copy_one", total),
                             self.probe_read("single_copy_one_burst", total)) if t]
        if not times:
            return None
        us = min(times)
        if coll in REDUCING:
            bw = self.probe.get("stream", {}).get(
                f"{min(p, 2, self.meta['cpus'])}/{working_set(p, s)}")
            if not bw:
                return None
            us += (p + 1) * s / (bw * 1e9) * 1e6
        return us

    def probe_read(self, kind, nbytes):
        """floor_probe's time for a read of nbytes (kind single_copy or single_copy_one):
        measured, or past the largest measured read at that read's rate; else None."""
        got = {int(k): v for k, v in self.probe.get(kind, {}).items()}
        if nbytes in got:
            return got[nbytes]
        top = max(got, default=0)
        return got[top] * nbytes / top if top and nbytes > top >= SINGLE_COPY_CAP else None

    def single_copy_goals(self):
        """Issue 46's goals: every collective at or ahead of the best MPI at every size,
        and all-reduce (2 ranks), all-gather and all-to-all within 1.25x of the
        single-copy floor from 64 KiB."""
        out = []
        trailing = self.trailing()
        for coll in self.args.colls:
            for p in self.args.ranks:
                behind = [f"{size_name(s)} {r['time_us'] / peer['time_us']:.2f}x {lib}"
                          for c, q, s, lib, r, peer in trailing if (c, q) == (coll, p)]
                compared = any(self.row("braid", coll, p, s) and
                               self.best_peer(coll, p, s, MPI_LIBS)[1] for s in self.args.sizes)
                if compared:
                    out.append(f"- {'**missed**' if behind else 'met'}: {COLL_TITLES[coll]} "
                               f"{p} ranks at or ahead of the best MPI at every size" +
                               (f" (behind at {', '.join(behind)})" if behind else ""))
                if coll not in ("allgather", "alltoall") and (coll, p) != ("allreduce", 2):
                    continue
                for s in self.args.sizes:
                    r, sc = self.row("braid", coll, p, s), self.single_copy_floor(coll, p, s)
                    if r and sc:
                        x = r["time_us"] / sc
                        # The MPIs move these bytes by single copy: how near they come.
                        lib, peer = self.best_peer(coll, p, s, MPI_LIBS)
                        mpi = (f"; the best MPI, {lib}, {peer['time_us'] / sc:.2f}x"
                               if peer else "")
                        out.append(f"- {'met' if x <= 1.25 else '**missed**'}: "
                                   f"{COLL_TITLES[coll]} {p} ranks {size_name(s)} {x:.2f}x the "
                                   f"single-copy floor ({time_name(r['time_us'])} vs "
                                   f"{time_name(sc)}; goal <= 1.25x{mpi})")
        return out

    def trailing(self):
        """Every point where Braid's median trails the best MPI's: (coll, p, s, lib, braid
        row, peer row), in table order."""
        out = []
        for coll in self.args.colls:
            for p in self.args.ranks:
                for s in self.args.sizes:
                    r = self.row("braid", coll, p, s)
                    lib, peer = self.best_peer(coll, p, s, MPI_LIBS)
                    if r and peer and r["bytes"] > 0 and r["time_us"] > peer["time_us"]:
                        out.append((coll, p, s, lib, r, peer))
        return out

    def trailing_table(self):
        """Where Braid trails the best MPI, each point with what the run says of it (do
        the runs overlap) and its cause by kind (docs/performance-gaps.md has the
        measurements behind each kind)."""
        points = self.trailing()
        if not points:
            return []
        lines = ["#### Where Braid trails the best MPI", "",
                 "Each point where Braid's median is behind, with both libraries' runs "
                 "(fastest-slowest) and the cause of its kind, measured in "
                 "[performance-gaps.md](performance-gaps.md). Where the runs overlap, the run "
                 "cannot tell the two apart.", "",
                 "| collective | ranks | size | braid | best MPI | behind | runs | cause |",
                 "|---|---:|---:|---:|---:|---:|---|---|"]
        for coll, p, s, lib, r, peer in points:
            overlap = runs_overlap(r, peer)
            lines.append(
                f"| {COLL_TITLES[coll]} | {p} | {size_name(s)} | {runs_name(r)} | "
                f"{lib} {runs_name(peer)} | {r['time_us'] / peer['time_us']:.2f}x | "
                f"{'overlap' if overlap else 'every run behind'} | {trail_cause(coll, s)} |")
        return lines + [""]

    @staticmethod
    def by(factor):
        return f"; missed by {factor:.2f}x" if factor > 1 else ""

    # ---- whole report ----------------------------------------------------

    def header(self):
        m = self.meta
        loads = " / ".join(f"{x:.1f}" for x in m["loads"])
        lines = [f"Braid {m['braid']}, measured {m['date']} on {m['cpus']} CPUs, 1-minute load "
                 f"average {loads} (at each run's start, and at the end; {m['minutes']:.1f} "
                 f"min); medians of {m['reps']} interleaved runs, {m['seconds']} s timed per "
                 "size; float32, sum; time is the slowest rank's mean per call."]
        if self.probe:
            lines.append(self.probe_line())
        if m["notes"]:
            lines += [""] + [f"Note: {n}" for n in m["notes"]]
        return lines + [""]

    def probe_line(self):
        lat, stream = self.probe["latency"], self.probe["stream"]
        sets = sorted({int(k.split("/")[1]) for k in stream})
        bw = ", ".join(f"{size_name(ws)} {stream.get(f'1/{ws}', 0):.0f} / "
                       f"{stream.get(f'2/{ws}', 0):.0f}" for ws in sets)
        line = (f"Floor A inputs: one-way hand-off {lat.get('spin', math.nan):.3f} us spinning "
                f"across cores, {lat.get('yield', math.nan):.3f} us yielding on one core; STREAM "
                f"best GB/s (1 / 2 threads) by working set: {bw}.")
        for kind, what in (
                ("exchange", "Floor B, 2 ranks on 2 cores with private buffers (each call's n "
                 "bytes copied into a shared slot the peer read last call, handed over and "
                 "copied out by the peer, both ways at once; floor_probe --exchange): "),
                ("inplace", "Floor C, the same for buffers peers read in place (each rank flags "
                 "its input ready, sums the peer's and its own into a private output, and "
                 "waits until the peer is done with its input; floor_probe --inplace): "),
                ("single_copy", "Single-copy reads, 2 processes on 2 cores with private "
                 "buffers (each flags its input ready, reads the peer's n bytes with one "
                 "process_vm_readv and waits until the peer has read its own; floor_probe "
                 "--single-copy): "),
                ("single_copy_burst", "The same per read in bursts of reads between "
                 "hand-offs: "),
                ("single_copy_one", "One process reading while the other waits: "),
                ("single_copy_one_burst", "The same in bursts: ")):
            got = self.probe.get(kind, {})
            if got:
                line += " " + what + ", ".join(
                    f"{size_name(int(k))} {time_name(v)}"
                    for k, v in sorted(got.items(), key=lambda kv: int(kv[0]))) + "."
        return line

    def markdown(self):
        lines = self.header()
        if any(self.single_copy_floor(c, p, s) for c in self.args.colls
               for p in self.args.ranks for s in self.args.sizes):
            lines += [SINGLE_COPY_NOTE, ""]
        for coll in self.args.colls:
            for p in self.args.ranks:
                lines += self.table(coll, p)
        missing = [COLL_TITLES[c] for c in COLLS if c not in self.args.colls]
        if missing:
            lines += [f"Not in this run: {', '.join(missing)}.", ""]
        goals = self.goals()
        if goals:
            lines += ["#### Issue 5's goals", ""] + goals + [""]
        goals = self.single_copy_goals()
        if goals:
            lines += ["#### Issue 46's goals", ""] + goals + [""]
        lines += self.trailing_table()
        return "\n".join(lines)

    def plot(self, path):
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            return False
        colls, ranks = self.args.colls, self.args.ranks
        fig, axes = plt.subplots(len(colls), len(ranks), squeeze=False,
                                 figsize=(6 * len(ranks), 3.6 * len(colls)))
        for i, coll in enumerate(colls):
            for j, p in enumerate(ranks):
                self.plot_panel(axes[i][j], coll, p)
        fig.suptitle(f"Braid vs host peers, {self.meta['date']}, "
                     f"load {max(self.meta['loads']):.1f}")
        fig.tight_layout(rect=(0, 0, 1, 0.98))
        fig.savefig(path, dpi=90)
        plt.close(fig)
        return True

    def plot_panel(self, ax, coll, p):
        sizes = self.args.sizes
        for lib in self.libs(coll):
            rows = [self.row(lib, coll, p, s) for s in sizes]
            pts = [(s, r["busbw"]) for s, r in zip(sizes, rows) if r and r["busbw"] > 0]
            if pts:
                ax.plot(*zip(*pts), marker="o", label=lib, linewidth=2.5 if lib == "braid" else 1.2)
        floors = [("k--", "floor A", [(s, self.floors.get((p, s))) for s in sizes]
                   if coll == "allreduce" else []),
                  ("k:", "single-copy floor",
                   [(s, self.single_copy_floor(coll, p, s)) for s in sizes])]
        for style, label, points in floors:
            pts = [(s, s / us / 1e3 * bus_factor(coll, p)) for s, us in points if us]
            if pts:
                ax.plot(*zip(*pts), style, label=label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(sizes, [size_name(s) for s in sizes], fontsize=8)
        ax.set_title(f"{COLL_TITLES[coll]}, {p} ranks")
        ax.set_ylabel("busbw (GB/s)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
