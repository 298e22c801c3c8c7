"""The machine constants the cost model prices a point's operations with (model.py), as a run measured
them (bench/machine_constants.hpp): in the matrix window's JSON context, measured before its points;
where the matrix's repetitions were interleaved, again among its points (the `constants/` point's
repetitions in results.json, bench/constants_window.hpp); and, where the study ran it, in the constants
window next to it (`constants.json`), measured after the study's last window. A shared host can be slow
in the minute of one reading: each constant is taken from the fastest of them (Machine.number), as the
points are checked against their fastest repetition."""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from ..load.results import CONSTANTS_POINT, Run

MODEL_DIMS = (32, 64, 128, 256)  # the head dims the benchmark measures the phases at
FAST_SET_RATIO = 1.25  # a working set read this much faster than DRAM is still in a cache
SECOND_READING_FILE = "constants.json"  # the constants window (scripts/study.sh)
# The constants that are speeds: rates (per second) and costs (seconds, _COST); the read sweeps' set
# sizes (read_set_bytes_*) and the rest of a context are not.
_SPEED = re.compile(r"(exp_per_s|fma_flops|products_flops|pack_bytes_per_s|read_gbs|softmax_s_per_score|"
                    r"task_s_threads|call_start_s_threads)_")
_COST = re.compile(r"(softmax_s_per_score|task_s_threads|call_start_s_threads)_")


def is_speed(key: str) -> bool:
    return bool(_SPEED.match(key))


def _positive(value) -> float | None:
    try:
        value = float(value) if value is not None else None
    except (TypeError, ValueError):
        return None
    return value if value is not None and math.isfinite(value) and value > 0 else None


def _readings(benchmarks: list) -> list:
    """The constants of each successful reading (a `constants/` point's repetition) in a run's list."""
    return [{key: value for key, value in b.items() if is_speed(key)} for b in benchmarks
            if str(b.get("name", "")).startswith(CONSTANTS_POINT) and b.get("run_type", "iteration") != "aggregate"
            and not b.get("error_occurred")]


@dataclass(frozen=True)
class LaterReadings:
    """The readings of the constants taken after the context's: per constant the fastest (`values`, key ->
    value), how many the matrix took among its points, and whether the study's constants window added one."""

    values: dict = field(default_factory=dict)
    among_points: int = 0
    after: bool = False


def _fastest(readings: list) -> dict:
    out: dict = {}
    for reading in readings:
        for key, value in reading.items():
            value = _positive(value)
            if value is not None:
                kept = out.get(key)
                out[key] = value if kept is None else (min if _COST.match(key) else max)(kept, value)
    return out


def load_later_readings(run: Run) -> LaterReadings:
    """The constants measured after the context's reading: the matrix's readings among its points (in the
    run's own JSON) and the constants window's after the study's last window (`constants.json` next to the
    run's results, unless it was measured on another machine: host or CPU model differ). Raises ValueError
    naming `constants.json` when it is not that window's Google Benchmark JSON."""
    try:
        among = _readings(json.loads(run.path.read_text(encoding="utf-8")).get("benchmarks", []))
    except (OSError, json.JSONDecodeError, AttributeError):
        among = []  # the run's own file was read by the loader; a synthetic run may have none
    after: list = []
    path = run.path.parent / SECOND_READING_FILE
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            context, benchmarks = data["context"], data["benchmarks"]
        except (json.JSONDecodeError, KeyError, TypeError) as error:
            raise ValueError(f"{path}: not the constants window's Google Benchmark JSON ({error})") from None
        if all(context.get(key) == run.context.get(key) for key in ("host_name", "cpu_model")):
            after = _readings(benchmarks)
    return LaterReadings(_fastest(among + after), len(among), bool(after))


@dataclass(frozen=True)
class Machine:
    """The run's measured constants: its JSON context's, and where the run measured them again (`later`,
    load_later_readings), the fastest reading of each (`number`); None where the run did not measure one."""

    run: Run
    later: LaterReadings = field(default_factory=LaterReadings)

    def number(self, key: str) -> float | None:
        """The constant `key`, or another context entry: of the readings of a constant, the fastest
        (the higher rate, the lower cost in seconds: noise on a shared host only slows a reading); of a
        set size or any other entry, the context's."""
        first = _positive(self.run.context.get(key))
        if not is_speed(key):
            return first
        readings = [v for v in (first, self.later.values.get(key)) if v is not None]
        if not readings:
            return None
        return min(readings) if _COST.match(key) else max(readings)

    def gains(self) -> dict:
        """Per constant read more than once, how much faster its fastest later reading was than the
        context's (>= 1.0 when a later one was the faster: the rate's ratio, or the cost's inverse ratio)."""
        out = {}
        for key in self.run.context:
            first, second = _positive(self.run.context.get(key)), self.later.values.get(key)
            if is_speed(key) and first and second:
                out[key] = first / second if _COST.match(key) else second / first
        return out

    @property
    def measured(self) -> bool:
        """Did the run measure the constants (runs before the cost model did not)?"""
        return self.number("read_gbs_dram") is not None

    def _per_d(self, stem: str, isa: str, d: int, threads: int = 1) -> float | None:
        """The constant measured at d, or at the nearest head dim (in ratio) the run measured; on
        `threads` > 1, the one measured with that many threads at once (`_threads_<t>`), where the
        run has it, else the one-thread one."""
        keys = [f"{stem}_{isa}_d{{}}_threads_{threads}"] if threads > 1 else []
        for key in keys + [f"{stem}_{isa}_d{{}}"]:
            for measured in sorted(MODEL_DIMS, key=lambda m: abs(math.log(m / d))):
                value = self.number(key.format(measured))
                if value is not None:
                    return value
        return None

    def products_flops(self, isa: str, d: int, threads: int = 1) -> float | None:
        """FLOP/s of the tiled kernel's products alone, per thread while `threads` run them."""
        return self._per_d("products_flops", isa, d, threads)

    def softmax_seconds(self, isa: str, d: int, threads: int = 1) -> float | None:
        return self._per_d("softmax_s_per_score", isa, d, threads)

    def set_curve(self, stem: str) -> list:
        """(set bytes, value) of every constant `<stem><bytes>` the run measured, by set size."""
        return sorted((float(key[len(stem):]), self.number(key)) for key in self.run.context
                      if key.startswith(stem) and key[len(stem):].isdigit() and self.number(key))

    def pack_rate(self, isa: str, nbytes: float) -> float | None:
        """Bytes per second of the SIMD kernels' packing of K and V (read and written), one thread, for
        a call that packs `nbytes` (at_least's rule); None when the run did not measure it."""
        return at_least(self.set_curve(f"pack_bytes_per_s_{isa}_set_"), nbytes)

    def fma_flops(self, isa: str) -> float | None:
        return self.number(f"fma_flops_{'avx2+fma' if isa == 'avx2' else isa}")

    def widest_isa(self) -> str | None:
        """The widest SIMD ISA whose phases the run measured."""
        return next((isa for isa in ("avx512f", "avx2", "sse4.2")
                     if self.number(f"exp_per_s_{isa}") is not None), None)

    def beyond(self, nbytes: float, level: int) -> bool:
        """Is a working set of `nbytes` larger than the cache at `level` the CPU reports?"""
        size = self.run.cache_bytes(level)
        return bool(size) and nbytes > size

    def level(self, nbytes: float) -> str:
        """The cache level a working set of `nbytes` fits in, by the sizes the CPU reports."""
        for name, level in (("l1", 1), ("l2", 2), ("l3", 3)):
            size = self.run.cache_bytes(level)
            if size and nbytes <= size:
                return name
        return "dram"

    def read_curve(self) -> list:
        """(working-set bytes, one-thread GB/s) of every read sweep the run measured, by set size: the
        L1 and L2 sets, the curve beyond L2 (`read_gbs_set_<bytes>`) and the DRAM set."""
        points = []
        for level in ("l1", "l2", "l3", "dram"):
            size, gbs = self.number(f"read_set_bytes_{level}"), self.number(f"read_gbs_{level}")
            if size and gbs:
                points.append((size, gbs))
        return sorted(points + self.set_curve("read_gbs_set_"))

    def read_gbs(self, nbytes: float, threads: int) -> float | None:
        """Read bandwidth of `threads` threads together, each reading a working set of `nbytes`: one
        thread's is that of the smallest measured set at least as large (the largest set's beyond them
        all). On several, the private L1 and L2 add up per core; beyond L2 it is the curve measured on
        that many threads (`read_gbs_threads_<t>_set_<bytes>`, then the DRAM sweep on them). Runs from
        before that curve: a set one thread reads FAST_SET_RATIO times faster than DRAM (a cache)
        adds up per core, one from DRAM scales as the DRAM sweep did from one thread to all."""
        one = at_least(self.read_curve(), nbytes)
        if one is None:
            return None
        if threads == 1:
            return one
        l2 = self.run.cache_bytes(2)
        if l2 and nbytes <= l2:
            return one * threads
        single, many = self.number("read_gbs_dram"), self.number(f"read_gbs_dram_threads_{threads}")
        curve = self.set_curve(f"read_gbs_threads_{threads}_set_")
        if curve:
            # That sweep splits its set among the threads: the one whose share each thread reads is
            # the set of threads x nbytes.
            dram_set = self.number("read_set_bytes_dram")
            return at_least(sorted(curve + ([(dram_set, many)] if dram_set and many else [])), threads * nbytes)
        if single and one >= FAST_SET_RATIO * single:
            return one * threads
        return one * (many / single) if single and many else one


def at_least(curve: list, nbytes: float) -> float | None:
    """The value of a (set bytes, value) curve at the smallest set at least `nbytes` (the largest set's
    beyond them all): a measured set, because the level a set is really read from need not be the one
    the reported sizes say; None for an empty curve."""
    return next((value for size, value in curve if size >= nbytes), curve[-1][1]) if curve else None
