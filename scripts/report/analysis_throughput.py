"""Throughput derived from the table against the machine's measured ceilings: each kernel's best
GFLOP/s, arithmetic intensity, the roofline's ridge and roof."""
from __future__ import annotations

import math

from loader import Record, Table


def best_of_kernel(table: Table, kernel: str, threads: int) -> Record | None:
    rows = table.measured().where(kernel=kernel, threads=threads).records
    return max(rows, key=lambda r: r.gflops_median) if rows else None


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
