"""The decode window's loader: `attnbench_bench --decode`'s Google Benchmark JSON (decode.json, which
scripts/study.sh writes next to results.json) -> its points. load/results.py reads the other windows; this
module is the only code that splits the decode window's names into columns:

    decode/<kernel>/layout:<head|llama>/rows:R/kv:N/type:<f32|f16|bf16|q8_0|q4_0>/threads:t
    generate/<kernel>/layout:llama/start:N/tokens:G/type:T/threads:t
    prefill/<kernel>/n:N/d:128/type:T/threads:t
    triad/threads:t   (the STREAM triad measured among the points, GB/s)
    types/<kernel>/layout:llama/rows:R/kv:N/threads:t   (the three types' decode called by turns: TypesPoint)
    types/<kernel>/prefill:N/d:128/threads:t            (the three types' prefill called by turns: TypesPoint)

then Google Benchmark's suffixes (`/min_time:0.050`, `/iterations:1`, `/repeats:3`, `/real_time` or
`/manual_time`) and, for an aggregate, `_mean`, `_median`, `_stddev` or `_cv`. A point's median and CV
of the time and of every counter come from the aggregates (`--benchmark_report_aggregates_only`), or
from the repetitions when the JSON holds only those. A point whose repetitions all carry an error is
not measured; its status is the message's first word ("failed", "skipped").

The points load into a loader.Table, so the decode analysis filters them as the other sections do.
When the window has triad points (their repetitions interleaved with the decode points'), their
median GB/s per thread count replaces the context's triad (measured once, before the window; kept as
triad_gbs_threads_<t>_before) and every decode point's pct_triad is recomputed against it, so both
sides of that share come from the same minutes.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..load import results as loader

FILE_NAME = "decode.json"
FAMILIES = ("decode", "generate", "prefill")
TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0")  # storage types of K and V, in the report's order
# bytes per value: ggml's q8_0 and q4_0 blocks hold 32 values in 34 and 18 bytes
TYPE_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "q8_0": 34 / 32, "q4_0": 18 / 32}
# bench/decode_window.hpp: "head" is one query head over one key/value head, "llama" a Llama-style
# layer, 32 query heads over 8 key/value heads; d = 128 in both (the names do not carry it).
LAYOUTS = {"head": (1, 1), "llama": (32, 8)}
HEAD_DIM = 128
# The counters the window writes (JSON name), and the real time as "time_us".
COUNTERS = ("kv_bytes", "GB/s", "pct_triad", "call_us", "token_us", "first_us", "last_us", "append_us",
            "kv_bytes_end", "GFLOP/s", "pct_peak", "pack_ms")
MEASURES = ("time_us",) + COUNTERS
_AGGREGATE_SUFFIX = re.compile(r"_(mean|median|stddev|cv)$")
_TIME_UNIT_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}


@dataclass(frozen=True)
class DecodePoint:
    """One point of the decode window. `median` and `cv` map MEASURES to values (NaN when absent)."""

    name: str  # the run_name, as Google Benchmark wrote it
    family: str  # "decode", "generate" or "prefill"
    kernel: str
    layout: str  # "head" or "llama" (a prefill is one head)
    q_heads: int
    kv_heads: int
    rows: int  # query rows per query head in one call: R (decode), 1 (generate), n (prefill)
    kv: int  # cached tokens a call reads: N (decode), the start (generate), n (prefill)
    tokens: int  # tokens the generation loop appends (G); 0 for the other families
    d: int
    dtype: str  # the K/V storage type: "f32", "f16" or "bf16"
    threads: int
    repetitions: int
    median: dict = field(default_factory=dict)
    cv: dict = field(default_factory=dict)
    status: str = "measured"
    reason: str = ""

    @property
    def skipped(self) -> bool:
        return self.status != "measured"

    @property
    def rows_per_kv_head(self) -> int:
        """Query rows that read each K/V head's keys in one call: R × (query heads per K/V head)."""
        return self.rows * self.q_heads // self.kv_heads

    def value(self, measure: str) -> float:
        return self.median.get(measure, math.nan)


def parse_name(name: str) -> dict:
    """The columns of a decode-window name, e.g. `decode/tiled/simd/avx512f/layout:head/rows:4/kv:16384/
    type:f32/threads:2/min_time:0.050/repeats:3/real_time_median` gives family decode, kernel
    `tiled/simd/avx512f`, layout head (1 over 1 heads), rows 4, kv 16384, type f32, threads 2. Raises
    ValueError for a name of another family or without its columns."""
    name = _AGGREGATE_SUFFIX.sub("", name)
    family, _, rest = name.partition("/")
    kernel_parts, args = loader.split_name(rest)
    need = {"decode": ("layout", "rows", "kv"), "generate": ("layout", "start", "tokens"), "prefill": ("n", "d")}
    missing = [key for key in need.get(family, ()) + ("type", "threads") if key not in args]
    if family not in FAMILIES or len(kernel_parts) < 2 or missing:
        raise ValueError(f"benchmark name {name!r}: expected {' or '.join(FAMILIES)}/<kernel>/... with "
                         + ", ".join(f"{f}: {'/'.join(k + ':' for k in keys)}" for f, keys in need.items())
                         + ", type: and threads:" + (f"; missing {', '.join(missing)}" if missing else ""))
    layout = args.get("layout", "head")
    if layout not in LAYOUTS or args["type"] not in TYPES:
        raise ValueError(f"benchmark name {name!r}: layout {layout!r} or type {args['type']!r} unknown "
                         f"(layouts {', '.join(LAYOUTS)}; types {', '.join(TYPES)})")
    q_heads, kv_heads = LAYOUTS[layout]
    rows = {"decode": args.get("rows"), "generate": "1", "prefill": args.get("n")}[family]
    kv = {"decode": args.get("kv"), "generate": args.get("start"), "prefill": args.get("n")}[family]
    return {"family": family, "kernel": "/".join(kernel_parts), "layout": layout, "q_heads": q_heads,
            "kv_heads": kv_heads, "rows": int(rows), "kv": int(kv), "tokens": int(args.get("tokens", 0)),
            "d": int(args.get("d", HEAD_DIM)), "dtype": args["type"], "threads": int(args["threads"])}


def _value(entry: dict, measure: str, cv: bool = False) -> float:
    """One measure of one JSON entry: the real time in µs (a plain fraction for the cv aggregate)."""
    if measure == "time_us":
        return float(entry["real_time"]) * (1.0 if cv else _TIME_UNIT_US[entry.get("time_unit", "ns")])
    return float(entry[measure]) if measure in entry else math.nan


def _medians(entries: list, measures: tuple) -> tuple:
    """(median, cv, repetitions, error) of a point's entries: the measures' medians and CVs from its
    aggregates, or from its repetitions; ({}, {}, count, message) when every repetition failed."""
    good = [e for e in entries if not e.get("error_occurred")]
    aggregates = {e["aggregate_name"]: e for e in good if e.get("run_type") == "aggregate"}
    repetitions = [e for e in good if e.get("run_type") != "aggregate"]
    count = int(entries[0].get("repetitions", len(repetitions) or 1))
    if "median" in aggregates:
        median = {m: _value(aggregates["median"], m) for m in measures}
        cv = {m: _value(aggregates["cv"], m, cv=True) if "cv" in aggregates else math.nan for m in measures}
    elif repetitions:
        values = {m: np.array([_value(e, m) for e in repetitions]) for m in measures}
        median = {m: float(np.median(v)) for m, v in values.items()}
        cv = {m: float(np.std(v, ddof=1) / np.mean(v)) if len(v) > 1 and np.mean(v) else math.nan
              for m, v in values.items()}
    else:
        message = next((e.get("error_message", "") for e in entries if e.get("error_occurred")), "")
        return {}, {}, count, message or "failed: no measurement in the JSON"
    return median, cv, count, ""


def _point(name: str, entries: list) -> DecodePoint:
    columns = parse_name(name)
    median, cv, count, error = _medians(entries, MEASURES)
    if error:
        status, _, reason = error.partition(": ")
        return DecodePoint(name=name, repetitions=count, status=status, reason=reason or error, **columns)
    return DecodePoint(name=name, repetitions=count, median=median, cv=cv, **columns)


# The types points' counters: each type's median call and GB/s, the 16-bit types' speedups over f32
# (the median over rounds of the ratio within a round), and the rounds.
# The types points' further columns: the quantised types with the query quantised too
# (Options::quantise_query: ggml's q8_0 query, integer Q K^T on AVX-512 VNNI), from the same caches.
QUERY_QUANTISED = ("q8_0_q8", "q4_0_q8")
TYPES_COUNTERS = tuple(f"{m}_{t}" for m in ("us", "gbs", "gflops") for t in TYPES + QUERY_QUANTISED) + tuple(
    f"speedup_{t}" for t in TYPES[1:] + QUERY_QUANTISED) + ("rounds",)


@dataclass(frozen=True)
class TypesPoint:
    """A types point: the storage types called by turns on one decode or prefill shape (a prefill is
    one head of `rows` = `kv` = n tokens). `median` and `cv` map TYPES_COUNTERS to values (gbs_<type>
    for decode, gflops_<type> for prefill); `error` is the failure message of a point that measured
    nothing."""

    name: str
    family: str  # "decode" or "prefill"
    kernel: str
    layout: str
    rows: int
    kv: int
    threads: int
    repetitions: int
    median: dict = field(default_factory=dict)
    cv: dict = field(default_factory=dict)
    error: str = ""

    def speedup(self, dtype: str) -> float:
        return self.median.get(f"speedup_{dtype}", math.nan)

    def noise(self, dtype: str) -> float:
        """The CV of the speedup over the point's repetitions."""
        return self.cv.get(f"speedup_{dtype}", math.nan)


def _types_point(name: str, entries: list) -> TypesPoint:
    _, _, rest = _AGGREGATE_SUFFIX.sub("", name).partition("/")
    kernel_parts, args = loader.split_name(rest)
    family = "prefill" if "prefill" in args else "decode"
    need = ("prefill", "d", "threads") if family == "prefill" else ("layout", "rows", "kv", "threads")
    missing = [key for key in need if key not in args]
    if len(kernel_parts) < 2 or missing or (family == "decode" and args["layout"] not in LAYOUTS):
        raise ValueError(f"benchmark name {name!r}: expected types/<kernel>/layout:<{'|'.join(LAYOUTS)}>/rows:R/"
                         f"kv:N/threads:t or types/<kernel>/prefill:N/d:D/threads:t"
                         + (f"; missing {', '.join(missing)}" if missing else ""))
    median, cv, count, error = _medians(entries, TYPES_COUNTERS)
    if family == "prefill":
        n = int(args["prefill"])
        return TypesPoint(name, family, "/".join(kernel_parts), "head", n, n, int(args["threads"]), count, median, cv,
                          error)
    return TypesPoint(name, family, "/".join(kernel_parts), args["layout"], int(args["rows"]), int(args["kv"]),
                      int(args["threads"]), count, median, cv, error)


@dataclass
class DecodeWindow:
    """decode.json: its points (a loader.Table of DecodePoint) and its own context, as a loader.Run
    (the triad, FMA peak and caches measured in the window's process)."""

    path: Path
    run: loader.Run
    table: loader.Table
    types: list = field(default_factory=list)  # TypesPoint of decode, in the JSON's order
    prefill_types: list = field(default_factory=list)  # TypesPoint of prefill, in the JSON's order

    @property
    def context(self) -> dict:
        return self.run.context


def load_file(path: Path, index: int = 0, label: str = "") -> DecodeWindow:
    """Read a decode.json. Raises ValueError, naming the file, for JSON that is not the window's."""
    path = Path(path)
    data = loader.read_json(path)
    if not isinstance(data, dict) or "benchmarks" not in data:
        raise ValueError(f"{path}: not Google Benchmark JSON (no 'benchmarks')")
    run = loader.Run(index=index, label=label or path.parent.name, path=path, context=data.get("context", {}))
    groups: dict[str, list] = {}
    for entry in data["benchmarks"]:
        groups.setdefault(entry.get("run_name") or _AGGREGATE_SUFFIX.sub("", entry["name"]), []).append(entry)
    triads = {name: groups.pop(name) for name in [n for n in groups if n.startswith("triad/")]}
    types = {name: groups.pop(name) for name in [n for n in groups if n.startswith("types/")]}
    try:
        points = [_point(name, entries) for name, entries in groups.items()]
        types_points = [_types_point(name, entries) for name, entries in types.items()]
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None
    interleaved = _triads(triads)
    for threads, gbs in interleaved.items():
        key = f"triad_gbs_threads_{threads}"
        if key in run.context:
            run.context[key + "_before"] = run.context[key]
        run.context[key] = str(gbs)
    points = [_against_triad(p, interleaved) for p in points]
    return DecodeWindow(path, run, loader.Table(points, [run]), [p for p in types_points if p.family == "decode"],
                        [p for p in types_points if p.family == "prefill"])


def _triads(groups: dict) -> dict:
    """threads -> the median GB/s of the window's triad points (their aggregate, else repetitions)."""
    out = {}
    for name, entries in groups.items():
        _, args = loader.split_name(_AGGREGATE_SUFFIX.sub("", name).partition("/")[2])
        good = [e for e in entries if not e.get("error_occurred") and "GB/s" in e]
        median = [e for e in good if e.get("aggregate_name") == "median"]
        values = [float(e["GB/s"]) for e in (median or [e for e in good if e.get("run_type") != "aggregate"])]
        if values and "threads" in args:
            out[int(args["threads"])] = float(np.median(values))
    return out


def _against_triad(point: DecodePoint, triads: dict) -> DecodePoint:
    """A decode point with its pct_triad against the interleaved triad of its thread count."""
    if point.family != "decode" or point.threads not in triads or point.skipped:
        return point
    median = dict(point.median)
    median["pct_triad"] = 100.0 * point.value("GB/s") / triads[point.threads]
    return DecodePoint(**{**point.__dict__, "median": median})


def load_next_to(run: loader.Run) -> DecodeWindow | None:
    """The decode window next to a run's results.json, or None when there is no decode.json."""
    path = run.path.parent / FILE_NAME
    return load_file(path, run.index, run.label) if path.is_file() else None
