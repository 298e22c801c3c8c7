"""Throughput derived from the table against the machine's measured ceilings: each kernel's best
GFLOP/s and share of the FMA peak, GFLOP/s by head dim, arithmetic intensity and the roofline, and
the bandwidth a decoding call achieves."""
from __future__ import annotations

import math
from dataclasses import dataclass

from .. import analysis
from ..load.results import Record, Table

# A kernel whose GFLOP/s at the largest n is below this fraction of its best has lost throughput as
# n grew, by more than run-to-run noise (CV_FLAG is 5%) would explain.
FALL_FRACTION = 0.9
# Under this share of its roof at every point, a kernel is limited by the instructions it issues
# (exp, compares, loads, bookkeeping), not by memory or the FMA units.
INSTRUCTION_BOUND_SHARE = 0.2


# --- GFLOP/s and the peak -----------------------------------------------------------------------

def best_of_kernel(table: Table, kernel: str, threads: int) -> Record | None:
    rows = table.measured().where(kernel=kernel, threads=threads).records
    return max(rows, key=lambda r: r.gflops_median) if rows else None


def best_share_of_peak(table: Table, threads: int) -> Record | None:
    """The measured point with the highest share of the measured FMA peak on this thread count."""
    rows = [r for r in table.measured().where(threads=threads) if math.isfinite(r.pct_peak_median)]
    return max(rows, key=lambda r: r.pct_peak_median) if rows else None


def flops_per_score(d: int) -> int:
    """Multiply-add FLOPs per query-key score: 2d in Q Kᵀ and 2d in P V, against one exp."""
    return 4 * d


@dataclass(frozen=True)
class HeadDimGflops:
    """One kernel's GFLOP/s at every head dim, one thread, not causal, at one common length."""

    kernel: str
    n: int  # the largest n measured at every head dim
    gflops: list  # per head dim, ascending d
    ratio: float  # at the largest d over at the smallest

    @property
    def faster_at_largest_d(self) -> bool:
        return self.gflops[-1] > self.gflops[0]


def head_dim_gflops(table: Table) -> list:
    """A HeadDimGflops per kernel that was measured at some n at every head dim of the table."""
    dims = table.values("d")
    out = []
    for kernel in table.measured().values("kernel"):
        rows = table.measured().where(kernel=kernel, threads=1, causal=False)
        common = set.intersection(*[set(rows.where(d=d).column("n")) for d in dims])
        if not common:
            continue
        n = int(max(common))
        gflops = [rows.one(n=n, d=d).gflops_median for d in dims]
        out.append(HeadDimGflops(kernel, n, gflops, gflops[-1] / gflops[0]))
    return out


# --- the roofline -------------------------------------------------------------------------------

def arithmetic_intensity(r: Record) -> float:
    """FLOPs per byte of compulsory traffic (the benchmark's flops_per_call / bytes_moved)."""
    return r.flops_per_call_median / r.bytes_moved_median if r.bytes_moved_median else math.nan


def ridge(run, threads: int) -> float | None:
    peak, bandwidth = run.fma_peak_gflops(threads), run.triad_gbs(threads)
    return peak / bandwidth if peak and bandwidth else None


def roof(run, threads: int, intensity: float) -> float | None:
    """The roofline's GFLOP/s at this arithmetic intensity: min(FMA peak, intensity x triad)."""
    peak, bandwidth = run.fma_peak_gflops(threads), run.triad_gbs(threads)
    return min(peak, intensity * bandwidth) if peak and bandwidth else None


@dataclass(frozen=True)
class RooflinePoint:
    record: Record
    intensity: float  # FLOP/byte
    roof: float  # GFLOP/s, NaN when the run has no ceilings
    roof_pct: float | None  # the point's GFLOP/s as a percentage of its roof
    bound: str | None  # "memory" left of the ridge, "compute" right of it, None without a ridge


def roofline_at_largest_n(points: Table, run, threads: int = 1) -> list:
    """A RooflinePoint per kernel and head dim of `points` (measured on `threads`), at its largest n."""
    ridge_point = ridge(run, threads)
    out = []
    for kernel in points.values("kernel"):
        for d in points.values("d"):
            mine = points.where(kernel=kernel, d=d).sorted("n").records
            if not mine:
                continue
            r = mine[-1]
            intensity = arithmetic_intensity(r)
            ceiling = roof(run, threads, intensity) or math.nan
            bound = None if not ridge_point else ("memory" if intensity < ridge_point else "compute")
            out.append(RooflinePoint(r, intensity, ceiling,
                                     100 * r.gflops_median / ceiling if math.isfinite(ceiling) else None, bound))
    return out


def sides_of_ridge(points: Table, run, threads: int = 1) -> tuple:
    """(points right of the ridge: compute-bound by the model, points left of it: memory-bound)."""
    ridge_point = ridge(run, threads)
    left = [r for r in points if arithmetic_intensity(r) < ridge_point]
    return len(points) - len(left), len(left)


@dataclass(frozen=True)
class ThroughputFall:
    kernel: str
    d: int
    best: Record  # the kernel's highest GFLOP/s at this d
    last: Record  # at the largest n


def throughput_falls(points: Table) -> list:
    """A ThroughputFall per naive kernel and head dim whose GFLOP/s at the largest n is below
    FALL_FRACTION of its best: the score matrix leaving the caches, which the traffic model omits."""
    out = []
    for kernel in points.values("kernel"):
        if not kernel.startswith("naive"):
            continue
        for d in points.values("d"):
            rows = points.where(kernel=kernel, d=d).sorted("n").records
            if len(rows) < 2:
                continue
            best = max(rows, key=lambda r: r.gflops_median)
            last = rows[-1]
            if last is not best and last.gflops_median < FALL_FRACTION * best.gflops_median:
                out.append(ThroughputFall(kernel, d, best, last))
    return out


# --- is tiled throughput flat in n? -------------------------------------------------------------
# A tiled kernel's work per key block does not depend on n, so its GFLOP/s should not either: at
# every n from FLAT_BASE_N on it should stay within FLAT_TOLERANCE of its GFLOP/s at FLAT_BASE_N.
FLAT_BASE_N = 2048
FLAT_TOLERANCE = 0.10


@dataclass(frozen=True)
class Flatness:
    """One SIMD tiled kernel at one head dim and thread count: its GFLOP/s (analysis.best_gflops) at
    FLAT_BASE_N and at every larger n measured (not causal); `floor` is its run's noise floor."""

    kernel: str
    d: int
    threads: int
    base: Record
    later: list  # Records at larger n, ascending
    floor: float

    def ratio(self, r: Record) -> float:
        return analysis.best_gflops(r) / analysis.best_gflops(self.base)

    @property
    def below(self) -> list:
        """The later points more than FLAT_TOLERANCE under the base."""
        return [r for r in self.later if self.ratio(r) < 1.0 - FLAT_TOLERANCE]

    def noisy(self, r: Record) -> bool:
        """Is the ratio within noise of the tolerance's line (either side of it)?"""
        line = 1.0 - FLAT_TOLERANCE
        return analysis.within_noise(self.ratio(r) / line - 1, analysis.comparison_noise(self.floor, r, self.base))


def tiled_flatness(table: Table) -> list:
    """A Flatness per SIMD tiled kernel, head dim and thread count with points at FLAT_BASE_N and
    beyond, forward, one head, not causal."""
    points = table.measured().forward().matrix().where(causal=False)
    floor = analysis.noise_floor(table.forward().matrix())  # over the points the winners read too
    out = []
    for kernel in points.values("kernel"):
        if not kernel.startswith("tiled/simd"):
            continue
        for threads in points.values("threads"):
            for d in points.values("d"):
                rows = points.where(kernel=kernel, threads=threads, d=d).sorted("n").records
                base = [r for r in rows if r.n == FLAT_BASE_N]
                later = [r for r in rows if r.n > FLAT_BASE_N]
                if base and later:
                    out.append(Flatness(kernel, d, threads, base[0], later, floor))
    return out


def best_roof_share(points: Table, run, kernel: str, threads: int = 1) -> float:
    """The highest fraction of its roof one kernel reaches over its points (the run must have ceilings)."""
    return max(r.gflops_median / roof(run, threads, arithmetic_intensity(r))
               for r in points.where(kernel=kernel).records)


def instruction_bound(points: Table, run, threads: int = 1) -> list:
    """[(kernel, best roof share)] for the kernels under INSTRUCTION_BOUND_SHARE of their roof everywhere."""
    shares = [(kernel, best_roof_share(points, run, kernel, threads)) for kernel in points.values("kernel")]
    return [(kernel, share) for kernel, share in shares if share < INSTRUCTION_BOUND_SHARE]


# --- decoding -----------------------------------------------------------------------------------

def moved_gbs(r: Record) -> float:
    """The compulsory traffic's rate, GB/s: bytes_moved per call over the median time."""
    return r.bytes_moved_median / (r.time_ms_median * 1e6)  # bytes per ms -> GB/s


def triad_pct(run, r: Record) -> float | None:
    """moved_gbs as a percentage of the triad bandwidth measured on the point's thread count."""
    triad = run.triad_gbs(r.threads)
    return 100 * moved_gbs(r) / triad if triad else None
