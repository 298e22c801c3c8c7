"""Least-squares fits on log-log axes: y = C * x^slope, fitted as ln y = intercept + slope * ln x.

Used for the exponent of time against n (2 for attention's n^2 scores once fixed costs are
amortised) and for the slopes of memory against n (2 for a materialised score matrix, 1 for a
kernel whose scratch is packed K and V).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LogLogFit:
    slope: float
    intercept: float  # natural log of the value at x = 1
    r2: float
    count: int
    x_min: float
    x_max: float

    def predict(self, x):
        """The fitted value at x (a number or an array)."""
        return np.exp(self.intercept + self.slope * np.log(np.asarray(x, dtype=float)))


def loglog_fit(x, y) -> LogLogFit | None:
    """Ordinary least squares of ln y on ln x over the positive, finite points.

    None when fewer than two distinct x remain. R^2 is 1 - SS_res / SS_tot in log space (1 when
    every point is on the line, including the two-point case, which says nothing of the fit).
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    x, y = x[ok], y[ok]
    if len(np.unique(x)) < 2:
        return None
    lx, ly = np.log(x), np.log(y)
    design = np.column_stack([np.ones_like(lx), lx])
    (intercept, slope), *_ = np.linalg.lstsq(design, ly, rcond=None)
    residual = ly - (intercept + slope * lx)
    ss_res = float(np.sum(residual**2))
    ss_tot = float(np.sum((ly - ly.mean()) ** 2))
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else (1.0 if ss_res == 0 else 0.0)
    return LogLogFit(slope=float(slope), intercept=float(intercept), r2=r2, count=int(len(x)),
                     x_min=float(x.min()), x_max=float(x.max()))


def loglog_fit_tail(x, y, points: int = 3) -> LogLogFit | None:
    """The fit over the `points` largest x only: the asymptotic slope, once small-n costs fade."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    order = np.argsort(x)
    keep = order[-points:] if len(order) > points else order
    return loglog_fit(x[keep], y[keep])


@dataclass(frozen=True)
class PowerSumFit:
    """y = sum of coefficient * x^power over the powers kept (every coefficient >= 0)."""

    powers: tuple
    coefficients: tuple

    def predict(self, x):
        x = np.asarray(x, dtype=float)
        return sum(c * x**p for c, p in zip(self.coefficients, self.powers))

    def describe(self, unit: str = "") -> str:
        terms = []
        for c, p in zip(self.coefficients, self.powers):
            term = f"{c:.3g}" + ("" if p == 0 else "·n" if p == 1 else f"·n^{p:g}")
            terms.append(term)
        return " + ".join(terms) + (f" {unit}" if unit else "")


def power_sum_fit(x, y, powers=(2, 1)) -> PowerSumFit | None:
    """Least squares of y on x^p for each power p (e.g. 4 n^2 score bytes + packed K, V per key),
    dropping a power whose coefficient comes out negative and fitting again, so the model stays
    physical when it is extrapolated. None with fewer points than terms."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    powers = tuple(powers)
    while powers:
        if len(np.unique(x)) < len(powers):
            return None
        design = np.column_stack([x**p for p in powers])
        coefficients, *_ = np.linalg.lstsq(design, y, rcond=None)
        if (coefficients >= 0).all():
            return PowerSumFit(powers, tuple(float(c) for c in coefficients))
        powers = tuple(p for p, c in zip(powers, coefficients) if c >= 0)
    return None
