"""Memory derived from the table: one head's n x n score matrix and what fits where, the measured
scratch and RSS curves of the naive and tiled kernels with their fits and extrapolations, and what
a long context would need."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import analysis
from ..fit import LogLogFit, PowerSumFit, loglog_fit_tail, power_sum_fit
from ..load.results import Table

EXTRAPOLATE_N = 128_000  # a long-context length: one head's fp32 score matrix is 65.5 GB


# --- the score matrix ---------------------------------------------------------------------------

def score_matrix_bytes(n):
    """One head's n x n score matrix in fp32, what a naive kernel must hold: 4 n² bytes (n a number
    or an array)."""
    return 4.0 * n**2


def largest_n_fitting(nbytes: float) -> float:
    """The largest n whose score matrix fits in nbytes: score_matrix_bytes inverted."""
    return math.sqrt(nbytes / 4)


def cache_fit_n(run, level: int) -> float | None:
    """The largest n whose score matrix fits in this cache level."""
    size = run.cache_bytes(level)
    return largest_n_fitting(size) if size else None


def fits_in_cache(run, nbytes: float, level: int) -> bool:
    """True when nbytes fit in this cache level (False when the run does not say how large it is)."""
    size = run.cache_bytes(level)
    return bool(size) and nbytes < size


# --- measured curves ----------------------------------------------------------------------------


def memory_d(table: Table) -> int | None:
    """The head dim whose tiled kernels reach the longest measured length (the tiled-only points),
    then the one with the most lengths, then the one nearest 64."""
    measured = table.measured().where(causal=False, threads=1)

    def key(d):
        ns = measured.where(d=d, strategy="tiled").column("n")
        return (max(ns) if len(ns) else 0, len(set(ns)), -abs(math.log2(d / 64)))

    dims = measured.values("d")
    return max(dims, key=key) if dims else None


@dataclass(frozen=True)
class MemoryCurve:
    kernel: str
    measure: str  # scratch_bytes or rss_peak_bytes
    n: np.ndarray
    bytes: np.ndarray
    fit: LogLogFit | None  # over the three largest n: the asymptotic slope
    model: PowerSumFit | None  # scratch only: a n^2 + b n (naive) or a n + b (tiled), to extrapolate

    def extrapolated(self, n) -> float | None:
        """The model's bytes at length n, or None for a curve without one (RSS)."""
        return float(self.model.predict(n)) if self.model is not None else None


def memory_curves(table: Table, d: int) -> list:
    """Measured scratch and RSS against n of the dispatched SIMD naive and tiled kernels (and of
    the scalar pair when the SIMD ones are missing), one thread, not causal."""
    curves = []
    for strategy in ("naive", "tiled"):
        kernel = (analysis.simd_kernel(table, strategy)
                  or (f"{strategy}/scalar" if analysis.present(table, f"{strategy}/scalar") else None))
        if kernel is None:
            continue
        for measure in ("scratch_bytes_median", "rss_peak_bytes_median"):
            n, b = table.series(measure, kernel=kernel, d=d, threads=1, causal=False)
            if len(n):
                model = None
                if measure == "scratch_bytes_median":
                    model = power_sum_fit(n, b, (2, 1) if strategy == "naive" else (1, 0))
                curves.append(MemoryCurve(kernel, measure.replace("_median", ""), n, b, loglog_fit_tail(n, b), model))
    return curves


def curves_by_strategy(curves: list) -> dict:
    """{(strategy, measure): curve}, e.g. ("naive", "scratch_bytes"): the naive kernel's scratch."""
    return {(c.kernel.split("/")[0], c.measure): c for c in curves}


def measured_lengths(curves: list) -> list:
    """Every n any of the curves measured, ascending."""
    return sorted({int(v) for c in curves for v in c.n})


# --- long context -------------------------------------------------------------------------------

@dataclass(frozen=True)
class LongContext:
    """One head at a long length against this machine: the score matrix a naive kernel would hold,
    the lengths its RAM and the naive memory budget allow, and the tiled scratch extrapolated."""

    n: int
    score_matrix_bytes: float
    ram_share: float | None  # score matrix / RAM
    longest_in_ram: float | None  # the largest n whose score matrix fits in RAM at all
    longest_in_budget: float | None  # the largest n the naive kernels accept (their memory budget)
    tiled_scratch_bytes: float | None  # the tiled scratch model at n
    tiled_saving: float | None  # score matrix / tiled scratch


def long_context(run, curves: list, n: int = EXTRAPOLATE_N) -> LongContext:
    """LongContext at n from this run's RAM and budget and its memory_curves."""
    scores = score_matrix_bytes(n)
    ram, budget = run.memory_bytes, run.naive_memory_budget_bytes
    tiled = curves_by_strategy(curves).get(("tiled", "scratch_bytes"))
    tiled_bytes = tiled.extrapolated(n) if tiled is not None else None
    return LongContext(n, scores, scores / ram if ram else None, largest_n_fitting(ram) if ram else None,
                       largest_n_fitting(budget) if budget else None, tiled_bytes,
                       scores / tiled_bytes if tiled_bytes else None)
