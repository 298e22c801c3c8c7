"""The scaling window (`attnbench_bench --scaling`, scaling.json next to the results): 1 thread
against all in rounds of calls (bench/scaling_window.hpp), and the report's section on it. Every
number comes from the file; a point's figures are the medians over its repetitions of the
per-repetition medians over rounds that the benchmark writes."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from . import formatting as fmt
from .document import Document, Paragraph, Table

FILE_NAME = "scaling.json"
NAME = re.compile(r"^scaling/(?P<kernel>.+)/n:(?P<n>\d+)/d:(?P<d>\d+)/pass:(?P<pass_>forward|backward)"
                  r"/threads:(?P<threads>\d+)(/|$)")
TARGET = 1.8  # what the thread-scaling verdicts compare against: 90% of two threads
NOISY_CV = 0.10  # a speedup whose repetitions vary more than this gets no verdict: within noise
# A point whose threads, pinned one to a core, got under this share of T cores' worth of FMA
# throughput from the host (the `cores` counter: the lower of the readings before and after a
# repetition's rounds, median over repetitions) measured the host, not the kernel: no verdict.
# Two threads read 1.85-2.0 cores on the Zen 5 guest; the scaling window's speedups were
# 1.00-1.05x for half a minute while the host gave its two virtual CPUs one core's worth. (On a
# machine with SMT, T counting hardware threads, two siblings share one core's FMA units and read
# about T / 2: every point there would go unread. The window is meant for T whole cores.)
CORES_GIVEN = 0.75


@dataclass(frozen=True)
class ScalingPoint:
    kernel: str
    pass_: str
    n: int
    d: int
    threads: int
    speedup: float          # over the cores' mean 1-thread speed
    speedup_fastest: float  # over the round's fastest 1-thread call
    speedup_cv: float       # of the speedup over repetitions
    gflops_1: float
    gflops_all: float
    pct_peak_1: float
    rounds: int
    pinned: bool
    cores: float            # the host's cores as the threads got them; nan: not read (older JSON, unpinned)


@dataclass(frozen=True)
class ScalingWindow:
    path: Path
    context: dict
    points: list
    errors: dict  # point name -> the error it recorded


def load_file(path: Path) -> ScalingWindow:
    """Reads scaling.json. Raises ValueError naming the file and what is wrong with it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        benchmarks = data["benchmarks"]
        context = data.get("context", {})
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise ValueError(f"{path}: not a Google Benchmark JSON file ({error})") from None
    medians, cvs, errors = {}, {}, {}
    for b in benchmarks:
        name = b.get("run_name", b.get("name", ""))
        if not NAME.match(name):
            raise ValueError(f"{path}: {name!r} is not a scaling point's name "
                             "(scaling/<kernel>/n:N/d:D/pass:<forward|backward>/threads:T)")
        if b.get("error_occurred"):
            errors[name] = b.get("error_message", "error")
        elif b.get("aggregate_name") == "median":
            medians[name] = b
        elif b.get("aggregate_name") == "cv":
            cvs[name] = b
    points = []
    for name, b in medians.items():
        m = NAME.match(name)
        try:
            points.append(ScalingPoint(
                kernel=m["kernel"], pass_=m["pass_"], n=int(m["n"]), d=int(m["d"]), threads=int(m["threads"]),
                speedup=float(b["speedup"]), speedup_fastest=float(b["speedup_fastest"]),
                speedup_cv=float(cvs.get(name, {}).get("speedup", float("nan"))),
                gflops_1=float(b["gflops_1"]), gflops_all=float(b["gflops_T"]),
                pct_peak_1=float(b["pct_peak_1"]), rounds=int(b["rounds"]), pinned=b["pinned"] >= 0.5,
                cores=float(b.get("cores", float("nan")))))
        except KeyError as missing:
            raise ValueError(f"{path}: {name} has no counter {missing}") from None
    points.sort(key=lambda p: (p.kernel, p.pass_, p.d, p.n))
    return ScalingWindow(path, context, points, errors)


def load_next_to(results_json: Path) -> ScalingWindow | None:
    """The scaling window next to a run's results.json, or None when there is no scaling.json."""
    path = results_json.parent / FILE_NAME
    return load_file(path) if path.is_file() else None


def noisy(point: ScalingPoint) -> bool:
    """Whether the point's speedup varies over its repetitions by more than NOISY_CV (or has one only)."""
    return not point.speedup_cv <= NOISY_CV


def cores_shared(point: ScalingPoint) -> bool:
    """Whether the host gave the point's threads under CORES_GIVEN of their cores (False when not read)."""
    return point.cores < CORES_GIVEN * point.threads


def unread(point: ScalingPoint) -> bool:
    """Whether the point gets no verdict: noisy, or measured while the host shared its cores."""
    return noisy(point) or cores_shared(point)


def below_target(window: ScalingWindow) -> list:
    """The points whose speedup is under TARGET, by the statistic the verdict uses (unread points aside)."""
    return [p for p in window.points if p.speedup < TARGET and not unread(p)]


def section(doc: Document, window: ScalingWindow) -> None:
    """The section "Thread scaling in rounds": one row per point, and the verdict against TARGET."""
    s = doc.section("Thread scaling in rounds")
    if not window.points:
        s.add(Paragraph(f"`{FILE_NAME}` holds no measured point"
                        + (f" ({len(window.errors)} recorded errors)." if window.errors else ".")))
        return
    threads = window.points[0].threads
    rows = [[fmt.code(p.kernel), p.pass_, str(p.d), fmt.count(p.n), f"{p.gflops_1:.1f}", fmt.pct(p.pct_peak_1, 0),
             f"{p.gflops_all:.1f}", fmt.ratio(p.speedup), fmt.ratio(p.speedup_fastest),
             fmt.pct(100 * p.speedup_cv, 0) if p.speedup_cv == p.speedup_cv else "n/a", str(p.rounds),
             f"{p.cores:.2f}" if p.cores == p.cores else "n/a"]
            for p in window.points]
    s.add(Table(["kernel", "pass", "d", "n", "GFLOP/s, 1 thread", "of peak", f"GFLOP/s, {threads} threads",
                 "speedup", "over the fastest core", "cv", "rounds", "host's cores"], rows,
                caption=f"From `{FILE_NAME}` ({window.context.get('cpu_model', 'unknown CPU')}): medians over "
                        "repetitions of each repetition's median over rounds."))
    pinned = all(p.pinned for p in window.points)
    low, within_noise = below_target(window), [p for p in window.points if noisy(p)]
    shared = [p for p in window.points if cores_shared(p) and not noisy(p)]
    read = len(window.points) - len(within_noise) - len(shared)
    verdict = ("No point could be read." if read == 0 else
               f"Every point read runs {threads} threads at least {fmt.ratio(TARGET)} faster than one."
               if not low else
               f"{len(low)} of the {read} points read run {threads} threads less than {fmt.ratio(TARGET)} faster "
               "than one: " + ", ".join(f"{p.kernel} {p.pass_} d = {p.d}, n = {fmt.count(p.n)} "
                                         f"({fmt.ratio(p.speedup)})" for p in low) + ".")
    if within_noise:
        verdict += (f" Within noise, so not read (the speedup's cv over repetitions above {fmt.pct(100 * NOISY_CV, 0)}): "
                    + ", ".join(f"{p.kernel} {p.pass_} d = {p.d}, n = {fmt.count(p.n)}" for p in within_noise) + ".")
    if shared:
        verdict += (f" Not read{' either' if within_noise else ''}, the host having given the {threads} threads "
                    f"under {CORES_GIVEN * threads:g} cores' worth of FMA throughput while they ran: "
                    + ", ".join(f"{p.kernel} {p.pass_} d = {p.d}, n = {fmt.count(p.n)} "
                                f"({p.cores:.2f} cores, {fmt.ratio(p.speedup)})" for p in shared) + ".")
    s.add(Paragraph(
        "Each round times the 1-thread call once on each core, "
        + ("pinned to it, " if pinned else "where the OS put it (pinning was unavailable), ")
        + f"and the {threads}-thread call before or after them by turns; the speedup is the median over rounds "
        "of the all-thread call's speed over the 1-thread calls' mean speed, both sides milliseconds apart, where "
        "repetitions interleaved at random are seconds apart on a host whose neighbours move a point by 30%. "
        "Over the fastest core is the same against the round's fastest 1-thread call: where it is well below the "
        "speedup, the cores ran at different speeds, which a 1-thread call on one core alone would charge to the "
        "kernel. The host's cores: before and after each repetition's rounds, register-only FMA chains on "
        f"{threads} threads pinned one to a core against each alone, the lower reading (median over "
        "repetitions); a shared host may give a guest's virtual CPUs one core's worth between them for a while, "
        f"and then no kernel scales. The verdicts read the speedup. {verdict}"))
