"""Numbers derived from the table that both the figures and the text use, so they always agree:
which kernels, fitted exponents, speedups and thread scaling, the tiled-over-naive crossover,
noise, winners, causal and grouped-query ratios. Memory (the score matrix, scratch curves, long
contexts) is derived in analysis/memory.py, throughput against the machine's ceilings (peak shares,
head dims, the roofline, decoding bandwidth) in analysis/throughput.py, the demos' numbers in
analysis/demos.py. The narrative modules only phrase what these return."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from .. import formatting as fmt
from ..fit import LogLogFit, loglog_fit
from ..load.results import Record, Table

CV_FLAG = 0.05  # a point whose real time varies more than this across repetitions is flagged
# fp32 lanes per vector register, widest ISA first: the order the dispatcher prefers when the context
# does not say what it chose, and the lane counts the speedups section quotes, in one table
SIMD_LANES = {"avx512f": 16, "avx2": 8, "sse4.2": 4}
SIMD_ISAS = tuple(SIMD_LANES)


# --- which kernels and threads ------------------------------------------------------------------

def thread_counts(table: Table) -> list:
    return table.values("threads")


def threads_all(table: Table) -> int:
    """The "all cores" thread count: the run's threads_all, else the most threads measured."""
    for run in table.runs:
        if run.threads_all and run.threads_all in table.values("threads"):
            return run.threads_all
    counts = thread_counts(table)
    return max(counts) if counts else 1


def simd_kernel(table: Table, strategy: str) -> str | None:
    """The SIMD kernel the dispatcher chose on this machine (`dispatch tiled/simd` in the context),
    or the widest ISA measured when the context does not say."""
    kernels = table.values("kernel")
    for run in table.runs:
        chosen = run.dispatch(f"{strategy}/simd")
        if chosen in kernels:
            return chosen
    for isa in SIMD_ISAS:
        if f"{strategy}/simd/{isa}" in kernels:
            return f"{strategy}/simd/{isa}"
    return None


def baseline_kernel(table: Table) -> str | None:
    """The kernel the run calls its baseline (context `role <kernel>` = "baseline"). Runs recorded
    before the benchmark wrote roles name none; for them, the kernel of the backend the benchmark
    gives that role (OpenBLAS), read from the kernel's parsed backend."""
    kernels = table.values("kernel")
    roles = {k: run.role(k) for run in table.runs for k in kernels if run.role(k)}
    if roles:
        return next((k for k in kernels if roles.get(k) == "baseline"), None)
    return next((r.kernel for r in table.records if r.backend == "openblas"), None)


def present(table: Table, *kernels: str | None) -> bool:
    have = set(table.values("kernel"))
    return all(k is not None and k in have for k in kernels)


def fp32_lanes(kernel: str | None) -> int | None:
    """The fp32 lanes of a SIMD kernel's vectors (`tiled/simd/avx2`: 8), None for any other kernel."""
    return SIMD_LANES.get(kernel.split("/")[-1]) if kernel else None


# --- exponents ----------------------------------------------------------------------------------

def time_fit(table: Table, kernel: str, d: int, threads: int, causal: bool = False) -> LogLogFit | None:
    """Least-squares exponent of real time (median) against n over every measured n."""
    n, t = table.series("time_ms_median", kernel=kernel, d=d, threads=threads, causal=causal)
    return loglog_fit(n, t)


def time_fits(table: Table, threads: int, causal: bool = False) -> dict:
    """{(kernel, d): fit} for every kernel and head dim with at least two measured lengths."""
    out = {}
    for kernel in table.values("kernel"):
        for d in table.where(kernel=kernel).values("d"):
            fit = time_fit(table, kernel, d, threads, causal)
            if fit is not None:
                out[(kernel, d)] = fit
    return out


def through_two_lengths(fit: LogLogFit) -> bool:
    """A fit through only two lengths (the others were skipped) is exact by construction: its R² is 1
    and says nothing, so the text marks it and leaves it out of the R² range."""
    return fit.count == 2


def r2_range(fits) -> tuple | None:
    """(lowest, highest) R² of the fits through three or more lengths, or None when there are none."""
    r2s = [fit.r2 for fit in fits if not through_two_lengths(fit)]
    return (min(r2s), max(r2s)) if r2s else None


def steeper_exponents(fits: dict, steeper: str, than: str, dims) -> tuple:
    """For {(kernel, d): fit}: ([d where both kernels have a time fit], [those of them where the
    exponent of `steeper` is larger than that of `than`])."""
    both = [d for d in dims if (steeper, d) in fits and (than, d) in fits]
    return both, [d for d in both if fits[(steeper, d)].slope > fits[(than, d)].slope]


# --- comparisons --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Comparison:
    """A speedup: time of `baseline` over time of `kernel` at the same point (>1: kernel faster).
    A thread comparison has kernel == baseline and compares threads `all` against 1."""

    group: str
    label: str
    kernel: str
    baseline: str
    threads_vs_one: bool = False


def comparisons(table: Table) -> list:
    tiled_simd, naive_simd = simd_kernel(table, "tiled"), simd_kernel(table, "naive")
    baseline = baseline_kernel(table)
    out = []

    def add(group, label, kernel, baseline, threads_vs_one=False):
        if present(table, kernel, baseline):
            out.append(Comparison(group, label, kernel, baseline, threads_vs_one))

    for strategy, simd in (("tiled", tiled_simd), ("naive", naive_simd)):
        if simd:
            add("SIMD over scalar", f"{simd} over {strategy}/scalar", simd, f"{strategy}/scalar")
    for strategy in ("tiled", "naive"):
        # autovec is compiled for AVX2 + FMA, so the like-for-like explicit kernel is the AVX2 one
        explicit = f"{strategy}/simd/avx2" if present(table, f"{strategy}/simd/avx2") else simd_kernel(table, strategy)
        if explicit:
            add("explicit SIMD over auto-vectorised", f"{explicit} over {strategy}/autovec", explicit, f"{strategy}/autovec")
    all_threads = threads_all(table)
    if all_threads > 1:
        for kernel in (tiled_simd, naive_simd, baseline, "tiled/scalar"):
            if kernel:
                add("threads (all over 1)", f"{kernel}: {all_threads} threads over 1", kernel, kernel, True)
    for simd_pair in ((tiled_simd, naive_simd), ("tiled/autovec", "naive/autovec"), ("tiled/scalar", "naive/scalar")):
        if simd_pair[0] and simd_pair[1]:
            add("tiled over naive", f"{simd_pair[0]} over {simd_pair[1]}", *simd_pair)
    for kernel in table.values("kernel"):
        if baseline and kernel != baseline:
            add("over the baseline", f"{kernel} over {baseline}", kernel, baseline)
    return out


def speedup_series(table: Table, comparison: Comparison, d: int, threads: int, causal: bool = False) -> tuple:
    """(n, speedup) at every n where both sides were measured."""
    if comparison.threads_vs_one:
        n_k, t_k = table.series("time_ms_median", kernel=comparison.kernel, d=d, threads=threads, causal=causal)
        n_b, t_b = table.series("time_ms_median", kernel=comparison.kernel, d=d, threads=1, causal=causal)
    else:
        n_k, t_k = table.series("time_ms_median", kernel=comparison.kernel, d=d, threads=threads, causal=causal)
        n_b, t_b = table.series("time_ms_median", kernel=comparison.baseline, d=d, threads=threads, causal=causal)
    common = sorted(set(n_k) & set(n_b))
    k = dict(zip(n_k, t_k))
    b = dict(zip(n_b, t_b))
    return np.array(common, dtype=float), np.array([b[n] / k[n] for n in common], dtype=float)


@dataclass(frozen=True)
class SpeedupRange:
    """A speedup over every common length: its range, and its value at the largest common n (where
    fixed costs weigh least, so the one the text quotes)."""

    n: np.ndarray
    speedup: np.ndarray

    @property
    def lowest(self):
        return self.speedup.min()

    @property
    def highest(self):
        return self.speedup.max()

    @property
    def n_largest(self) -> int:
        return int(self.n[-1])

    @property
    def at_largest(self):
        return self.speedup[-1]


def speedup_range(table: Table, comparison: Comparison, d: int, threads: int) -> SpeedupRange | None:
    """speedup_series (not causal) as a SpeedupRange, or None when the two sides share no length."""
    n, speedup = speedup_series(table, comparison, d, threads)
    return SpeedupRange(n, speedup) if len(n) else None


@dataclass(frozen=True)
class ThreadScaling:
    """One kernel at one head dim on `threads` threads against one, at the largest n measured both ways."""

    kernel: str
    d: int
    n: int
    one: Record  # on one thread
    many: Record  # on `threads` threads
    speedup: float
    efficiency_pct: float  # speedup / threads, in percent: 100 when every thread pulls its weight


def thread_scaling(table: Table, threads: int) -> list:
    """A ThreadScaling per kernel and head dim measured on 1 and `threads` threads, not causal."""
    measured = table.measured().where(causal=False)
    out = []
    for kernel in measured.values("kernel"):
        for d in measured.values("d"):
            scaling = speedup_range(measured, Comparison("threads", kernel, kernel, kernel, True), d, threads)
            if scaling is None:
                continue
            n = scaling.n_largest
            out.append(ThreadScaling(kernel, d, n, measured.one(kernel=kernel, d=d, n=n, threads=1),
                                     measured.one(kernel=kernel, d=d, n=n, threads=threads), scaling.at_largest,
                                     100 * scaling.at_largest / threads))
    return out


# --- tiled over naive ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Crossover:
    tiled: str
    naive: str
    d: int
    threads: int
    n: np.ndarray  # lengths measured for both
    advantage: np.ndarray  # naive time / tiled time: above 1, tiled is faster
    noise: np.ndarray  # the comparison's noise at each length (comparison_noise)
    n_cross: float | None  # interpolated length where tiled overtakes naive for good
    index: int  # with n_cross: the first measured length from which tiled stays faster
    verdict: str  # "overtakes", "always", "never", "not past the largest n"

    def _lead(self, i: int) -> str:
        """"tiled 1.09x faster at n = 512" (", within noise" when the lead is under the noise)."""
        a = float(self.advantage[i])
        who, by = ("tiled", a) if a > 1 else ("naive", 1 / a)
        within = ", within noise" if within_noise(a - 1, self.noise[i]) else ""
        return f"{who} {fmt.ratio(by)} faster at n = {fmt.count(self.n[i])}{within}"

    def sentence(self) -> str:
        if len(self.n) == 0:
            return "no common measured lengths"
        first, last = int(self.n[0]), int(self.n[-1])
        if self.verdict == "always":
            return f"tiled is faster at every measured n ({fmt.count(first)} to {fmt.count(last)}; {self._lead(0)})"
        if self.verdict == "never":
            return (f"never in the measured range (n = {fmt.count(first)} to {fmt.count(last)}; naive stays faster, "
                    f"{self._lead(len(self.n) - 1)})")
        if self.verdict == "not past the largest n":
            wins = ", ".join(fmt.count(n) for n, a in zip(self.n, self.advantage) if a > 1)
            return (f"never for good in the measured range: tiled is faster only at n = {wins}, "
                    f"and {self._lead(len(self.n) - 1)}")
        i = self.index
        return f"tiled overtakes naive at n ≈ {fmt.count(self.n_cross)} ({self._lead(i - 1)}; {self._lead(i)})"


def crossover(table: Table, tiled: str, naive: str, d: int, threads: int) -> Crossover:
    """Where `tiled` overtakes `naive` (not causal), from each length's best_ms."""
    points = table.measured().where(d=d, threads=threads, causal=False)
    sides = [{r.n: r for r in points.where(kernel=k)} for k in (tiled, naive)]
    common = sorted(set(sides[0]) & set(sides[1]))
    floor = noise_floor(table)
    n = np.array(common, dtype=float)
    advantage = np.array([best_ms(sides[1][v]) / best_ms(sides[0][v]) for v in common], dtype=float)
    noise = np.array([comparison_noise(floor, sides[0][v], sides[1][v]) for v in common], dtype=float)
    verdict, n_cross, i = crossing(n, advantage)
    return Crossover(tiled, naive, d, threads, n, advantage, noise, n_cross, i, verdict)


def crossing(n, advantage) -> tuple:
    """Where an advantage (naive time over tiled time, by ascending n) passes 1 for good: (verdict,
    n_cross, i) with verdict "always", "never", "not past the largest n" or "overtakes", and then
    n_cross interpolated where ln(advantage) = 0 in ln n, between n[i - 1] and n[i]. The measured
    crossover's rule and the cost model's (model.predicted_crossover)."""
    n, advantage = np.asarray(n, dtype=float), np.asarray(advantage, dtype=float)
    faster = advantage > 1
    if len(n) == 0 or not faster.any():
        return "never", None, 0
    if faster.all():
        return "always", None, 0
    if not faster[-1]:
        return "not past the largest n", None, 0
    i = len(faster) - int(np.argmin(faster[::-1]))  # the first length from which tiled stays faster
    a0, a1 = math.log(advantage[i - 1]), math.log(advantage[i])
    t = a0 / (a0 - a1)
    return "overtakes", math.exp(math.log(n[i - 1]) + t * (math.log(n[i]) - math.log(n[i - 1]))), i


def crossover_pairs(table: Table) -> list:
    """The (tiled, naive) pairs the crossover is asked of: SIMD, scalar, then auto-vectorised."""
    pairs = []
    tiled_simd, naive_simd = simd_kernel(table, "tiled"), simd_kernel(table, "naive")
    if tiled_simd and naive_simd:
        pairs.append(("SIMD", tiled_simd, naive_simd))
    for name, backend in (("scalar", "scalar"), ("auto-vectorised", "autovec")):
        if present(table, f"tiled/{backend}", f"naive/{backend}"):
            pairs.append((name, f"tiled/{backend}", f"naive/{backend}"))
    baseline = baseline_kernel(table)
    if present(table, tiled_simd, baseline):
        pairs.append(("SIMD tiled vs the baseline", tiled_simd, baseline))
    return pairs


# --- noise --------------------------------------------------------------------------------------

def larger_cv(*records: Record) -> float:
    """The larger coefficient of variation of the real times compared: the noise of a comparison."""
    return max(r.time_ms_cv for r in records)


def within_noise(difference: float, noise: float) -> bool:
    """The report's one noise rule: a relative difference (a lead, a ratio minus 1) smaller than the
    noise (comparison_noise, larger_cv) is not a difference; a NaN noise (a single repetition)
    excuses nothing."""
    return math.isfinite(noise) and abs(difference) < noise


# --- what comparisons between points read ---------------------------------------------------------
# A neighbour on a shared host only ever adds time to a compute-bound call, so the fastest
# repetition is the closest a point gets to the kernel alone, and the matrix's verdicts (the fastest
# kernel of a cell, where tiled overtakes naive, flatness in n) compare minimums. A minimum is as
# good as the next-fastest repetition confirms it: a point's `min_spread` is its median over its
# minimum, minus 1 (with 3 repetitions, how far the second-fastest sits above the fastest). Since one
# point's spread is itself drawn from a few repetitions, a comparison's noise is the larger spread of
# its two sides, or the run's typical spread (the median over its points), whichever is larger.
# Runs without minimums (JSON from before the `min` aggregate) compare medians with the CV rule.

def best_ms(r: Record) -> float:
    """The time a comparison reads: the fastest repetition, or the median where there is none."""
    return r.time_ms_min if math.isfinite(r.time_ms_min) else r.time_ms_median


def best_gflops(r: Record) -> float:
    """GFLOP/s at best_ms (the median GFLOP/s is the FLOPs over the median time)."""
    return r.gflops_median * r.time_ms_median / best_ms(r)


def min_spread(r: Record) -> float:
    """The median time over the fastest, minus 1; NaN without a minimum or with one repetition."""
    if not math.isfinite(r.time_ms_min) or r.repetitions < 2 or r.time_ms_min <= 0:
        return math.nan
    return r.time_ms_median / r.time_ms_min - 1


def noise_floor(table: Table) -> float:
    """The median min_spread over the table's measured points (NaN when none has one)."""
    spreads = [s for s in (min_spread(r) for r in table.measured()) if math.isfinite(s)]
    return float(np.median(spreads)) if spreads else math.nan


def comparison_noise(floor: float, *records: Record) -> float:
    """The noise of a comparison between records: the larger of their min_spreads and `floor`
    (noise_floor of their run), or, where a record has no minimum, their larger CV."""
    spreads = [min_spread(r) for r in records]
    if not all(math.isfinite(s) for s in spreads):
        return larger_cv(*records)
    return max([floor] + spreads) if math.isfinite(floor) else max(spreads)


def compares_minimums(table: Table) -> bool:
    """Do the table's measured points carry minimums (the statistic its verdicts read)?"""
    return any(math.isfinite(r.time_ms_min) for r in table.measured())


def statistic(table: Table) -> str:
    """The words for what a comparison reads, for captions and the verdicts' table."""
    return "fastest repetition" if compares_minimums(table) else "median over repetitions"


def noise_rule(table: Table) -> str:
    """The words for when a comparison is within noise."""
    if compares_minimums(table):
        return ("smaller than how far either side's median sits above its fastest repetition, or than the "
                f"run's typical such gap ({fmt.pct(100 * noise_floor(table))}), whichever is larger")
    return "smaller than the larger CV of the two sides"


def noisy(table: Table, limit: float = CV_FLAG) -> list:
    """Measured points whose real time varies more than `limit` (a fraction) across repetitions."""
    rows = [r for r in table.measured() if math.isfinite(r.time_ms_cv) and r.time_ms_cv > limit]
    return sorted(rows, key=lambda r: -r.time_ms_cv)


@dataclass(frozen=True)
class CvSpread:
    count: int  # measured points with a CV (more than one repetition)
    median: float
    largest: float


def cv_spread(table: Table) -> CvSpread | None:
    """The median and largest CV of real time over the measured points, or None when none has one."""
    cvs = np.array([r.time_ms_cv for r in table.measured() if math.isfinite(r.time_ms_cv)])
    return CvSpread(len(cvs), float(np.median(cvs)), float(cvs.max())) if len(cvs) else None


def one_call_points(table: Table) -> tuple:
    """([measured points timed one call per repetition], [their distinct repetition counts, sorted]):
    for those, the CV rests on that few calls."""
    once = [r for r in table.measured() if r.one_call_per_repetition]
    return once, sorted({r.repetitions for r in once})


def skipped_points(table: Table) -> list:
    return table.skipped().sorted().records


def skip_reasons(table: Table) -> dict:
    """{reason with its numbers as "#": [skipped points]}, in order of first appearance, so that
    "predicted 41.2 s per call exceeds ... 10 s budget" and "predicted 97 s ..." are one kind."""
    kinds = {}
    for r in skipped_points(table):
        kinds.setdefault(re.sub(r"\d+(\.\d+)?", "#", r.skip_reason), []).append(r)
    return kinds


# --- winners ------------------------------------------------------------------------------------

def winners(table: Table, threads: int, causal: bool = False) -> dict:
    """{(n, d): [records, fastest first by best_ms]} over every kernel measured at that cell."""
    cells = {}
    for r in table.measured().where(threads=threads, causal=causal):
        cells.setdefault((r.n, r.d), []).append(r)
    return {cell: sorted(rows, key=best_ms) for cell, rows in cells.items()}


@dataclass(frozen=True)
class Lead:
    """The fastest kernel of a cell over the runner-up."""

    winner: Record
    runner_up: Record
    margin: float  # the runner-up's best_ms over the winner's, minus 1
    within_noise: bool


def lead(ranked: list, floor: float) -> Lead | None:
    """The lead of ranked[0] over ranked[1] (a winners() cell; `floor`: noise_floor of its run), or
    None for a cell of one kernel."""
    if len(ranked) < 2:
        return None
    best, second = ranked[0], ranked[1]
    margin = best_ms(second) / best_ms(best) - 1
    return Lead(best, second, margin, within_noise(margin, comparison_noise(floor, best, second)))


# --- other shapes -------------------------------------------------------------------------------

def ideal_causal_ratio(n: int) -> float:
    """Non-causal over causal time if only the scores computed mattered: query i sees keys 0 to i,
    n(n+1)/2 of the n² scores, so 2n/(n+1)."""
    return 2 * n / (n + 1)


@dataclass(frozen=True)
class CausalRatio:
    full: Record  # not causal
    causal: Record
    ratio: float  # full time / causal time
    ideal: float  # ideal_causal_ratio(n)


def causal_ratios(table: Table) -> list:
    """A CausalRatio for every point measured both ways."""
    out = []
    measured = table.measured()
    for r in measured.where(causal=True).sorted().records:
        full = measured.one(run=r.run, kernel=r.kernel, n=r.n, d=r.d, threads=r.threads, causal=False)
        if full:
            out.append(CausalRatio(full, r, full.time_ms_median / r.time_ms_median, ideal_causal_ratio(full.n)))
    return out


@dataclass(frozen=True)
class GroupingGain:
    """Grouped-query attention against as many key/value heads as query heads, same kernel, threads
    and lengths."""

    kernel: str
    threads: int
    full: Record  # kv_heads == heads
    grouped: Record  # kv_heads < heads
    speedup: float  # full time / grouped time
    scratch_saving: float  # full scratch / grouped scratch


def grouping_gains(table: Table) -> list:
    """A GroupingGain for every grouped point that has an ungrouped twin (heads, q_len, kv_len, d)."""
    gqa = table.measured().where(family="gqa").sorted()
    out = []
    for kernel in gqa.values("kernel"):
        for t in gqa.values("threads"):
            mine = gqa.where(kernel=kernel, threads=t).records
            full = [r for r in mine if r.kv_heads == r.heads]
            grouped = [r for r in mine if r.kv_heads < r.heads]
            for f in full:
                for g in grouped:
                    if (g.heads, g.q_len, g.kv_len, g.d) == (f.heads, f.q_len, f.kv_len, f.d):
                        out.append(GroupingGain(kernel, t, f, g, f.time_ms_median / g.time_ms_median,
                                                f.scratch_bytes_median / g.scratch_bytes_median))
    return out


def largest_common_n(table: Table, kernels: list, d: int, threads: int, causal: bool = False) -> int | None:
    sets = [set(table.measured().where(kernel=k, d=d, threads=threads, causal=causal).column("n")) for k in kernels]
    common = set.intersection(*sets) if sets else set()
    return int(max(common)) if common else None


def load_warning(run) -> str | None:
    """A sentence when the 1-minute load average as the benchmarks began was over 0.5 per CPU. That
    average trails: it also counts what ran just before in the same study (the build, the ceilings
    and the calibration calls), so it says "maybe busy", not "busy"."""
    load = run.context.get("load_avg")
    cpus = run.context.get("num_cpus")
    if not load or not cpus:
        return None
    if float(load[0]) > 0.5 * float(cpus):
        return (f"the 1-minute load average was {load[0]:.2f} on {cpus} CPUs as the benchmarks began; it counts "
                "the study's own build, ceiling measurement and calibration just before, and any other work, "
                "which would make timings noisier and slower than a quiet machine's: see the noise section")
    return None
