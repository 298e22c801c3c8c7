"""The one loader: Google Benchmark JSON from attnbench_bench -> one table of points.

This is the only code that splits benchmark names into columns; every figure and every sentence
of the report reads the `Table` it returns.

A name reads `<strategy>/<backend>[/<isa>]/n:<n>/d:<d>/threads:<t>/causal:<0|1>` for the matrix of
square one-head points, or spells out the shape for the others:
`.../q:<q_len>/kv:<kv_len>/d:<d>[/heads:<h>/kv_heads:<h>]/threads:<t>/causal:<0|1>` (decoding: one
query over many keys; grouped-query attention: several query heads per key/value head). A point of
the backward pass ends in `/pass:backward`, one of a training step (forward, then backward) in
`/pass:forward+backward`; a name without `pass:` is the forward pass, as every name was before the
benchmark had a backward, so older JSON loads as it did. Google
Benchmark then appends (`/iterations:1` for a point that runs one call per repetition,
`/repeats:3`, `/real_time`, and for an aggregate `_mean`, `_median`, `_stddev` or `_cv`). A point is
one `run_name`; its median, mean and coefficient of variation come from the aggregates (or, when
the JSON holds only the repetitions, are computed from them here). A skipped point is a set of
`error_occurred` repetitions whose message starts with "skipped: ".
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np

# JSON counter name -> column stem. Times are in the column stem "time_ms".
COUNTERS = {
    "GFLOP/s": "gflops",
    "pct_peak": "pct_peak",
    "scratch_bytes": "scratch_bytes",
    "rss_peak_bytes": "rss_peak_bytes",
    "score_matrix_bytes": "score_matrix_bytes",
    "bytes_moved": "bytes_moved",
    "flops_per_call": "flops_per_call",
    "oracle_error_ratio": "oracle_error_ratio",  # the contenders' windows: worst |error| / bound
}
MEASURES = ("time_ms",) + tuple(COUNTERS.values())
# Counters named `count_<name>` are the cost model's counts, constant over repetitions (Record.counts).
COUNT_PREFIX = "count_"
STATS = ("median", "mean", "cv")

_STATUSES = ("skipped", "missing", "unsupported", "failed")
# A bf16-products kernel's backend ends in it ("tiled/simd-bf16/avx512bf16").
BF16_SUFFIX = "-bf16"
# The `pass` column's values (the Record field is `pass_`: `pass` is a Python keyword).
PASSES = ("forward", "backward", "forward+backward")
_TIME_UNIT_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
CONSTANTS_POINT = "constants/"  # the matrix's readings of the machine constants among its points
_AGGREGATE_SUFFIX = re.compile(r"_(mean|median|stddev|cv|min)$")
# Order of kernels in every table and legend: strategy, then backend from fastest to plainest.
_STRATEGY_ORDER = ("tiled", "naive")
_BACKEND_ORDER = ("simd", "openblas", "autovec", "scalar")
_ISA_ORDER = ("avx512f", "avx2", "sse4.2", "")


@dataclass(frozen=True)
class Run:
    """One results.json: where it came from and its context (the machine, the build, the ceilings)."""

    index: int
    label: str
    path: Path
    context: dict

    def _number(self, key: str) -> float | None:
        value = self.context.get(key)
        try:
            return float(value) if value is not None else None
        except (TypeError, ValueError):
            return None

    def fma_peak_gflops(self, threads: int) -> float | None:
        """Measured fp32 FMA peak for this thread count (GFLOP/s), if the run measured it."""
        return self._number(f"fma_peak_gflops_threads_{threads}")

    def fma_peak_isa(self, threads: int) -> str:
        """The ISA whose FMA chains gave that peak ("avx512f", "avx2+fma"), or ""."""
        return str(self.context.get(f"fma_peak_isa_threads_{threads}", ""))

    def rows_per_task(self) -> int | None:
        """Query rows per parallel task (attnbench::kRowsPerTask), if the run recorded it."""
        value = self._number("rows_per_task")
        return int(value) if value else None

    def tasks_phrase(self) -> str:
        """ "tasks of 48 query rows", or without the number for a run that did not record it."""
        rows = self.rows_per_task()
        return f"tasks of {rows} query rows" if rows else "tasks of a fixed number of query rows"

    def backward_check_phrase(self) -> str:
        """ "97 × 203 problem" (query rows × keys) from `backward_check_shape`, which the benchmark
        records; "small problem" for a run that did not record it."""
        rows, _, keys = str(self.context.get("backward_check_shape", "")).partition("x")
        return f"{rows} × {keys} problem" if rows.isdigit() and keys.isdigit() else "small problem"

    # --- provenance: what was measured, by which build -------------------------------------------
    @property
    def version(self) -> str | None:
        """attnbench's version (`attnbench_version`, from project(VERSION)); None for a run recorded
        before the benchmark wrote it."""
        value = self.context.get("attnbench_version")
        return str(value) if value else None

    @property
    def git_commit(self) -> str | None:
        """The commit the benchmark was built from (`git_commit`, read at build time), "unknown" for a
        build outside a git checkout; None for a run recorded before the benchmark wrote it."""
        value = self.context.get("git_commit")
        return str(value) if value else None

    @property
    def git_dirty(self) -> bool | None:
        """Did tracked files differ from that commit when the benchmark was built (`git_dirty`)? None
        when unknown or not recorded."""
        return {"true": True, "false": False}.get(str(self.context.get("git_dirty", "")).lower())

    @property
    def preset(self) -> str | None:
        value = self.context.get("attnbench_preset")
        return str(value) if value else None

    def triad_gbs(self, threads: int) -> float | None:
        """Measured STREAM-like triad bandwidth for this thread count (GB/s)."""
        return self._number(f"triad_gbs_threads_{threads}")

    @property
    def threads_all(self) -> int | None:
        value = self._number("threads_all")
        return int(value) if value else None

    @property
    def memory_bytes(self) -> float | None:
        return self._number("memory_bytes")

    @property
    def naive_memory_budget_bytes(self) -> float | None:
        return self._number("naive_memory_budget_bytes")

    def role(self, kernel: str) -> str | None:
        """The kernel's role in this run ("attnbench" or "baseline"): `role <kernel>` in the context,
        which the benchmark writes from the kernel's own fields; None for runs recorded before it did."""
        return self.context.get(f"role {kernel}")

    def dispatch(self, kernel: str) -> str | None:
        """The concrete kernel a dispatching entry (`tiled/simd`) resolved to in this run."""
        return self.context.get(f"dispatch {kernel}")

    @property
    def caches(self) -> list:
        """The CPU's caches as Google Benchmark's `caches` lists them ({level, type, size, num_sharing}).
        Google Benchmark reads them from sysfs, which a guest may lack: its list is then empty, and the
        sizes the kernels size their blocks from (`cache_bytes_l1d`, `_l2`, `_l3`: sysconf) stand in,
        L1 and L2 private to a core and the L3 shared by every CPU the run saw (sysconf does not say)."""
        listed = self.context.get("caches") or []
        if listed:
            return listed
        cpus = int(self._number("num_cpus") or 1)
        out = []
        for level, key, kind, sharing in ((1, "cache_bytes_l1d", "Data", 1), (2, "cache_bytes_l2", "Unified", 1),
                                          (3, "cache_bytes_l3", "Unified", cpus)):
            size = self._number(key)
            if size and size > 0:
                out.append({"level": level, "type": kind, "size": size, "num_sharing": sharing,
                            "source": "sysconf"})
        return out

    @property
    def caches_source(self) -> str:
        """Who reported the caches: "Google Benchmark" (sysfs) or "sysconf" (the fallback)."""
        return "sysconf" if any(c.get("source") == "sysconf" for c in self.caches) else "Google Benchmark"

    def cache_bytes(self, level: int) -> float | None:
        """Size of the data or unified cache at this level (`caches`)."""
        for cache in self.caches:
            if cache.get("level") == level and cache.get("type") in ("Data", "Unified"):
                return float(cache["size"])
        return None


@dataclass(frozen=True)
class Record:
    """One benchmark point of one run. Values of a skipped point are NaN."""

    run: int
    name: str  # the point's run_name, as Google Benchmark wrote it
    kernel: str  # strategy/backend[/isa]
    strategy: str
    backend: str
    isa: str  # "" for kernels without an ISA
    family: str  # "matrix" (n: one square head), "decode" (q_len < kv_len), "gqa" (several heads) or "bf16" (a bf16-products kernel's square point)
    n: int  # the sequence length: q_len = kv_len for the matrix, kv_len (the keys) otherwise
    q_len: int
    kv_len: int
    heads: int  # query heads
    kv_heads: int
    d: int
    threads: int
    causal: bool
    one_call_per_repetition: bool  # `/iterations:1` in the name
    repetitions: int
    skipped: bool
    skip_reason: str
    time_ms_median: float
    time_ms_mean: float
    time_ms_cv: float
    gflops_median: float
    gflops_mean: float
    gflops_cv: float
    pct_peak_median: float
    pct_peak_mean: float
    pct_peak_cv: float
    scratch_bytes_median: float
    scratch_bytes_mean: float
    scratch_bytes_cv: float
    rss_peak_bytes_median: float
    rss_peak_bytes_mean: float
    rss_peak_bytes_cv: float
    score_matrix_bytes_median: float
    score_matrix_bytes_mean: float
    score_matrix_bytes_cv: float
    bytes_moved_median: float
    bytes_moved_mean: float
    bytes_moved_cv: float
    flops_per_call_median: float
    flops_per_call_mean: float
    flops_per_call_cv: float
    oracle_error_ratio_median: float = math.nan
    oracle_error_ratio_mean: float = math.nan
    oracle_error_ratio_cv: float = math.nan
    # The fastest repetition's real time (the matrix's `min` aggregate, or the smallest of the plain
    # repetitions); NaN where the JSON has neither (older runs, the windows).
    time_ms_min: float = math.nan
    # "measured", or why not, from the error message's first word: "skipped" (budget), "missing"
    # (library absent), "unsupported" (the point), "failed" (the oracle check or an error)
    status: str = "measured"
    window: str = "matrix"  # the JSON's attnbench_window: "matrix", "contenders" or "python"
    pass_: str = "forward"  # the `pass` column: "forward", "backward" or "forward+backward"
    # The cost model's counts of a forward point (counters `count_<name>`, src/forward_counts.hpp),
    # as (name, value) pairs; empty for points and runs without them.
    counts: tuple = ()

    def count(self, name: str) -> float:
        """One of the point's cost counts (`score_fmas`, `kv_stream_bytes`, ...), NaN if absent."""
        return next((value for key, value in self.counts if key == name), math.nan)

    @property
    def point(self) -> tuple:
        """What identifies the point across runs."""
        return (self.kernel, self.family, self.q_len, self.kv_len, self.heads, self.kv_heads, self.d,
                self.threads, self.causal, self.pass_)

    @property
    def shape(self) -> str:
        """The problem size in words: "n = 512", "q = 1, kv = 8192", "n = 512, 8 heads over 2 kv heads"."""
        if self.q_len == self.kv_len:
            size = f"n = {self.n}"
        else:
            size = f"q = {self.q_len}, kv = {self.kv_len}"
        if self.heads != 1 or self.kv_heads != 1:
            size += f", {self.heads} heads over {self.kv_heads} kv heads"
        return size


def kernel_sort_key(kernel: str) -> tuple:
    parts = kernel.split("/")
    strategy, backend = parts[0], parts[1] if len(parts) > 1 else ""
    isa = parts[2] if len(parts) > 2 else ""

    def rank(order, value):
        return order.index(value) if value in order else len(order)

    return (rank(_BACKEND_ORDER, backend), rank(_ISA_ORDER, isa), rank(_STRATEGY_ORDER, strategy), kernel)


def split_name(name: str) -> tuple:
    """A name without its aggregate suffix -> (the bare tokens before the first `key:value`, {key:
    value}): `tiled/simd/avx2/n:128/d:64/real_time` gives (["tiled", "simd", "avx2"], {"n": "128", "d":
    "64"}). Bare tokens after the arguments (real_time, manual_time) carry no column."""
    bare, args = [], {}
    for token in name.split("/"):
        if ":" in token:
            key, _, value = token.partition(":")
            args[key] = value
        elif not args:
            bare.append(token)
    return bare, args


def read_json(path: Path):
    """A JSON file's data; ValueError naming the file when it is not JSON."""
    with open(path, encoding="utf-8") as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: not valid JSON ({error})") from None


def parse_name(name: str) -> dict:
    """Split a benchmark name into its columns. For example
    `tiled/simd/avx2/n:128/d:64/threads:1/causal:0/iterations:1/repeats:3/real_time_cv` gives kernel
    `tiled/simd/avx2` (strategy tiled, backend simd, isa avx2), n 128, d 64, threads 1, causal False,
    pass forward, one call per repetition, aggregate `cv`; `.../causal:0/pass:backward/...` gives pass
    backward. Raises ValueError for a name without those columns or with an unknown pass."""
    match = _AGGREGATE_SUFFIX.search(name)
    aggregate = match.group(1) if match else None
    if match:
        name = name[: match.start()]
    kernel_parts, args = split_name(name)
    if "n" in args:
        args.setdefault("q", args["n"])
        args.setdefault("kv", args["n"])
    missing = [key for key in ("q", "kv", "d", "threads", "causal") if key not in args]
    if len(kernel_parts) < 2 or missing:
        raise ValueError(f"benchmark name {name!r}: expected strategy/backend[/isa] then n: (or q: and kv:), d:, "
                         f"threads:, causal:" + (f"; missing {', '.join(missing)}" if missing else ""))
    pass_ = args.get("pass", "forward")
    if pass_ not in PASSES:
        raise ValueError(f"benchmark name {name!r}: pass:{pass_} is none of {', '.join(PASSES)}")
    q_len, kv_len = int(args["q"]), int(args["kv"])
    heads, kv_heads = int(args.get("heads", 1)), int(args.get("kv_heads", 1))
    if heads != 1 or kv_heads != 1:
        family = "gqa"
    elif q_len != kv_len:
        family = "decode"
    elif kernel_parts[1].endswith(BF16_SUFFIX):
        family = "bf16"  # a bf16-products kernel's square points: the bf16 section's, not the matrix's
    else:
        family = "matrix"
    return {
        "kernel": "/".join(kernel_parts),
        "strategy": kernel_parts[0],
        "backend": kernel_parts[1],
        "isa": "/".join(kernel_parts[2:]),
        "family": family,
        "n": kv_len,
        "q_len": q_len,
        "kv_len": kv_len,
        "heads": heads,
        "kv_heads": kv_heads,
        "d": int(args["d"]),
        "threads": int(args["threads"]),
        "causal": args["causal"] not in ("0", "false"),
        "one_call_per_repetition": args.get("iterations") == "1",
        "pass_": pass_,
        "aggregate": aggregate,
    }


def _value(entry: dict, measure: str, ratio: bool = False) -> float:
    """A measure of one JSON entry; `ratio` for the cv aggregate, a plain fraction in any time unit."""
    if measure == "time_ms":
        unit = entry.get("time_unit", "ns")
        return float(entry["real_time"]) * (1.0 if ratio else _TIME_UNIT_MS[unit])
    key = next(k for k, v in COUNTERS.items() if v == measure)
    return float(entry[key]) if key in entry else math.nan


def _stats_from_aggregates(aggregates: dict) -> dict:
    out = {}
    for measure in MEASURES:
        for stat in STATS:
            entry = aggregates.get(stat)
            out[f"{measure}_{stat}"] = _value(entry, measure, ratio=stat == "cv") if entry else math.nan
    if "min" in aggregates:
        out["time_ms_min"] = _value(aggregates["min"], "time_ms")
    return out


def _stats_from_repetitions(entries: list) -> dict:
    """Median, mean and CV (stddev / mean, as Google Benchmark computes it) of plain repetitions."""
    out = {}
    for measure in MEASURES:
        values = np.array([_value(e, measure) for e in entries], dtype=float)
        mean = float(np.mean(values))
        cv = float(np.std(values, ddof=1) / mean) if len(values) > 1 and mean != 0 else math.nan
        out[f"{measure}_median"] = float(np.median(values))
        out[f"{measure}_mean"] = mean
        out[f"{measure}_cv"] = cv
        if measure == "time_ms":
            out["time_ms_min"] = float(np.min(values))
    return out


def _run_label(path: Path, context: dict) -> str:
    folder = path.parent.name
    if folder and folder not in (".", "") and path.name == "results.json":
        return folder
    host = context.get("host_name", "run")
    date = str(context.get("date", ""))[:16].replace("T", " ")
    return f"{host} {date}".strip() if date else f"{host} ({path.name})"


def results_path(path_like: str | Path) -> Path:
    """A run folder or a JSON file -> the JSON file."""
    path = Path(path_like)
    if path.is_dir():
        path = path / "results.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path_like}: no results.json there (expected a run folder or a JSON file)")
    return path


def _records_of(run: Run, benchmarks: list) -> list:
    groups: dict[str, list] = {}
    for entry in benchmarks:
        name = entry.get("run_name") or _AGGREGATE_SUFFIX.sub("", entry["name"])
        if name.startswith(CONSTANTS_POINT):
            continue  # readings of the machine constants, not a point (load/machine_constants.py)
        groups.setdefault(name, []).append(entry)
    records = []
    for name, entries in groups.items():
        columns = parse_name(name)
        columns.pop("aggregate")
        errors = [e for e in entries if e.get("error_occurred")]
        aggregates = {e["aggregate_name"]: e for e in entries
                      if e.get("run_type") == "aggregate" and not e.get("error_occurred")}
        repetitions = [e for e in entries if e.get("run_type") != "aggregate" and not e.get("error_occurred")]
        skipped = not aggregates and not repetitions
        status = "measured"
        if skipped:
            message = errors[0].get("error_message", "") if errors else "no measurement in the JSON"
            status, _, rest = message.partition(": ")
            if status in _STATUSES and rest:
                reason = rest if status == "skipped" else message
            else:
                status, reason = "skipped", message
            stats = {f"{m}_{s}": math.nan for m in MEASURES for s in STATS}
        else:
            reason = ""
            stats = _stats_from_aggregates(aggregates) if "median" in aggregates else _stats_from_repetitions(repetitions)
        count = int(entries[0].get("repetitions", len(repetitions) or len(errors) or 1))
        source = aggregates.get("median") or (repetitions[0] if repetitions else {})
        counts = tuple(sorted((key[len(COUNT_PREFIX):], float(value)) for key, value in source.items()
                              if key.startswith(COUNT_PREFIX)))
        records.append(Record(run=run.index, name=name, repetitions=count, skipped=skipped,
                              skip_reason=reason, status=status, counts=counts,
                              window=str(run.context.get("attnbench_window", "matrix")), **columns, **stats))
    return records


def load(paths: Iterable[str | Path]) -> "Table":
    """Read one or more results.json (or run folders) into one table; each file is one run."""
    runs, records = [], []
    for index, path_like in enumerate(paths):
        path = results_path(path_like)
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if "benchmarks" not in data:
            raise ValueError(f"{path}: not Google Benchmark JSON (no 'benchmarks')")
        context = data.get("context", {})
        label = _run_label(path, context)
        if any(r.label == label for r in runs):
            label = f"{label} #{index + 1}"
        run = Run(index=index, label=label, path=path, context=context)
        runs.append(run)
        records.extend(_records_of(run, data["benchmarks"]))
    if not runs:
        raise ValueError("no results given")
    return Table(records, runs)


# The contenders' windows a study writes next to results.json (scripts/study.sh).
WINDOW_FILES = ("contenders.json", "python_contenders.json", "python_contenders_bf16.json",
                "python_contenders_q8_0.json")
# Every other JSON a study writes next to results.json, the windows first (scripts/study.sh).
STUDY_FILES = WINDOW_FILES + ("decode.json", "scaling.json", "phases.json", "constants.json")


def study_contexts(run: Run) -> dict:
    """{file name: JSON context} of the study's other files next to a run's results.json (those present
    and readable), for the provenance each one records."""
    out = {}
    for name in STUDY_FILES:
        path = run.path.parent / name
        if path == run.path or not path.is_file():
            continue
        try:
            with open(path, encoding="utf-8") as f:
                context = json.load(f).get("context", {})
        except (OSError, ValueError, AttributeError):
            continue
        out[name] = context if isinstance(context, dict) else {}
    return out


@dataclass
class Table:
    """The points of one or more runs, with filters that every figure and the text share."""

    records: list
    runs: list = field(default_factory=list)

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    def where(self, **equal) -> "Table":
        """Rows whose columns equal the given values; a list or tuple value means any of them."""

        def keep(r):
            for key, want in equal.items():
                have = getattr(r, key)
                if isinstance(want, (list, tuple, set, frozenset)):
                    if have not in want:
                        return False
                elif have != want:
                    return False
            return True

        return Table([r for r in self.records if keep(r)], self.runs)

    def matrix(self) -> "Table":
        """The square one-head points of the n x d matrix, which the figures and most text read."""
        return self.where(family="matrix")

    def bf16(self) -> "Table":
        """The bf16-products kernels' square one-head points (the section "bf16 against fp32")."""
        return self.where(family="bf16")

    def forward(self) -> "Table":
        """The forward pass's points: what every section but the backward's reads."""
        return self.where(pass_="forward")

    def passes(self) -> list:
        """The passes the table has points of, in PASSES order."""
        have = {r.pass_ for r in self.records}
        return [p for p in PASSES if p in have]

    def measured(self) -> "Table":
        return Table([r for r in self.records if not r.skipped], self.runs)

    def skipped(self) -> "Table":
        return Table([r for r in self.records if r.skipped], self.runs)

    def sorted(self, *keys: str) -> "Table":
        keys = keys or ("run", "kernel", "d", "threads", "causal", "n")

        def key(r):
            return tuple(kernel_sort_key(r.kernel) if k == "kernel" else getattr(r, k) for k in keys)

        return Table(sorted(self.records, key=key), self.runs)

    def column(self, name: str) -> np.ndarray:
        return np.array([getattr(r, name) for r in self.records])

    def values(self, name: str) -> list:
        """The distinct values of a column, sorted (kernels in the report's order)."""
        distinct = {getattr(r, name) for r in self.records}
        if name == "kernel":
            return sorted(distinct, key=kernel_sort_key)
        return sorted(distinct)

    def one(self, **equal) -> Record | None:
        rows = self.where(**equal).records
        return rows[0] if rows else None

    def series(self, measure: str, **equal) -> tuple:
        """(n, value) arrays of the measured points matching `equal`, sorted by n."""
        rows = self.where(**equal).measured().sorted("n")
        return rows.column("n").astype(float), rows.column(measure).astype(float)
