"""The backward pass, derived from the table: its points (`pass:backward` and the training step
`pass:forward+backward`, square one-head, not causal), its time exponents, GFLOP/s and share of the
FMA peak, thread scaling, naive against tiled in time and scratch, the issue's targets, and where
its time goes against the forward's: backward time over forward time at the same point, against the
2.5 its FLOP count predicts. The text (narrative_backward) and the figures (fig_backward) read these."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import analysis
from ..load.results import Record, Table

# FlashAttention's count, the benchmark's: the backward makes five products of the forward's size
# (S = Q Kᵀ again, dP = dO Vᵀ, dV = Pᵀ dO, dQ = dS K, dK = dSᵀ Q) against its two.
BACKWARD_FLOP_FACTOR = 2.5
STEP_FLOP_FACTOR = 3.5  # a training step: forward, then backward
# Issue 14's targets for tiled/simd's backward, one thread, at n = 1024 and 4096: share of the FMA
# peak per head dim, and two threads over one.
TARGET_LENGTHS = (1024, 4096)
TARGET_PCT_PEAK = {64: 45.0, 128: 55.0}
TARGET_THREAD_SPEEDUP = 1.8


def backward(table: Table) -> Table:
    """The backward pass's square one-head points, not causal."""
    return table.matrix().where(pass_="backward", causal=False)


def training_step(table: Table) -> Table:
    """The forward+backward points, as backward() selects them."""
    return table.matrix().where(pass_="forward+backward", causal=False)


def measured(table: Table) -> bool:
    """Does the run have any measured backward point?"""
    return len(backward(table).measured()) > 0


def flops_per_score(d: int) -> float:
    """Multiply-add FLOPs per query-key score the backward is credited with: 2.5 × the forward's 4d."""
    return BACKWARD_FLOP_FACTOR * 4 * d


# --- against the forward --------------------------------------------------------------------------

@dataclass(frozen=True)
class TimeRatio:
    """A backward point and the forward point of the same kernel, n, d and threads."""

    forward: Record
    backward: Record
    ratio: float  # backward time / forward time
    step: Record | None  # the forward+backward point there, if measured

    @property
    def rate_ratio(self) -> float:
        """Backward GFLOP/s over forward GFLOP/s: 2.5 / ratio (above 1: the backward does its FLOPs faster)."""
        return BACKWARD_FLOP_FACTOR / self.ratio

    @property
    def step_over_sum(self) -> float:
        """The training step's time over the forward's plus the backward's, timed apart (NaN without it)."""
        if self.step is None:
            return math.nan
        return self.step.time_ms_median / (self.forward.time_ms_median + self.backward.time_ms_median)


def time_ratios(table: Table) -> list:
    """A TimeRatio for every measured backward point with a measured forward twin, in table order."""
    forward = table.matrix().forward().measured().where(causal=False)
    steps = training_step(table).measured()
    out = []
    for b in backward(table).measured().sorted():
        key = dict(run=b.run, kernel=b.kernel, n=b.n, d=b.d, threads=b.threads)
        f = forward.one(**key)
        if f is not None:
            out.append(TimeRatio(f, b, b.time_ms_median / f.time_ms_median, steps.one(**key)))
    return out


@dataclass(frozen=True)
class RatioSpread:
    """One kernel's backward-over-forward time ratios on one thread count, over every n and d."""

    kernel: str
    threads: int
    count: int
    median: float
    lowest: TimeRatio
    highest: TimeRatio
    noise: float  # the median over its points of the larger CV of the two times divided

    @property
    def per_flop(self) -> float:
        """The median ratio over the FLOP count's 2.5: above 1, each backward FLOP costs more time."""
        return self.median / BACKWARD_FLOP_FACTOR

    @property
    def verdict(self) -> str:
        """"longer" or "shorter" than the FLOP count predicts, or "within noise" (the report's one rule:
        a relative difference smaller than the noise is none)."""
        if analysis.within_noise(self.per_flop - 1, self.noise):
            return "within noise"
        return "longer" if self.per_flop > 1 else "shorter"


def ratio_spreads(ratios: list) -> list:
    """A RatioSpread per (kernel, threads) of `ratios` (time_ratios), kernels in the report's order."""
    groups = {}
    for r in ratios:
        groups.setdefault((r.backward.kernel, r.backward.threads), []).append(r)
    out = []
    for (kernel, threads), rs in groups.items():
        values = [r.ratio for r in rs]
        noise = float(np.median([analysis.larger_cv(r.forward, r.backward) for r in rs]))
        out.append(RatioSpread(kernel, threads, len(rs), float(np.median(values)),
                               min(rs, key=lambda r: r.ratio), max(rs, key=lambda r: r.ratio), noise))
    order = Table([r.backward for r in ratios]).values("kernel")
    return sorted(out, key=lambda s: (order.index(s.kernel), s.threads))


# --- naive against tiled ----------------------------------------------------------------------------

@dataclass(frozen=True)
class ScratchPair:
    """The backward's scratch of a tiled and a naive kernel at the largest n both measured, one thread."""

    tiled: Record
    naive: Record

    @property
    def p_and_ds_bytes(self) -> float:
        """What a naive backward must hold: P and dS, 2 × 4n² bytes."""
        return 8.0 * self.naive.n ** 2

    @property
    def ratio(self) -> float:
        return self.naive.scratch_bytes_median / self.tiled.scratch_bytes_median


def scratch_pairs(table: Table) -> list:
    """A ScratchPair per crossover pair (SIMD, scalar, auto-vectorised) and head dim."""
    points = backward(table).measured().where(threads=1)
    out = []
    for _, tiled, naive in analysis.crossover_pairs(points):
        if not tiled.startswith("tiled/") or not naive.startswith("naive/"):
            continue
        for d in points.values("d"):
            n = analysis.largest_common_n(points, [tiled, naive], d, 1)
            if n is not None:
                out.append(ScratchPair(points.one(kernel=tiled, n=n, d=d), points.one(kernel=naive, n=n, d=d)))
    return out


def scratch_growth(table: Table, kernel: str, d: int):
    """The log-log slope of one kernel's backward scratch against n (one thread), or None."""
    from ..fit import loglog_fit

    n, b = backward(table).series("scratch_bytes_median", kernel=kernel, d=d, threads=1)
    return loglog_fit(n, b)


# --- targets ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Target:
    """One of the backward's goals at one point: what was measured and whether it meets it."""

    what: str  # "share of peak" or "two threads over one"
    d: int
    n: int
    measured: float  # percent, or a speedup
    wanted: float

    @property
    def met(self) -> bool:
        return self.measured >= self.wanted


def targets(table: Table) -> tuple:
    """(the dispatched tiled SIMD kernel, [Target]) at the target lengths and head dims it was
    measured at; (None, []) when the run has no backward point of a tiled SIMD kernel."""
    points = backward(table).measured()
    kernel = analysis.simd_kernel(points, "tiled")
    if kernel is None:
        return None, []
    out = []
    for d, wanted in TARGET_PCT_PEAK.items():
        for n in TARGET_LENGTHS:
            one = points.one(kernel=kernel, n=n, d=d, threads=1)
            if one is None:
                continue
            if math.isfinite(one.pct_peak_median):
                out.append(Target("share of peak", d, n, one.pct_peak_median, wanted))
            two = points.one(kernel=kernel, n=n, d=d, threads=2)
            if two is not None:
                out.append(Target("two threads over one", d, n, one.time_ms_median / two.time_ms_median,
                                  TARGET_THREAD_SPEEDUP))
    return kernel, out
