"""A reader of nccl-tests' output, written against nccl-tests' format (its
README's options, its printed table and its -J JSON, file version 3), not
against Braid's code: what a dashboard written for nccl-tests would do.

parse_output(text) -> Output: the header's run line, the ranks, the column
titles, the rows and the footer. check_json(doc) -> list of problems (empty
when the document has nccl-tests' schema: the same keys, nesting and value
types). Pure functions; no Braid imports.
"""

import re
from dataclasses import dataclass, field

# "# nThread 1 nGpus 1 minBytes 8 maxBytes 1048576 step: 8(factor) warmup iters: 1
#  iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0"
RUN_LINE = re.compile(
    r"^# nThread (\d+) nGpus (\d+) minBytes (\d+) maxBytes (\d+) step: (\d+)\((factor|bytes)\) "
    r"warmup iters: (\d+) iters: (\d+) agg iters: (\d+) validation: (\d+) graph: (\d+)"
    r"(?: unalign: (\d+))?")
# "#  Rank  0 Group  0 Pid  12345 on   hostname device  0 [0000:07:00] NVIDIA H100"
RANK_LINE = re.compile(r"^#  Rank +(\d+) Group +(\d+) Pid +(\d+) on +(\S+) device +(\d+) \[([^]]*)\] (.*)$")
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")


@dataclass
class Placement:
    time: float
    algbw: float
    busbw: float
    wrong: object  # int, or None for N/A
    per_iter: tuple = ()  # (i_min, i_max, i_p99, i_cv%) with -I 1


@dataclass
class Row:
    size: int
    count: int
    type: str
    redop: str
    root: int
    out_of_place: Placement
    in_place: Placement
    timestamp: str = ""


@dataclass
class Output:
    run: dict = field(default_factory=dict)
    ranks: list = field(default_factory=list)
    time_title: str = ""  # "time" or "cputime" (-C 1)
    per_iter: bool = False  # -I 1: i_min i_max i_p99 i_cv% after each placement
    timestamps: bool = False  # -S 1: a timestamp column at the end
    rows: list = field(default_factory=list)
    out_of_bounds: int = -1
    out_of_bounds_ok: bool = False
    avg_busbw: float = float("nan")
    comments: list = field(default_factory=list)  # every other "#" line


def _number(text):
    return float(text)


def _placement(words, per_iter):
    time, algbw, busbw, wrong = words[0], words[1], words[2], words[3]
    p = Placement(_number(time), _number(algbw), _number(busbw),
                  None if wrong == "N/A" else int(float(wrong)))
    if per_iter:
        p.per_iter = tuple(_number(w) for w in words[4:8])
    return p


def parse_output(text):
    out = Output()
    for line in text.splitlines():
        if line.startswith("#"):
            m = RUN_LINE.match(line)
            if m:
                keys = ["nThread", "nGpus", "minBytes", "maxBytes", "step", "step_kind",
                        "warmup_iters", "iters", "agg_iters", "validation", "graph", "unalign"]
                out.run = {k: (v if k == "step_kind" else int(v or 0))
                           for k, v in zip(keys, m.groups())}
                continue
            m = RANK_LINE.match(line)
            if m:
                out.ranks.append({"rank": int(m[1]), "group": int(m[2]), "pid": int(m[3]),
                                  "host": m[4], "device": int(m[5]), "device_hex": m[6],
                                  "device_info": m[7]})
                continue
            words = line[1:].split()
            if words[:5] == ["size", "count", "type", "redop", "root"]:
                out.time_title = words[5]
                out.per_iter = "i_min" in words
                out.timestamps = words[-1] == "timestamp"
            elif line.startswith("# Out of bounds values"):
                value = line.split(":", 1)[1].split()
                out.out_of_bounds, out.out_of_bounds_ok = int(value[0]), value[1] == "OK"
            elif line.startswith("# Avg bus bandwidth"):
                out.avg_busbw = float(line.split(":", 1)[1].split()[0])
            else:
                out.comments.append(line)
            continue
        words = line.split()
        if len(words) < 13 or not words[0].isdigit():
            continue
        per = 8 if out.per_iter else 4
        row = Row(int(words[0]), int(words[1]), words[2], words[3], int(words[4]),
                  _placement(words[5:5 + per], out.per_iter),
                  _placement(words[5 + per:5 + 2 * per], out.per_iter))
        if out.timestamps:
            row.timestamp = " ".join(words[5 + 2 * per:])
        out.rows.append(row)
    return out


# nccl-tests' JSON, file version 3: key -> type ("str" for its string booleans).
TOP = {"version": int, "start_time": str, "args": list, "env": list, "nccl_version": int,
       "config": dict, "results": list, "out_of_bounds": dict,
       "average_bus_bandwidth": dict, "errors": list, "end_time": str}
CONFIG = {"nthreads": int, "ngpus": int, "minimum_bytes": int, "maximum_bytes": int,
          "warmup_iters": int, "iterations": int, "aggregated_iterations": int,
          "validation": int, "graph": int, "blocking_collectives": "bool",
          "per_iter_timing": "bool", "per_iter_skip": int, "parallel_init": "bool",
          "devices": list}
DEVICE = {"rank": int, "group": int, "pid": int, "hostname": str, "device": int,
          "device_hex": str, "device_info": str}
RESULT = {"size": int, "count": int, "type": str, "redop": str, "root": str,
          "out_of_place": (dict, type(None)), "in_place": (dict, type(None)),
          "actual_iterations": int, "experiment_name": str}
PLACEMENT = {"alg_bw": float, "bus_bw": float, "nwrong": (float, type(None))}
PER_ITER = {"skipped_iterations": int, "min_us": float, "max_us": float, "avg_us": float,
            "p50_us": float, "p95_us": float, "p99_us": float, "stdev_us": float,
            "cv_pct": float, "times_us": list}
# Keys a producer may add beside nccl-tests' own (its readers skip unknown keys).
EXTRA = {"braid"}


def _check(obj, spec, where, problems, optional=()):
    if not isinstance(obj, dict):
        problems.append(f"{where}: not an object")
        return
    for key, kind in spec.items():
        if key not in obj:
            if key not in optional:
                problems.append(f"{where}: no key {key!r}")
            continue
        value = obj[key]
        if kind == "bool":
            if value not in ("true", "false"):
                problems.append(f"{where}.{key}: {value!r} is not \"true\"/\"false\"")
        elif kind is float and isinstance(value, int) and not isinstance(value, bool):
            pass  # a JSON number
        elif not isinstance(value, kind) or isinstance(value, bool):
            problems.append(f"{where}.{key}: {value!r} is not {kind}")
    for key in obj:
        if key not in spec and key not in optional and key not in EXTRA:
            problems.append(f"{where}: unknown key {key!r}")


def check_json(doc):
    problems = []
    _check(doc, TOP, "top", problems)
    if problems:
        return problems
    if doc["version"] != 3:
        problems.append(f"version {doc['version']} is not 3")
    config = doc["config"]
    steps = {"step_factor": int, "step_bytes": int}
    _check(config, {**CONFIG, **steps}, "config", problems, optional=steps)
    if ("step_factor" in config) == ("step_bytes" in config):
        problems.append("config: exactly one of step_factor and step_bytes")
    for i, d in enumerate(config.get("devices", [])):
        _check(d, DEVICE, f"devices[{i}]", problems)
    for i, r in enumerate(doc["results"]):
        per_iter = {"out_of_place_per_iter": dict, "in_place_per_iter": dict}
        _check(r, {**RESULT, **per_iter}, f"results[{i}]", problems, optional=per_iter)
        if not re.fullmatch(r" *-?\d+", r.get("root", "")) or len(r.get("root", "")) < 6:
            problems.append(f"results[{i}].root {r.get('root')!r} is not nccl-tests' %6i text")
        for key in ("out_of_place", "in_place"):
            p = r.get(key)
            if p is None:
                continue
            time_key = "cpu_time" if "cpu_time" in p else "time"
            _check(p, {time_key: float, **PLACEMENT}, f"results[{i}].{key}", problems)
        for key in per_iter:
            if key in r:
                extra = {"per_process_max_times_us": list}
                _check(r[key], {**PER_ITER, **extra}, f"results[{i}].{key}", problems,
                       optional=extra)
    _check(doc["out_of_bounds"], {"count": int, "okay": "bool"}, "out_of_bounds", problems)
    bw = doc["average_bus_bandwidth"]
    _check(bw, {"bandwidth": float, "okay": str}, "average_bus_bandwidth", problems)
    return problems


def nccl_tests_sizes(min_bytes, max_bytes, step_factor, step_bytes):
    """The sizes nccl-tests visits: multiply by the factor when above 1, else add the step."""
    sizes, size = [], min_bytes
    while size <= max_bytes:
        sizes.append(size)
        nxt = size * step_factor if step_factor > 1 else size + step_bytes
        if nxt <= size:
            break
        size = nxt
    return sizes
