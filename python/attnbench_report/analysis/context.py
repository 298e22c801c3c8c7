"""The long-context window's numbers (load/context.py): per thread count, the windowed and the full
causal points by n, the time per visible pair each mask costs (fitted over its points), the n from
which the window halves the time, and the spread of the windowed time per row. The report's section
and figure read these; every number comes from the window's JSON."""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass


def causal_pairs(n: int) -> float:
    """Visible pairs of one causal head of n rows over n keys: n (n + 1) / 2."""
    return n * (n + 1) / 2


def window_pairs(n: int, w: int) -> float:
    """Visible pairs under a causal window of w keys: every row its last min(w, i + 1) keys."""
    if n <= w:
        return causal_pairs(n)
    return n * w - w * (w - 1) / 2


@dataclass
class Curve:
    """One thread count's points: windowed and full causal by n, their seconds per visible pair (the
    median over their points of time / pairs) and the window w."""

    threads: int
    window: int
    windowed: dict  # n -> ContextPoint
    full: dict  # n -> ContextPoint
    capped: dict  # n -> ContextPoint: full causal, soft-capped
    window_s_per_pair: float
    full_s_per_pair: float
    tensors: dict = None  # n -> ContextPoint: the window given as a boolean mask tensor

    def predicted_full_ms(self, n: int) -> float:
        """The full causal call at n predicted from the measured ones: its pairs at their time per pair."""
        return causal_pairs(n) * self.full_s_per_pair * 1e3

    def half_time_n(self) -> float:
        """The n from which the windowed call takes at most half the full causal one's time, from the two
        fitted times per pair (NaN without both): the smallest n with full(n) >= 2 window(n)."""
        if not (self.window_s_per_pair > 0 and self.full_s_per_pair > 0):
            return math.nan
        n = self.window
        while causal_pairs(n) * self.full_s_per_pair < 2 * window_pairs(n, self.window) * self.window_s_per_pair:
            n += max(1, self.window // 64)
            if n > 1 << 40:
                return math.nan
        return n

    def flat_ns(self) -> list:
        """The windowed lengths from n = 2w on (where most rows see w keys), whose time per row should
        not grow."""
        return [n for n in self.windowed if n >= 2 * self.window]

    def row_spread(self) -> float:
        """Largest windowed time per row over the smallest, minus 1, over flat_ns(); NaN with fewer than
        two such points."""
        rows = [self.windowed[n].value("us_per_row") for n in self.flat_ns()]
        rows = [r for r in rows if math.isfinite(r) and r > 0]
        return max(rows) / min(rows) - 1 if len(rows) >= 2 else math.nan

    def pair_spread(self) -> float:
        """Largest windowed time per visible pair over the smallest, minus 1, over flat_ns(): the
        kernel's own flatness, whatever the rows' average keys (which grow with n towards w)."""
        per_pair = [_time_s(self.windowed[n]) / window_pairs(n, self.window) for n in self.flat_ns()]
        return max(per_pair) / min(per_pair) - 1 if len(per_pair) >= 2 else math.nan

    def keys_per_row(self, n: int) -> float:
        """The average keys a row sees under the window at n."""
        return window_pairs(n, self.window) / n


def _time_s(p) -> float:
    """A point's call time (s): its fastest repetition where the JSON has one (compute-bound: noise only
    adds time), else its median."""
    us = p.fastest_us if math.isfinite(p.fastest_us) else p.value("time_us")
    return us * 1e-6


def curves(points: list) -> list:
    """One Curve per thread count, fewest threads first (measured points only)."""
    out = []
    for threads in sorted({p.threads for p in points}):
        mine = [p for p in points if p.threads == threads and not p.skipped]
        plain = [p for p in sorted(mine, key=lambda p: p.n) if not p.tensor]
        windowed = {p.n: p for p in plain if not p.full and not p.softcap}
        full = {p.n: p for p in plain if p.full and not p.softcap}
        capped = {p.n: p for p in plain if p.full and p.softcap}
        tensors = {p.n: p for p in mine if p.tensor}
        if not windowed:
            continue
        w = next(iter(windowed.values())).window
        per_pair_w = statistics.median(_time_s(p) / window_pairs(n, w) for n, p in windowed.items())
        per_pair_f = (statistics.median(_time_s(p) / causal_pairs(n) for n, p in full.items()) if full
                      else math.nan)
        out.append(Curve(threads, w, windowed, full, capped, per_pair_w, per_pair_f, tensors))
    return out


def gflops(p) -> float:
    """A point's GFLOP/s (4 d FLOPs per visible pair) at its fastest repetition where it has one."""
    return 4.0 * p.value("pairs") * p.d / _time_s(p) / 1e9
