"""The verdicts a run's report states, as data, so that runs can be checked against each other: does a
second run of the same study reach the same conclusions? Each verdict is read exactly as the
single-run report reads it (the same functions, statistic and noise rule):

- the fastest kernel of each (n, d, threads) cell of the matrix (analysis.winners);
- where tiled overtakes naive, per pair, d and threads (analysis.crossover);
- whether each SIMD tiled kernel's GFLOP/s at each n stays within 10% of its n = 2048 figure
  (analysis_throughput.tiled_flatness);
  these three read each point's fastest repetition (analysis.best_ms; the median in runs without
  minimums);
- whether all threads run at least 1.8x one in the scaling window (scaling.py, the median over
  repetitions of each repetition's median over rounds);
- who leads at each point of the contenders' windows: attnbench's best or the strongest peer
  (analysis_contenders.leads, medians of interleaved repetitions).

A verdict carries whether its own run marks it within noise (the matrix's rule, analysis.comparison_noise:
a difference smaller than how far either side's median sits above its minimum, or the run's typical
such gap; the contenders' windows: smaller than the larger CV of the two sides; the scaling window's:
the speedup's CV over 10%, or the host having given its threads under scaling.CORES_GIVEN of their cores); two runs
that disagree on a verdict one of them marks within noise have not contradicted each other."""
from __future__ import annotations

import math
from dataclasses import dataclass

from . import analysis
from .analysis import contenders as ac
from .analysis import throughput as analysis_throughput
from . import formatting as fmt
from .load import windows as load_windows_of
from . import scaling
from .load.results import Run, Table

WINNER, CROSSOVER, FLAT, SCALING, LEAD = ("fastest kernel", "tiled overtakes naive", "tiled flat in n",
                                          "two threads over one", "lead over the peers")
TOPICS = (WINNER, CROSSOVER, FLAT, SCALING, LEAD)
STATISTIC = {
    WINNER: "fastest repetition's time (median in runs without one)",
    CROSSOVER: "fastest repetition's time (median in runs without one)",
    FLAT: "fastest repetition's GFLOP/s (median in runs without one)",
    SCALING: "median over repetitions of the speedup over rounds",
    LEAD: "median GFLOP/s over interleaved repetitions",
}


@dataclass(frozen=True)
class Verdict:
    topic: str
    subject: str  # which cell, pair or point: "n = 4,096, d = 64, 1 thread"
    outcome: str  # what two runs must agree on: a kernel's name, "within 10%", a bracket of n
    detail: str  # the numbers behind it, for the reader
    noise: bool  # the run itself marks the verdict within noise

    @property
    def key(self) -> tuple:
        return self.topic, self.subject


def _threads(t: int) -> str:
    return f"{t} thread{'s' if t > 1 else ''}"


def winners(matrix: Table) -> list:
    out = []
    floor = analysis.noise_floor(matrix)
    for t in analysis.thread_counts(matrix):
        for (n, d), ranked in sorted(analysis.winners(matrix, t).items()):
            lead = analysis.lead(ranked, floor)
            if lead is None:
                continue
            out.append(Verdict(WINNER, f"n = {fmt.count(n)}, d = {d}, {_threads(t)}", lead.winner.kernel,
                               f"+{fmt.pct(100 * lead.margin)} over {lead.runner_up.kernel}",
                               lead.within_noise))
    return out


def _crossing_noise(c: analysis.Crossover) -> bool:
    """Is the crossover decided by a length whose lead is within noise: a length on either side of a
    change of sign, or (no change) the length where the two kernels are closest?"""
    a = [math.log(x) for x in c.advantage]
    around = {j for i in range(len(a) - 1) if (a[i] > 0) != (a[i + 1] > 0) for j in (i, i + 1)}
    if not around and a:
        around = {min(range(len(a)), key=lambda i: abs(a[i]))}
    return any(analysis.within_noise(c.advantage[i] - 1, c.noise[i]) for i in around)


def crossovers(matrix: Table) -> list:
    out = []
    for name, tiled, naive in analysis.crossover_pairs(matrix):
        for t in analysis.thread_counts(matrix):
            for d in matrix.values("d"):
                c = analysis.crossover(matrix, tiled, naive, d, t)
                if len(c.n) < 2:
                    continue
                if c.verdict == "overtakes":
                    outcome = f"between n = {fmt.count(c.n[c.index - 1])} and {fmt.count(c.n[c.index])}"
                elif c.verdict == "not past the largest n":
                    outcome = "faster at n = " + ", ".join(fmt.count(n) for n, a in zip(c.n, c.advantage) if a > 1)
                else:
                    outcome = c.verdict
                out.append(Verdict(CROSSOVER, f"{name} ({tiled} over {naive}), d = {d}, {_threads(t)}", outcome,
                                   c.sentence(), _crossing_noise(c)))
    return out


def flatness(matrix: Table) -> list:
    out = []
    tolerance = analysis_throughput.FLAT_TOLERANCE
    for f in analysis_throughput.tiled_flatness(matrix):
        for r in f.later:
            ratio = f.ratio(r)
            out.append(Verdict(FLAT, f"{f.kernel}, d = {f.d}, {_threads(f.threads)}, n = {fmt.count(r.n)}",
                               f"within {fmt.pct(100 * tolerance, 0)}" if ratio >= 1 - tolerance
                               else f"more than {fmt.pct(100 * tolerance, 0)} below",
                               f"{fmt.ratio(ratio)} its n = {fmt.count(analysis_throughput.FLAT_BASE_N)} GFLOP/s",
                               f.noisy(r)))
    return out


def thread_scaling(window: scaling.ScalingWindow | None) -> list:
    if window is None:
        return []
    return [Verdict(SCALING, f"{p.kernel} {p.pass_}, d = {p.d}, n = {fmt.count(p.n)}, {_threads(p.threads)}",
                    f"at least {fmt.ratio(scaling.TARGET)}" if p.speedup >= scaling.TARGET
                    else f"under {fmt.ratio(scaling.TARGET)}", fmt.ratio(p.speedup), scaling.unread(p))
            for p in window.points]


def contender_leads(windows: list) -> list:
    out = []
    for w in windows:
        for lead in ac.leads(w):
            ahead = "attnbench" if lead.ratio > 1 else lead.peer.kernel
            out.append(Verdict(LEAD, f"{w.name} window, n = {fmt.count(lead.n)}, d = {lead.d}, "
                                     f"{_threads(lead.threads)}" + (", causal" if lead.causal else ""),
                               f"{ahead} ahead", f"{lead.ours.kernel} {fmt.ratio(lead.ratio)} {lead.peer.kernel}",
                               analysis.within_noise(lead.ratio - 1, analysis.larger_cv(lead.ours, lead.peer))))
    return out


def of_run(table: Table, run: Run, windows: list | None = None,
           scaling_window: scaling.ScalingWindow | None = None) -> list:
    """Every verdict of one run (its forward matrix points, and the windows given)."""
    matrix = table.where(run=run.index).forward().matrix().measured()
    return (winners(matrix) + crossovers(matrix) + flatness(matrix) + thread_scaling(scaling_window)
            + contender_leads(windows or []))


def load_windows(run: Run) -> tuple:
    """The run's contenders' windows and scaling window, where it has them (a file that cannot be read
    is left out: raises nothing, the single-run report says what is wrong with it)."""
    try:
        windows = load_windows_of.load_windows(run)
    except (OSError, ValueError):
        windows = []
    try:
        window = scaling.load_next_to(run.path)
    except (OSError, ValueError):
        window = None
    return windows, window


@dataclass(frozen=True)
class Agreement:
    """One verdict across runs: the runs' verdicts (in run order), and how they compare."""

    verdicts: list

    @property
    def agree(self) -> bool:
        return len({v.outcome for v in self.verdicts}) == 1

    @property
    def excused(self) -> bool:
        """They differ, but a run marks its verdict within noise."""
        return not self.agree and any(v.noise for v in self.verdicts)


def agreements(per_run: list) -> list:
    """The verdicts every run states, in the first run's order, each with every run's."""
    keyed = [{v.key: v for v in verdicts} for verdicts in per_run]
    return [Agreement([k[v.key] for k in keyed]) for v in per_run[0] if all(v.key in k for k in keyed[1:])]
