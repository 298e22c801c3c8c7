"""Numbers derived from the table that both the figures and the text use, so they always agree:
which kernels, fitted exponents, speedup pairs, the tiled-over-naive crossover, winners, noise.
Memory (the score matrix, scratch curves) is derived in analysis_memory.py, throughput against the
machine's ceilings (peak shares, the roofline) in analysis_throughput.py."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import formatting as fmt
from fit import LogLogFit, loglog_fit
from loader import Table

CV_FLAG = 0.05  # a point whose real time varies more than this across repetitions is flagged
SIMD_ISAS = ("avx512f", "avx2", "sse4.2")


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


def present(table: Table, *kernels: str | None) -> bool:
    have = set(table.values("kernel"))
    return all(k is not None and k in have for k in kernels)


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
        for kernel in (tiled_simd, naive_simd, "naive/openblas", "tiled/scalar"):
            if kernel:
                add("threads (all over 1)", f"{kernel}: {all_threads} threads over 1", kernel, kernel, True)
    for simd_pair in ((tiled_simd, naive_simd), ("tiled/autovec", "naive/autovec"), ("tiled/scalar", "naive/scalar")):
        if simd_pair[0] and simd_pair[1]:
            add("tiled over naive", f"{simd_pair[0]} over {simd_pair[1]}", *simd_pair)
    for kernel in table.values("kernel"):
        if kernel != "naive/openblas":
            add("over the OpenBLAS baseline", f"{kernel} over naive/openblas", kernel, "naive/openblas")
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


# --- tiled over naive ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Crossover:
    tiled: str
    naive: str
    d: int
    threads: int
    n: np.ndarray  # lengths measured for both
    advantage: np.ndarray  # naive time / tiled time: above 1, tiled is faster
    noise: np.ndarray  # the larger CV of the two times at each length
    n_cross: float | None  # interpolated length where tiled overtakes naive for good
    index: int  # with n_cross: the first measured length from which tiled stays faster
    verdict: str  # "overtakes", "always", "never", "not past the largest n"

    def _lead(self, i: int) -> str:
        """"tiled 1.09x faster at n = 512" (", within noise" when the lead is under the CV)."""
        a = float(self.advantage[i])
        who, by = ("tiled", a) if a > 1 else ("naive", 1 / a)
        within = ", within noise" if math.isfinite(self.noise[i]) and abs(a - 1) < self.noise[i] else ""
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
    pair = Comparison("tiled over naive", "", tiled, naive)
    n, advantage = speedup_series(table, pair, d, threads)
    noise = np.array([max(table.measured().one(kernel=k, n=int(v), d=d, threads=threads, causal=False).time_ms_cv
                          for k in (tiled, naive)) for v in n], dtype=float)
    faster = advantage > 1
    n_cross, i = None, 0
    if len(n) == 0:
        verdict = "never"
    elif faster.all():
        verdict = "always"
    elif not faster.any():
        verdict = "never"
    elif not faster[-1]:
        verdict = "not past the largest n"
    else:
        # the first length from which tiled stays faster; interpolate ln(advantage) = 0 in ln n
        i = len(faster) - int(np.argmin(faster[::-1]))
        a0, a1 = math.log(advantage[i - 1]), math.log(advantage[i])
        t = a0 / (a0 - a1)
        n_cross = math.exp(math.log(n[i - 1]) + t * (math.log(n[i]) - math.log(n[i - 1])))
        verdict = "overtakes"
    return Crossover(tiled, naive, d, threads, n, advantage, noise, n_cross, i, verdict)


def crossover_pairs(table: Table) -> list:
    """The (tiled, naive) pairs the crossover is asked of: SIMD, scalar, then auto-vectorised."""
    pairs = []
    tiled_simd, naive_simd = simd_kernel(table, "tiled"), simd_kernel(table, "naive")
    if tiled_simd and naive_simd:
        pairs.append(("SIMD", tiled_simd, naive_simd))
    for name, backend in (("scalar", "scalar"), ("auto-vectorised", "autovec")):
        if present(table, f"tiled/{backend}", f"naive/{backend}"):
            pairs.append((name, f"tiled/{backend}", f"naive/{backend}"))
    if present(table, tiled_simd, "naive/openblas"):
        pairs.append(("SIMD tiled vs OpenBLAS naive", tiled_simd, "naive/openblas"))
    return pairs


# --- winners, noise, other shapes ----------------------------------------------------------------------

def winners(table: Table, threads: int, causal: bool = False) -> dict:
    """{(n, d): [records, fastest first]} over every kernel measured at that cell."""
    cells = {}
    for r in table.measured().where(threads=threads, causal=causal):
        cells.setdefault((r.n, r.d), []).append(r)
    return {cell: sorted(rows, key=lambda r: r.time_ms_median) for cell, rows in cells.items()}


def noisy(table: Table, limit: float = CV_FLAG) -> list:
    """Measured points whose real time varies more than `limit` (a fraction) across repetitions."""
    rows = [r for r in table.measured() if math.isfinite(r.time_ms_cv) and r.time_ms_cv > limit]
    return sorted(rows, key=lambda r: -r.time_ms_cv)


def skipped_points(table: Table) -> list:
    return table.skipped().sorted().records


def causal_ratios(table: Table) -> list:
    """(record non-causal, record causal, time ratio) for every point measured both ways."""
    out = []
    measured = table.measured()
    for r in measured.where(causal=True).sorted().records:
        full = measured.one(run=r.run, kernel=r.kernel, n=r.n, d=r.d, threads=r.threads, causal=False)
        if full:
            out.append((full, r, full.time_ms_median / r.time_ms_median))
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
