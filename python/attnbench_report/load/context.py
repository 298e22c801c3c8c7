"""The long-context window's loader: `attnbench_bench --context`'s Google Benchmark JSON (context.json,
which scripts/study.sh writes next to results.json) -> its points, one per name

    context/<kernel>/n:N/d:D/w:<W|full>[/cap:C|/mask:bool]/threads:t

then Google Benchmark's suffixes and, for an aggregate, `_mean`, `_median`, `_stddev`, `_cv` or `_min`.
A point is one causal head of n query rows over n keys, under a sliding window of W keys (`w:W`) or the
full causal mask (`w:full`), soft-capped at C (`cap:C`) at one length, or the window given as a boolean
mask tensor of the same visible pairs (`mask:bool`) at that length; its repetitions were interleaved at random with every other point's, so a
ratio between two points of the window shares their minutes. A point whose repetitions all carry an
error is not measured; its status is the message's first word ("failed", "skipped").
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from ..load import results as loader
from .decode import _AGGREGATE_SUFFIX, _medians, _value

FILE_NAME = "context.json"
# The counters the window writes (bench/context_window.hpp), and the real time as "time_us".
COUNTERS = ("us_per_row", "GFLOP/s", "pct_peak", "pairs", "scratch_bytes", "kv_bytes", "window", "softcap",
            "mask_bytes", "scan_ms")
MEASURES = ("time_us",) + COUNTERS


@dataclass(frozen=True)
class ContextPoint:
    """One point: `window` 0 for the full causal mask; `tensor` "bool" when the window was given as a mask
    tensor ("" otherwise). `median` maps MEASURES to values (NaN when absent); `fastest_us` is the fastest
    repetition's time (NaN when the JSON has no `_min`)."""

    name: str
    kernel: str
    n: int
    d: int
    window: int
    softcap: float
    threads: int
    repetitions: int
    tensor: str = ""
    median: dict = field(default_factory=dict)
    fastest_us: float = math.nan
    status: str = "measured"
    reason: str = ""

    @property
    def skipped(self) -> bool:
        return self.status != "measured"

    @property
    def full(self) -> bool:
        return self.window == 0

    def value(self, measure: str) -> float:
        return self.median.get(measure, math.nan)


def parse_name(name: str) -> dict:
    """The columns of a context-window name, e.g. `context/tiled/simd/avx512f/n:8192/d:128/w:4096/threads:1/
    iterations:1/repeats:3/manual_time_median` gives kernel `tiled/simd/avx512f`, n 8192, d 128, window
    4096, threads 1 (`w:full`: window 0). Raises ValueError for another name."""
    name = _AGGREGATE_SUFFIX.sub("", name).removesuffix("_min")
    family, _, rest = name.partition("/")
    kernel_parts, args = loader.split_name(rest)
    missing = [key for key in ("n", "d", "w", "threads") if key not in args]
    if family != "context" or len(kernel_parts) < 2 or missing:
        raise ValueError(f"benchmark name {name!r}: expected context/<kernel>/n:N/d:D/w:<W|full>/threads:t"
                         + (f"; missing {', '.join(missing)}" if missing else ""))
    return {"kernel": "/".join(kernel_parts), "n": int(args["n"]), "d": int(args["d"]),
            "window": 0 if args["w"] == "full" else int(args["w"]), "softcap": float(args.get("cap", 0)),
            "threads": int(args["threads"]), "tensor": args.get("mask", "")}


def load(path: Path) -> list:
    """The window's points, in the JSON's order of first appearance."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    by_name: dict = {}
    for entry in data.get("benchmarks", []):
        run_name = entry.get("run_name", entry.get("name", ""))
        by_name.setdefault(run_name, []).append(entry)
    points = []
    for name, entries in by_name.items():
        columns = parse_name(name)
        mins = [e for e in entries if e.get("aggregate_name") == "min" and not e.get("error_occurred")]
        rest = [e for e in entries if e.get("aggregate_name") != "min"]
        median, _, count, error = _medians(rest, MEASURES)
        if error:
            status, _, reason = error.partition(": ")
            points.append(ContextPoint(name=name, repetitions=count, status=status, reason=reason or error,
                                       **columns))
            continue
        fastest = _value(mins[0], "time_us") if mins else math.nan
        points.append(ContextPoint(name=name, repetitions=count, median=median, fastest_us=fastest, **columns))
    return points


def load_next_to(results_path: Path) -> list | None:
    """The window's points next to a run's results.json, or None when the run has no context.json."""
    path = Path(results_path).parent / FILE_NAME
    return load(path) if path.is_file() else None
