"""Memory derived from the table: one head's n x n score matrix, what fits where, and the measured
scratch and RSS curves of the naive and tiled kernels with their fits and extrapolations."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import analysis
from fit import LogLogFit, PowerSumFit, loglog_fit_tail, power_sum_fit
from loader import Table

EXTRAPOLATE_N = 128_000  # a long-context length: one head's fp32 score matrix is 65.5 GB


def cache_fit_n(run, level: int) -> float | None:
    """The largest n whose fp32 score matrix (4 n^2 bytes) fits in this cache level."""
    size = run.cache_bytes(level)
    return math.sqrt(size / 4) if size else None


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
