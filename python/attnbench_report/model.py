"""The cost model: each forward point's time predicted from what the machine measured alone and what
the point does, never from the point's own time.

- What the machine measured (bench/machine_constants.hpp, in the run's JSON context, again among the
  matrix's points and after the study's last window: load/machine_constants.py, which keeps the fastest
  reading of each): the SIMD
  kernels' two products alone on one key block in L2 (FLOP/s per ISA and d), their softmax sweeps
  alone on one score tile (seconds per score), both also per thread while every thread runs them at
  once (the price of a compute task on a call of that many threads), the exp, the FMA rate per ISA, read bandwidth from
  each cache level and from DRAM and over a curve of set sizes from twice the L2 to DRAM, on one
  thread and on all, and the cost of a parallel task and of starting a call on the pool.
- What the point does (src/forward_counts.hpp, counters `count_*` written by the benchmark from the
  kernel's own blocking): FMAs of each product, exps, scores swept, packed K/V bytes streamed per
  query block, the score matrix's bytes (naive), packing bytes, tasks.

A point's time is the sum of its phases, each priced by one constant:

    products   (score_fmas + blend_fmas) x 2 / the products' FLOP/s
    softmax    softmax_scores x the sweeps' seconds per score, plus the rescale exps (scalar exp)
    K/V stream kv_stream_bytes / the read bandwidth of the working set it is read from (kv_set_bytes:
               one head's packed K and V, or one key chunk's for a kernel that takes chunks, on as
               many threads as run compute tasks at once),
               when that exceeds the L2 (from L2 the products' own constant already paid it); for
               kernels without query blocks, which sweep K and V in order once per row, only what
               the sweep adds beyond the work
    scores     naive kernels, when a task's score matrix exceeds the L1 (the sweeps' constant was
               measured on an L1 tile): what its sweeps (score_sweeps of them), at the bandwidth of
               a set that size, add beyond the work of the pass that makes them (each pass streams
               the matrix in order while it computes, and the prefetchers overlap the two: the score
               pass writes S, the softmax passes read and rewrite it, the blend reads it)
    packing    pack_bytes / the SIMD kernels' measured packing rate over the threads (runs before
               it was measured: the read bandwidth of a set of that many bytes)
    Q and O    io_bytes, likewise
    threads    the start of a call on the pool, and tasks x the cost of one, over the threads

A set's bandwidth is that of the smallest measured sweep at least as large (the sweeps over half the
L1, half the L2, and sets doubling from twice the L2 to the DRAM set): measured, because the level a
set is really read from need not be the one the reported sizes say (a guest's L3).

The sum, not the max: streaming K and V past the L2 is not hidden behind the products (a key block
comes from beyond L2 while its first row group alone computes on it, the other groups then read it
from L2). Sharing each key block among more query rows (Simd::query_block's comment gives the
measurement) made one thread faster once a head's K and V outgrew the L2; had the stream overlapped
the FMAs, fewer passes over K and V could not have shortened the call. On t threads the compute phases divide by the threads' share of the compute tasks
(t, less the idle part of an unequal last round) and bandwidth beyond L2 is read off the same sweeps
measured on all threads (Machine.read_gbs; runs from before that curve: a cache's adds up per core,
DRAM's scales as the DRAM sweep did).

The SIMD kernels, float32 and bf16 products alike (and OpenBLAS's softmax), are priced with their
own measured phases (a bf16 kernel's per its ISA: avx512bf16, amxbf16). The plain loops
(scalar, auto-vectorised) and OpenBLAS's sgemm have no constant of their own: their products are priced
at the FMA rate of their arithmetic (scalar multiply-add; for autovec the blend at the AVX2 FMA rate and
the score's dot products, which the compiler may not reorder, scalar; the widest ISA for OpenBLAS)
and their compute phases are scaled by one factor per kernel (the plain loops' scalar exps cost only
what would exceed their products: raw_phases gives the fit that showed it), before the sweeps that
overlap them are weighed against them: the median over its points with n >= 512 of the factor that
makes a point's prediction equal its measured time (exact_factor), stated in the report beside the
residuals. Their bytes are priced by the measured sweeps like everyone's.
"""
from __future__ import annotations

import json
import math
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from . import analysis
from .load.results import Record, Run, Table
from .load.machine_constants import (FAST_SET_RATIO, MODEL_DIMS, SECOND_READING_FILE, Machine,  # noqa: F401
                               at_least, load_later_readings)

PHASES = ("products", "softmax", "K/V stream", "scores", "packing", "Q and O", "threads")
MIN_N = 512  # the targets cover points with n >= 512
SIMD_BAND, PLAIN_BAND = 0.15, 0.25  # |predicted / measured - 1| the model aims at
FILE_NAME = "model.json"


@dataclass
class Prediction:
    """One forward point, measured and predicted."""

    record: Record
    # The time the model is checked against: like the constants it is priced with, the machine
    # undisturbed as nearly as the run saw it, so the fastest repetition (analysis.best_ms)
    measured_s: float
    predicted_s: float
    phases: dict  # phase -> predicted seconds (a calibrated kernel's compute phases times its factor)
    factor: float = 1.0  # the kernel's calibration factor (1 for the SIMD kernels)
    kv_level: str = ""
    score_level: str = ""

    @property
    def error(self) -> float:
        """predicted / measured - 1."""
        return self.predicted_s / self.measured_s - 1.0

    def share(self, phase: str) -> float:
        total = sum(self.phases.values())
        return self.phases.get(phase, 0.0) / total if total > 0 else math.nan

    @property
    def dominant(self) -> str:
        return max(self.phases, key=self.phases.get)

    @property
    def band(self) -> float:
        return SIMD_BAND if self.record.backend in PHASED_BACKENDS else PLAIN_BAND

    @property
    def within_band(self) -> bool:
        return abs(self.error) <= self.band


PLAIN_BACKENDS = ("scalar", "autovec")  # the plain loops: no measured phases of their own
# The SIMD kernels, float32 and bf16 products: priced by their own phases, measured per ISA.
PHASED_BACKENDS = ("simd", "simd-bf16")


def calibrated(r: Record) -> bool:
    """Is the kernel priced by one factor fitted on its own points (not by phases of its own)?"""
    return r.backend not in PHASED_BACKENDS


def raw_phases(machine: Machine, r: Record, factor: float = 1.0) -> dict | None:
    """The phases' predicted seconds of one forward point, its compute phases times `factor` (a
    calibrated kernel's) before anything overlaps them, or None when the point or the run lacks what
    the model needs."""
    if not r.counts or r.skipped:
        return None
    t = r.threads
    widest = machine.widest_isa()
    flops = 2.0 * (r.count("score_fmas") + r.count("blend_fmas"))
    rescale_exps = max(0.0, r.count("exps") - r.count("softmax_scores"))
    scalar_exp = machine.number("exp_per_s_scalar")
    if r.backend in PHASED_BACKENDS:
        rate, per_score = machine.products_flops(r.isa, r.d, t), machine.softmax_seconds(r.isa, r.d, t)
    elif r.backend == "openblas":
        rate = machine.fma_flops(widest) if widest else None
        per_score = machine.softmax_seconds(widest, r.d, t) if widest else None
    else:
        rate = machine.fma_flops("scalar")
        per_score = 1.0 / scalar_exp if scalar_exp else None
    if not (rate and per_score and scalar_exp):
        return None
    if r.backend == "autovec":
        # The compiler vectorises the blend (O += p V, no reduction) but not the score's dot products:
        # a float sum may not be reordered without -ffast-math.
        vector = machine.fma_flops("avx2")
        if not vector:
            return None
        rate = flops / (2.0 * r.count("score_fmas") / rate + 2.0 * r.count("blend_fmas") / vector)
    # t threads share equal compute tasks in rounds: the last round may leave some idle.
    tasks = r.count("compute_tasks")
    parallel = tasks / math.ceil(tasks / t) if t > 1 and tasks > 0 else float(t)
    phases = {
        "products": factor * flops / rate / parallel,
        "softmax": factor * (r.count("softmax_scores") * per_score + rescale_exps / scalar_exp) / parallel,
    }
    if r.backend in PLAIN_BACKENDS:
        # Over a run's plain-loop points, a fit of measured time to products and softmax weighs the
        # scalar exps at about nothing beside the products (-1.8 to 0.3 with the products at 1.9-2.3,
        # run A of docs/studies/2026-12-03-cost-model-accuracy.md): they cost only what would exceed the products. The tiled loops run each
        # key's exp between its score's chain of dependent adds and its blend, out of order; why the
        # naive loops' separate softmax pass weighs so little is not established.
        phases["softmax"] = max(0.0, phases["softmax"] - phases["products"])

    # The streams (K and V, the score matrix) are read by the threads that run compute tasks at once:
    # fewer than the call's threads when it has fewer tasks (a naive call with one query row has one,
    # so one thread reads all of K and V while the other has only packed).
    readers = min(t, int(tasks)) if t > 1 and tasks > 0 else t

    def priced(nbytes: float, working_set: float, threads: int = readers) -> float:
        gbs = machine.read_gbs(working_set, threads)
        return nbytes / (gbs * 1e9) if gbs else math.nan

    # The set the stream is read from: one key chunk's K and V where the kernel passes super blocks
    # of query blocks over chunks (runs before it counted them: the head's).
    kv_set = r.count("kv_set_bytes")
    if not math.isfinite(kv_set):
        kv_set = r.count("kv_head_bytes")
    stream = priced(r.count("kv_stream_bytes"), kv_set) if machine.beyond(kv_set, 2) else 0.0
    if r.count("query_block") <= 1:
        # A kernel without query blocks sweeps K and V in order once per row while it computes:
        # the prefetchers overlap the sweep with the work, and only what it adds beyond it counts.
        stream = max(0.0, stream - phases["products"] - phases["softmax"])
    phases["K/V stream"] = stream
    score_set = r.count("score_bytes") > 0 and r.count("score_set_bytes")
    if score_set and machine.beyond(score_set, 1):
        # Each pass streams the score matrix in order while it computes, so the prefetchers overlap
        # the two: a pass costs the larger of its work and its sweeps, and the phase is what the
        # sweeps add beyond the work (score: the write of S; softmax: its passes' reads and
        # rewrites, score_sweeps - 2 of them; blend: one read).
        sweeps = r.count("score_sweeps")
        if not sweeps > 2:  # a run from before the benchmark counted them (NaN), or no passes to price
            return None
        sweep = priced(r.count("score_bytes") / sweeps, score_set)
        share = r.count("score_fmas") / (r.count("score_fmas") + r.count("blend_fmas"))
        work = (phases["products"] * share, phases["softmax"], phases["products"] * (1 - share))
        passes = (1, sweeps - 2, 1)  # the score pass's write, the softmax passes', the blend's read
        phases["scores"] = sum(max(0.0, k * sweep - t_work) for k, t_work in zip(passes, work))
    else:
        phases["scores"] = 0.0
    # Packing K and V reads them and writes them transposed into panels: slower than a read sweep of
    # its bytes. A SIMD kernel's packing is priced at its own measured rate for a set that size, split
    # among the threads; runs before the benchmark measured it (and other kernels) at the read sweep.
    pack_rate = machine.pack_rate(r.isa, r.count("pack_bytes")) if r.backend in PHASED_BACKENDS else None
    phases["packing"] = (r.count("pack_bytes") / (pack_rate * t) if pack_rate
                         else priced(r.count("pack_bytes"), r.count("pack_bytes"), t))
    phases["Q and O"] = priced(r.count("io_bytes"), r.count("io_bytes"), t)
    if t > 1:
        start, task = machine.number(f"call_start_s_threads_{t}"), machine.number(f"task_s_threads_{t}")
        phases["threads"] = (start or 0.0) + r.count("tasks") * (task or 0.0) / t
    else:
        phases["threads"] = 0.0
    if any(not math.isfinite(v) for v in phases.values()):
        return None
    return phases


@dataclass
class Model:
    """Every forward point the model prices, and the factors of the calibrated kernels."""

    machine: Machine
    predictions: list = field(default_factory=list)
    factors: dict = field(default_factory=dict)  # kernel -> factor

    def of_kernel(self, kernel: str) -> list:
        return [p for p in self.predictions if p.record.kernel == kernel]

    def targeted(self) -> list:
        """The points the targets cover: n >= 512."""
        return [p for p in self.predictions if p.record.n >= MIN_N]

    def kernels(self) -> list:
        seen = []
        for p in self.predictions:
            if p.record.kernel not in seen:
                seen.append(p.record.kernel)
        return seen

    def find(self, kernel: str, n: int, d: int, threads: int) -> Prediction | None:
        """The square one-head point (the matrix's, not causal) of that kernel, n, d and threads."""
        return next((p for p in self.predictions if p.record.kernel == kernel and p.record.n == n
                     and p.record.d == d and p.record.threads == threads and p.record.family == "matrix"
                     and not p.record.causal), None)


def build(table: Table) -> Model:
    """The model of a run's forward points that carry counts (every shape: matrix, decode, GQA)."""
    machine = Machine(table.runs[0], load_later_readings(table.runs[0]))
    model = Model(machine)
    if not machine.measured:
        return model
    points = table.forward().measured().where(run=table.runs[0].index)
    for r in points.sorted():
        phases = raw_phases(machine, r)
        if phases is not None and analysis.best_ms(r) > 0:
            model.predictions.append(Prediction(
                r, analysis.best_ms(r) / 1e3, sum(phases.values()), phases,
                kv_level=machine.level(r.count("kv_head_bytes")),
                score_level=machine.level(r.count("score_set_bytes")) if r.count("score_bytes") > 0 else ""))
    for kernel in model.kernels():
        mine = model.of_kernel(kernel)
        if not calibrated(mine[0].record):
            continue
        # The factor scales the compute phases only (how far the plain loops run from the FMA rate of
        # their arithmetic), before the sweeps that overlap them are weighed against them; bytes are
        # priced by the measured sweeps, whoever moves them.
        fit_on = [p for p in mine if p.record.n >= MIN_N] or mine
        factors = [f for f in (exact_factor(machine, p) for p in fit_on) if f is not None]
        factor = statistics.median(factors) if factors else 1.0
        model.factors[kernel] = factor
        for p in mine:
            p.factor = factor
            p.phases = raw_phases(machine, p.record, factor)
            p.predicted_s = sum(p.phases.values())
    return model


FACTOR_RANGE = (1e-3, 1e3)


def exact_factor(machine: Machine, p: Prediction) -> float | None:
    """The factor on a point's compute phases that makes its prediction its measured time: bisection
    in log space (the prediction never falls as the factor grows), clamped to FACTOR_RANGE; None when
    its bytes alone take the measured time (the point says nothing of its compute's speed)."""
    lo, hi = FACTOR_RANGE

    def predicted(f: float) -> float:
        return sum(raw_phases(machine, p.record, f).values())

    if predicted(lo) >= p.measured_s:
        return None
    if predicted(hi) <= p.measured_s:
        return hi
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if predicted(mid) < p.measured_s else (lo, mid)
    return math.sqrt(lo * hi)




@dataclass(frozen=True)
class Residuals:
    kernel: str
    points: int
    median_abs: float
    worst: Prediction
    outside: list  # targeted predictions outside the kernel's band


def residuals(model: Model) -> list:
    """Per kernel, over its points with n >= 512: median and worst |error|, and the points outside."""
    out = []
    for kernel in model.kernels():
        mine = [p for p in model.targeted() if p.record.kernel == kernel]
        if not mine:
            continue
        errors = [abs(p.error) for p in mine]
        out.append(Residuals(kernel, len(mine), statistics.median(errors), max(mine, key=lambda p: abs(p.error)),
                             [p for p in mine if not p.within_band]))
    return out


STALLED_SPEEDUP = 1.25  # a multithreaded point this little faster than its one-thread twin ...
EXPECTED_SPEEDUP = 1.6  # ... where the model expects at least this, ran with a core taken


def miss_reason(p: Prediction, model: Model | None = None) -> str:
    """Why the model misses a point, in words: noise, a core the host took (a multithreaded call barely
    faster than its one-thread twin where the model expects it much faster), or the phase the model
    would have to misprice."""
    cv = p.record.time_ms_cv
    if math.isfinite(cv) and cv > 0.05:
        return f"its repetitions spread (CV {100 * cv:.0f}%)"
    r = p.record
    one = model.find(r.kernel, r.n, r.d, 1) if model is not None and r.threads > 1 else None
    if one is not None and r.family == "matrix" and not r.causal:
        measured, predicted = one.measured_s / p.measured_s, one.predicted_s / p.predicted_s
        if measured < STALLED_SPEEDUP and predicted > EXPECTED_SPEEDUP:
            return (f"it ran only {measured:.2f}x faster than on one thread where the model expects "
                    f"{predicted:.2f}x: a core was busy with something else")
    side = "over" if p.error > 0 else "under"
    return f"{side}-predicted; its largest phase is {p.dominant} ({100 * p.share(p.dominant):.0f}%)"


def predicted_crossover(model: Model, tiled: str, naive: str, d: int, threads: int) -> float | None:
    """The first n (analysis.crossing's rule, as for the measured times) from which the predicted tiled
    time stays below the predicted naive one: 0 when it does at every length both were measured at,
    None when it never does from some length to the largest."""
    pairs = []
    for p in model.predictions:
        r = p.record
        if r.kernel == tiled and r.family == "matrix" and r.d == d and r.threads == threads and not r.causal:
            other = model.find(naive, r.n, d, threads)
            if other is not None:
                pairs.append((r.n, other.predicted_s / p.predicted_s))
    pairs.sort()
    verdict, n_cross, _ = analysis.crossing([n for n, _ in pairs], [a for _, a in pairs])
    return 0.0 if verdict == "always" else n_cross


def fast_set_bytes(machine: Machine) -> float | None:
    """The largest working set the run's read sweeps still read FAST_SET_RATIO times faster than DRAM: where
    this machine's caches end, measured (a guest's reported L3 need not be what it gets)."""
    curve, dram = machine.read_curve(), machine.number("read_gbs_dram")
    fast = [size for size, gbs in curve if dram and gbs >= FAST_SET_RATIO * dram]
    return max(fast) if fast else None


@dataclass(frozen=True)
class CacheExit:
    """Where a naive kernel's score matrix leaves the caches (one thread, one d): the first n the model
    puts beyond fast_set_bytes, and the measured lengths between which its GFLOP/s falls most."""

    kernel: str
    d: int
    predicted_n: int | None  # None: no measured n puts it there
    fall_from: int | None
    fall_to: int | None
    fall: float  # GFLOP/s at fall_to over fall_from


def cache_exits(model: Model) -> list:
    limit = fast_set_bytes(model.machine)
    out = []
    if limit is None:
        return out
    for kernel in model.kernels():
        if not kernel.startswith("naive/simd"):
            continue
        for d in sorted({p.record.d for p in model.of_kernel(kernel)}):
            mine = sorted((p for p in model.of_kernel(kernel) if p.record.d == d and p.record.threads == 1
                           and p.record.family == "matrix" and not p.record.causal), key=lambda p: p.record.n)
            if len(mine) < 2:
                continue
            beyond = [p.record.n for p in mine if p.record.count("score_set_bytes") > limit]
            falls = [(b.record.gflops_median / a.record.gflops_median, a.record.n, b.record.n)
                     for a, b in zip(mine, mine[1:]) if a.record.gflops_median > 0]
            falls = [f for f in falls if math.isfinite(f[0])]
            if not falls:
                continue
            fall, n0, n1 = min(falls)
            out.append(CacheExit(kernel, d, beyond[0] if beyond else None, n0, n1, fall))
    return out


PHASES_FILE = "phases.json"  # the phases window (attnbench_bench --phases), next to results.json
MEASURED_PHASES = ("all", "score", "softmax", "blend", "pack")


@dataclass(frozen=True)
class MeasuredPhases:
    """One point of the phases window: a tiled SIMD kernel's rows function over one n x n head on one
    thread (`all`), and each phase timed alone in the same rounds (median ms per phase)."""

    kernel: str
    n: int
    d: int
    ms: dict  # phase -> median milliseconds
    share: dict  # phase -> median over rounds of its time over the round's `all`


def load_phases(run: Run) -> list:
    """The phases window next to the run, [] when there is none. Raises ValueError naming the file
    when it is not Google Benchmark JSON."""
    path = run.path.parent / PHASES_FILE
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        benchmarks = data["benchmarks"]
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise ValueError(f"{path}: not the phases window's Google Benchmark JSON ({error})") from None
    out = []
    for entry in benchmarks:
        if entry.get("aggregate_name") != "median" or entry.get("error_occurred"):
            continue
        match = re.match(r"phases/(.+)/n:(\d+)/d:(\d+)/", entry.get("run_name", ""))
        if not match:
            continue
        out.append(MeasuredPhases(match.group(1), int(match.group(2)), int(match.group(3)),
                                  {p: float(entry.get(f"ms_{p}", math.nan)) for p in MEASURED_PHASES},
                                  {p: float(entry.get(f"share_{p}", math.nan)) for p in MEASURED_PHASES}))
    return out


def to_json(model: Model) -> dict:
    """model.json: the constants' readings (and the gain of each one's fastest over the first), the factors, and per point the kernel, shape, threads,
    measured and predicted seconds and each phase's share of the prediction."""
    points = []
    for p in model.predictions:
        r = p.record
        points.append({
            "kernel": r.kernel, "family": r.family, "q_len": r.q_len, "kv_len": r.kv_len, "heads": r.heads,
            "kv_heads": r.kv_heads, "d": r.d, "threads": r.threads, "causal": r.causal,
            "measured_s": p.measured_s, "predicted_s": p.predicted_s, "error": p.error,
            "factor": p.factor, "kv_level": p.kv_level, "score_level": p.score_level,
            "phase_shares": {phase: p.share(phase) for phase in PHASES},
        })
    # Per constant read more than once, how much faster the reading the model used was than the first.
    later = model.machine.later
    gains = {key: max(1.0, gain) for key, gain in model.machine.gains().items()}
    return {"run": model.machine.run.label, "constants_readings": {
                "before_points": 1, "among_points": later.among_points, "after_last_window": int(later.after)},
            "constants_gain_over_first": gains, "factors": model.factors,
            "phases": list(PHASES),
            "bands": {"simd": SIMD_BAND, "other": PLAIN_BAND, "min_n": MIN_N}, "points": points}


def write_json(model: Model, out_dir: Path) -> Path:
    path = Path(out_dir) / FILE_NAME
    path.write_text(json.dumps(to_json(model), indent=1) + "\n", encoding="utf-8")
    return path
