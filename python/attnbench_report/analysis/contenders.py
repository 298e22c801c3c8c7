"""The contenders' numbers: per window and point, every contender's GFLOP/s, attnbench's best, the
strongest peer and the lead of one over the other. Roles come from each window's description of its
contenders (`contender <name>` in its JSON context), never from kernel names. A ratio is only ever
taken between two contenders of the same window, whose repetitions were interleaved, and at a
compute-bound point it compares each side's fastest repetition (`comparable`)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..load.results import Record
from ..load.windows import Window

OURS, BASELINE, PEER = "attnbench", "baseline", "peer"


def fastest_gflops(record: Record) -> float | None:
    """GFLOP/s of a compute-bound point's fastest repetition: a shared host's noise only adds time to a
    call whose FMAs set it, so the fastest repetition is the measurement. None at a decode point (fewer
    query rows than keys: memory-bound, where a lucky repetition says little) or where the JSON has no
    fastest repetition."""
    if record.q_len < record.kv_len or math.isnan(record.time_ms_min) or record.time_ms_min <= 0:
        return None
    if math.isnan(record.flops_per_call_median):
        return None
    return record.flops_per_call_median / (record.time_ms_min * 1e6)


def comparable(ours: Record, peer: Record) -> tuple:
    """(attnbench's GFLOP/s, the peer's, "fastest" or "median"): both sides' fastest repetitions where
    both have one, else both medians, never one of each."""
    a, b = fastest_gflops(ours), fastest_gflops(peer)
    if a is not None and b is not None:
        return a, b, "fastest"
    return ours.gflops_median, peer.gflops_median, "median"


def speed(record: Record) -> float:
    """The GFLOP/s a comparison reads: `fastest_gflops` where there is one, else the median."""
    fastest = fastest_gflops(record)
    return record.gflops_median if fastest is None else fastest


@dataclass(frozen=True)
class Lead:
    """attnbench's best against the strongest peer at one point of one window."""

    window: str
    n: int
    d: int
    threads: int
    causal: bool
    ours: Record  # attnbench's fastest contender there
    peer: Record  # the fastest peer there
    baseline: Record | None

    @property
    def ratio(self) -> float:
        """attnbench's best over the strongest peer, from `comparable` (fastest repetitions at a
        compute-bound point)."""
        ours, peer, _ = comparable(self.ours, self.peer)
        return ours / peer

    @property
    def basis(self) -> str:
        return comparable(self.ours, self.peer)[2]

    @property
    def baseline_over_peer(self) -> float | None:
        return self.baseline.gflops_median / self.peer.gflops_median if self.baseline else None


def points(window: Window) -> list:
    """The window's (n, d, threads, causal) points, sorted."""
    return sorted({(r.n, r.d, r.threads, r.causal) for r in window.table})


def at(window: Window, point: tuple) -> list:
    n, d, t, causal = point
    return window.table.where(n=n, d=d, threads=t, causal=causal).records


def best(records: list, window: Window, role: str) -> Record | None:
    """The fastest measured record of a role among `records` (by the statistic a ratio reads)."""
    measured = [r for r in records if not r.skipped and window.role(r.kernel) == role]
    return max(measured, key=speed, default=None)


def leads(window: Window) -> list:
    """Every point where both attnbench and at least one peer were measured."""
    out = []
    for point in points(window):
        records = at(window, point)
        ours, peer = best(records, window, OURS), best(records, window, PEER)
        if ours and peer:
            out.append(Lead(window.name, *point, ours, peer, best(records, window, BASELINE)))
    return out


def not_measured(window: Window) -> list:
    """Records that were not timed (missing, unsupported, failed, skipped), for the report to list."""
    return [r for r in window.table if r.skipped]


def contender_names(window: Window) -> list:
    """The window's contenders in report order: attnbench's, the baseline, then the peers."""
    order = {OURS: 0, BASELINE: 1, PEER: 2}
    seen = {r.kernel for r in window.table}
    return sorted(seen, key=lambda k: (order.get(window.role(k), 3), k))


def strongest_peer_overall(window: Window) -> tuple | None:
    """(peer name, how many points it is the strongest peer at) for the most frequent strongest peer."""
    counts = {}
    for lead in leads(window):
        counts[lead.peer.kernel] = counts.get(lead.peer.kernel, 0) + 1
    return max(counts.items(), key=lambda kv: kv[1]) if counts else None
