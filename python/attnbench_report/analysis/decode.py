"""The decode window (loader_decode), derived: per decode point the time per token, GB/s and share of
the triad in each storage type and the 16-bit types' speed over fp32; where the K/V bytes sit against
the caches; the fixed part of a call's time; FLOPs per byte and share of the FMA peak by query rows
per K/V head; the generation loop's steps against the cache bytes; prefill's GFLOP/s per type; and
the decode goals. The text (narrative_decode) and the figures (fig_decode_*) read these."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import analysis
from ..load.results import Table, kernel_sort_key
from ..load.decode import HEAD_DIM, LAYOUTS, TYPES, DecodePoint, DecodeWindow

SIXTEEN_BIT = ("f16", "bf16")
QUANTISED = ("q8_0", "q4_0")  # ggml's blocks: shown beside the 16-bit types, no goal of their own here
NARROW = SIXTEEN_BIT + QUANTISED
# Issue 15's targets: with K/V beyond the L3, all threads, decode reads K/V at >= 75% of the triad
# and the 16-bit types are >= 1.7x faster than fp32; prefill at n = 4096, d = 128 with fp16 K/V
# reaches >= 0.9x the fp32 GFLOP/s.
TARGET_PCT_TRIAD = 75.0
TARGET_SPEEDUP = 1.7
TARGET_PREFILL_N, TARGET_PREFILL_D = 4096, 128
TARGET_PREFILL_RATIO = 0.9
# An L3 of more than this per CPU of the run is a large socket's cache seen from a few of its cores
# (a virtual machine): the socket's other cores, other tenants', share it, so its nominal size does
# not say what stays cached. Servers build 1.5 to 5 MiB of L3 per core, 12 MiB with stacked cache.
HUGE_L3_PER_CPU = 16 * 2 ** 20
TIERS = ("L2", "L3", "beyond L3")
_LAYOUT_ORDER = ("head", "llama")


def decode(window: DecodeWindow) -> Table:
    return window.table.where(family="decode").measured()


def kernel(window: DecodeWindow) -> str | None:
    """The kernel the window's text reads: the dispatched tiled SIMD kernel, else the first measured."""
    points = window.table.measured()
    return analysis.simd_kernel(points, "tiled") or next(iter(points.values("kernel")), None)


def threads_all(window: DecodeWindow) -> int:
    return analysis.threads_all(window.table)


def _order(p) -> tuple:
    return (kernel_sort_key(p.kernel), _LAYOUT_ORDER.index(p.layout), p.rows, p.kv, p.threads)


# --- caches -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Cache:
    level: int
    size: float  # bytes
    num_sharing: int  # CPUs sharing one such cache, as Google Benchmark reports it

    def capacity(self, threads: int) -> float:
        """What `threads` threads' cores hold together: a private cache once per core, a shared one once."""
        return self.size * max(1, threads // max(1, self.num_sharing))


def caches(run) -> dict:
    """{level: Cache} of the data and unified caches in the run's context (loader.Run.caches)."""
    out = {}
    for c in run.caches:
        if c.get("type") in ("Data", "Unified") and "size" in c:
            out[int(c["level"])] = Cache(int(c["level"]), float(c["size"]), int(c.get("num_sharing", 1) or 1))
    return out


def tier(run, kv_bytes: float, threads: int) -> str | None:
    """Where `kv_bytes` fit on `threads` threads: "L2" (the threads' L2s together), "L3" or "beyond L3";
    None when the context lists no L3."""
    have = caches(run)
    if 3 not in have:
        return None
    if 2 in have and kv_bytes <= have[2].capacity(threads):
        return "L2"
    return "L3" if kv_bytes <= have[3].capacity(threads) else "beyond L3"


def point_tier(run, p: DecodePoint) -> str | None:
    return tier(run, p.value("kv_bytes"), p.threads)


def l3_per_cpu(run) -> float | None:
    l3, cpus = caches(run).get(3), run.context.get("num_cpus")
    return l3.size / float(cpus) if l3 and cpus else None


def l3_shared_and_huge(run) -> bool:
    """Is the L3 shared with CPUs the run does not see (more than HUGE_L3_PER_CPU per CPU of the run)?"""
    per_cpu = l3_per_cpu(run)
    return per_cpu is not None and per_cpu > HUGE_L3_PER_CPU


# --- one decode point ----------------------------------------------------------------------------

def flops(p: DecodePoint) -> float:
    """FLOPs of one call: every query row scores every cached key, S = q·k and O += p·v, 2 FLOPs per
    multiply-add over d each: 4·d per score."""
    return 4.0 * p.d * p.q_heads * p.rows * p.kv


def flop_per_byte(p: DecodePoint) -> float:
    return flops(p) / p.value("kv_bytes")


def gflops(p: DecodePoint) -> float:
    return flops(p) / (p.value("call_us") * 1e3)


def pct_peak(run, p: DecodePoint) -> float:
    peak = run.fma_peak_gflops(p.threads)
    return 100.0 * gflops(p) / peak if peak else math.nan


def roofline_us(run, p: DecodePoint) -> float:
    """The least time the roofline allows a point's call: its K/V bytes at the triad or its FLOPs at the
    FMA peak of its thread count, whichever takes longer (NaN without both ceilings)."""
    triad, peak = run.triad_gbs(p.threads), run.fma_peak_gflops(p.threads)
    if not triad or not peak:
        return math.nan
    return max(p.value("kv_bytes") / (triad * 1e3), flops(p) / (peak * 1e3))


def compute_bound(run, p: DecodePoint) -> bool:
    """The FMA peak, not the triad, bounds the point's call: its FLOPs per byte exceed the machine's balance
    (the FMA peak over the triad of its thread count); False without both ceilings."""
    triad, peak = run.triad_gbs(p.threads), run.fma_peak_gflops(p.threads)
    return bool(triad and peak) and flop_per_byte(p) > peak / triad


def roofline_pct_triad(run, p: DecodePoint) -> float:
    """The largest share of the triad the roofline lets a point read its K/V at: 100% unless its FLOPs at
    the FMA peak take longer than its bytes at the triad."""
    return 100.0 * p.value("kv_bytes") / roofline_us(run, p) / (run.triad_gbs(p.threads) or math.nan) / 1e3


@dataclass(frozen=True)
class Row:
    """One decode point (kernel, layout, rows, kv, threads) in every storage type it was measured in."""

    kernel: str
    layout: str
    rows: int
    kv: int
    threads: int
    points: dict  # dtype -> DecodePoint

    @property
    def rows_per_kv_head(self) -> int:
        return next(iter(self.points.values())).rows_per_kv_head

    def speedup(self, dtype: str) -> float:
        """fp32's time per token over `dtype`'s (above 1: the type is faster); NaN without both."""
        if "f32" not in self.points or dtype not in self.points:
            return math.nan
        return self.points["f32"].value("token_us") / self.points[dtype].value("token_us")

    def noise(self, dtype: str) -> float:
        """The larger CV of the two times a speedup divides."""
        return max(self.points[t].cv.get("time_us", math.nan) for t in ("f32", dtype) if t in self.points)


def rows(window: DecodeWindow, kernel_name: str | None = None, points=None) -> list:
    """A Row per (kernel, layout, rows, kv, threads) of the measured decode points (or of `points`), in
    table order."""
    groups = {}
    for p in sorted(decode(window) if points is None else points, key=_order):
        if kernel_name is None or p.kernel == kernel_name:
            groups.setdefault((p.kernel, p.layout, p.rows, p.kv, p.threads), {})[p.dtype] = p
    return [Row(*key, points) for key, points in groups.items()]


# --- against the caches and the triad ------------------------------------------------------------

@dataclass(frozen=True)
class Spread:
    """The shares of the triad of a group of decode points: median, lowest and highest point."""

    points: tuple
    median: float
    low: DecodePoint
    high: DecodePoint

    @property
    def count(self) -> int:
        return len(self.points)


def _spread(points: list) -> Spread:
    share = [p.value("pct_triad") for p in points]
    return Spread(tuple(points), float(np.median(share)), min(points, key=lambda p: p.value("pct_triad")),
                  max(points, key=lambda p: p.value("pct_triad")))


def triad_shares(window: DecodeWindow, kernel_name: str) -> dict:
    """{(tier, rows per K/V head): Spread} of one kernel's decode points, every type and thread count."""
    groups = {}
    for p in decode(window).where(kernel=kernel_name):
        groups.setdefault((point_tier(window.run, p), p.rows_per_kv_head), []).append(p)
    return {key: _spread(points) for key, points in groups.items()}


def size_contrast(window: DecodeWindow, kernel_name: str) -> list:
    """Per thread count, (smallest, largest) fp32 decode point of the series (layout, rows) whose K/V
    bytes are the largest measured (of those, the fewest rows per K/V head): the same work per byte,
    from the smallest cache to the largest."""
    points = decode(window).where(kernel=kernel_name, dtype="f32")
    out = []
    for t in points.values("threads"):
        mine = points.where(threads=t)
        largest = max(mine, key=lambda p: (p.value("kv_bytes"), -p.rows_per_kv_head))
        series = sorted(mine.where(layout=largest.layout, rows=largest.rows), key=lambda p: p.kv)
        if len(series) > 1:
            out.append((series[0], series[-1]))
    return out


# --- the fixed part of a call ----------------------------------------------------------------------

@dataclass(frozen=True)
class CallFit:
    """A least-squares line call time = fixed + bytes / bandwidth through one series' lengths."""

    points: tuple  # DecodePoint (or generate points), by kv
    fixed_us: float  # the intercept: the time of a call that read nothing
    marginal_gbs: float  # 1 / slope: the GB/s of the bytes one more token adds

    @property
    def smallest(self) -> DecodePoint:
        return self.points[0]

    def fixed_share(self, measure: str = "call_us") -> float:
        """The intercept over the smallest point's time."""
        return self.fixed_us / self.smallest.value(measure)


def line_fit(points: list, sizes: list, measure: str) -> CallFit | None:
    """The line of `measure` (µs) against `sizes` (bytes, one per point) through two or more distinct
    sizes, or None."""
    if len(set(sizes)) < 2:
        return None
    slope, intercept = np.polyfit(sizes, [p.value(measure) for p in points], 1)
    order = sorted(range(len(points)), key=lambda i: sizes[i])
    return CallFit(tuple(points[i] for i in order), float(intercept), 1e-3 / float(slope) if slope > 0 else math.inf)


def call_fits(window: DecodeWindow, kernel_name: str) -> list:
    """A CallFit of call_us against K/V bytes per (layout, rows, type, threads) of one kernel."""
    groups = {}
    for p in sorted(decode(window).where(kernel=kernel_name), key=_order):
        groups.setdefault((p.layout, p.rows, TYPES.index(p.dtype), p.threads), []).append(p)
    fits = [line_fit(points, [p.value("kv_bytes") for p in points], "call_us") for _, points in sorted(groups.items())]
    return [f for f in fits if f is not None]


# --- query rows per K/V head -----------------------------------------------------------------------

@dataclass(frozen=True)
class Intensity:
    """One kernel's decode points with the same query rows per K/V head: FLOPs per byte by type, and
    the medians of the share of the FMA peak, of the triad and of the 16-bit speedups."""

    rows_per_kv_head: int
    shapes: tuple  # (layout, rows) pairs
    count: int  # Rows
    flop_per_byte: dict  # dtype -> FLOP per K/V byte
    pct_peak: dict  # dtype -> median %
    pct_triad: dict  # dtype -> median %
    speedup: dict  # 16-bit dtype -> median speedup over fp32
    best_speedup: dict  # 16-bit dtype -> the Row with the largest speedup


def intensities(window: DecodeWindow, kernel_name: str) -> list:
    by = {}
    for row in rows(window, kernel_name):
        by.setdefault(row.rows_per_kv_head, []).append(row)
    out = []
    for r, group in sorted(by.items()):
        points = [p for row in group for p in row.points.values()]
        types = [t for t in TYPES if any(t in row.points for row in group)]

        def median(f, t):
            return float(np.median([f(p) for p in points if p.dtype == t]))

        speedups = {t: [row for row in group if math.isfinite(row.speedup(t))] for t in SIXTEEN_BIT}
        out.append(Intensity(
            r, tuple(dict.fromkeys((row.layout, row.rows) for row in group)), len(group),
            {t: median(flop_per_byte, t) for t in types},
            {t: median(lambda p: pct_peak(window.run, p), t) for t in types},
            {t: median(lambda p: p.value("pct_triad"), t) for t in types},
            {t: float(np.median([row.speedup(t) for row in rs])) for t, rs in speedups.items() if rs},
            {t: max(rs, key=lambda row: row.speedup(t)) for t, rs in speedups.items() if rs}))
    return out


# --- the generation loop --------------------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    """A generation loop (append one token, attend; G times from a cache of N) and the decode point of
    the same kernel, type and threads at N cached tokens with one query row per head."""

    point: DecodePoint
    twin: DecodePoint | None

    @property
    def median_bytes(self) -> float:
        """K/V bytes at the loop's middle step, N + G/2 tokens: what its median step reads."""
        p = self.point
        return p.value("kv_bytes_end") * (p.kv + p.tokens / 2) / (p.kv + p.tokens)

    @property
    def gbs(self) -> float:
        return self.median_bytes / (self.point.value("token_us") * 1e3)

    def pct_triad(self, run) -> float:
        triad = run.triad_gbs(self.point.threads)
        return 100.0 * self.gbs / triad if triad else math.nan

    @property
    def over_twin(self) -> float:
        """The median step's time over the decode call's at the start length (NaN without a twin)."""
        return self.point.value("token_us") / self.twin.value("call_us") if self.twin else math.nan

    @property
    def first_over_median(self) -> float:
        return self.point.value("first_us") / self.point.value("token_us")


def steps(window: DecodeWindow) -> list:
    out = []
    points = decode(window)
    for p in sorted(window.table.where(family="generate").measured(), key=lambda p: (_order(p), TYPES.index(p.dtype))):
        twin = points.one(kernel=p.kernel, layout=p.layout, rows=1, kv=p.kv, dtype=p.dtype, threads=p.threads)
        out.append(Step(p, twin))
    return out


def step_fits(window: DecodeWindow, kernel_name: str) -> list:
    """A CallFit of the median step's time against its bytes per (type, threads), over the starts."""
    groups = {}
    for s in steps(window):
        if s.point.kernel == kernel_name:
            groups.setdefault((TYPES.index(s.point.dtype), s.point.threads), []).append(s)
    out = []
    for _, mine in sorted(groups.items()):
        fit = line_fit([s.point for s in mine], [s.median_bytes for s in mine], "token_us")
        if fit is not None:
            out.append(fit)
    return out


# --- prefill ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Prefill:
    """One prefill point (kernel, n, d, threads) in every storage type measured."""

    kernel: str
    n: int
    d: int
    threads: int
    points: dict  # dtype -> DecodePoint

    def ratio(self, dtype: str) -> float:
        """`dtype`'s GFLOP/s over fp32's (NaN without both)."""
        if "f32" not in self.points or dtype not in self.points:
            return math.nan
        return self.points[dtype].value("GFLOP/s") / self.points["f32"].value("GFLOP/s")

    def pack_share(self, dtype: str) -> float:
        """The time filling the cache (packing, converting) takes of the whole prefill's."""
        p = self.points[dtype]
        return 1e3 * p.value("pack_ms") / p.value("time_us")

    def noise(self, dtype: str) -> float:
        return max(self.points[t].cv.get("time_us", math.nan) for t in ("f32", dtype) if t in self.points)


def prefills(window: DecodeWindow) -> list:
    groups = {}
    for p in sorted(window.table.where(family="prefill").measured(), key=lambda p: (_order(p), p.d)):
        groups.setdefault((p.kernel, p.rows, p.d, p.threads), {})[p.dtype] = p
    return [Prefill(*key, points) for key, points in groups.items()]


# --- targets ---------------------------------------------------------------------------------------

def types_point(window: DecodeWindow, row):
    """The window's measured types point (the storage types called by turns) at the shape of a Row or
    DecodePoint, or None."""
    return next((p for p in window.types if not p.error and (p.kernel, p.layout, p.rows, p.kv, p.threads)
                 == (row.kernel, row.layout, row.rows, row.kv, row.threads)), None)


def alternated_points(window: DecodeWindow, kernel_name: str, threads: int) -> list:
    """A DecodePoint per storage type of each types point of `kernel_name` on `threads` at a shape with no
    decode point (the standard and full presets' types points beyond the L3 the CPU reports): the type's
    median call over the rounds, its bytes and GB/s; NaN measures left out."""
    have = {(p.layout, p.rows, p.kv) for p in decode(window).where(kernel=kernel_name, threads=threads)}
    triad = window.run.triad_gbs(threads)
    out = []
    for tp in window.types:
        if (tp.error or tp.family != "decode" or tp.kernel != kernel_name or tp.threads != threads
                or (tp.layout, tp.rows, tp.kv) in have):
            continue
        q_heads, kv_heads = LAYOUTS[tp.layout]
        for t in TYPES:
            us, gbs = tp.median.get(f"us_{t}", math.nan), tp.median.get(f"gbs_{t}", math.nan)
            if not (math.isfinite(us) and math.isfinite(gbs)):
                continue
            median = {"call_us": us, "token_us": us / tp.rows, "GB/s": gbs, "kv_bytes": gbs * us * 1e3,
                      "pct_triad": 100.0 * gbs / triad if triad else math.nan}
            out.append(DecodePoint(tp.name, "decode", tp.kernel, tp.layout, q_heads, kv_heads, tp.rows, tp.kv, 0,
                                   HEAD_DIM, t, threads, tp.repetitions, median,
                                   {"time_us": tp.cv.get(f"us_{t}", math.nan)}))
    return out


def _bandwidth(window: DecodeWindow, p: DecodePoint):
    """(% of the triad, its noise, call by call) a decode point's K/V stream at: from the types point at
    its shape where the window has one (the type's median call on caches of its own, the same reading
    as the speedup target's), else from the point itself."""
    alternated = types_point(window, p)
    triad = window.run.triad_gbs(p.threads)
    gbs = alternated.median.get(f"gbs_{p.dtype}", math.nan) if alternated else math.nan
    if triad and math.isfinite(gbs):
        return 100.0 * gbs / triad, alternated.cv.get(f"gbs_{p.dtype}", math.nan), True
    return p.value("pct_triad"), p.cv.get("time_us", math.nan), False


def prefill_types(window: DecodeWindow, kernel_name: str) -> list:
    """The window's measured prefill types points (the storage types' prefill called by turns) of a kernel,
    by n and threads (d is the window's HEAD_DIM)."""
    return sorted((p for p in window.prefill_types if not p.error and p.kernel == kernel_name),
                  key=lambda p: (p.rows, p.threads))


@dataclass(frozen=True)
class Target:
    """One of the decode goals at one point: what was measured against what is wanted."""

    point: DecodePoint  # the point measured (the 16-bit one of a speedup or a prefill ratio; a prefill's
    # TypesPoint when read call by call)
    measured: float  # % of the triad, or a ratio
    wanted: float
    noise: float  # the CV of the time (the larger of the two for a ratio; of the ratio, call by call)
    call_by_call: bool = False  # read from the window's types point (a ratio: both sides in one round)
    bound: float = math.nan  # the most the roofline allows the measure at this point (NaN: not computed)
    compute_bound: bool = False  # the FMA peak, not the triad, sets the bound (of the 16-bit point, a speedup)

    @property
    def met(self) -> bool:
        return self.measured >= self.wanted

    @property
    def beyond_roofline(self) -> bool:
        """The target asks more than the roofline (triad and FMA peak) allows at this point."""
        return self.bound < self.wanted


def targets(window: DecodeWindow) -> dict:
    """{"bandwidth" | "speedup" | "prefill": [Target]} for the window's kernel; a list is empty when the
    run has no point the target is defined at (no K/V beyond the L3 at all threads, no n = 4096 prefill)."""
    name, t_all = kernel(window), threads_all(window)
    run = window.run
    alternated_only = [p for p in alternated_points(window, name, t_all) if point_tier(run, p) == "beyond L3"]
    beyond = [p for p in decode(window).where(kernel=name, threads=t_all) if point_tier(run, p) == "beyond L3"]
    beyond += alternated_only
    out = {"bandwidth": [], "speedup": [], "prefill": []}
    for p in sorted(beyond, key=lambda p: (_order(p), TYPES.index(p.dtype))):
        pct, noise, call_by_call = _bandwidth(window, p)
        out["bandwidth"].append(Target(p, pct, TARGET_PCT_TRIAD, noise, call_by_call=call_by_call,
                                       bound=roofline_pct_triad(run, p), compute_bound=compute_bound(run, p)))
    for row in rows(window, name) + rows(window, name, alternated_only):
        for t in SIXTEEN_BIT:  # both points beyond the L3: the 16-bit one's bytes, half the fp32's
            if row.threads == t_all and t in row.points and point_tier(run, row.points[t]) == "beyond L3":
                bound = (roofline_us(run, row.points["f32"]) / roofline_us(run, row.points[t])
                         if "f32" in row.points else math.nan)
                fmas = "f32" in row.points and compute_bound(run, row.points[t])  # then the bound is under 2x
                alternated = types_point(window, row)
                if alternated is not None and math.isfinite(alternated.speedup(t)):
                    out["speedup"].append(Target(row.points[t], alternated.speedup(t), TARGET_SPEEDUP,
                                                 alternated.noise(t), call_by_call=True, bound=bound,
                                                 compute_bound=fmas))
                elif "f32" in row.points:
                    out["speedup"].append(Target(row.points[t], row.speedup(t), TARGET_SPEEDUP, row.noise(t),
                                                 bound=bound, compute_bound=fmas))
    # prefill: the types point (f32 and f16 called by turns) where the window has one, else the prefill points
    alternated = {p.threads: p for p in prefill_types(window, name)
                  if p.rows == TARGET_PREFILL_N and math.isfinite(p.speedup("f16"))}
    for pre in prefills(window):
        if (pre.kernel, pre.n, pre.d) == (name, TARGET_PREFILL_N, TARGET_PREFILL_D) and "f16" in pre.points:
            if "f32" in pre.points and pre.threads not in alternated:
                out["prefill"].append(Target(pre.points["f16"], pre.ratio("f16"), TARGET_PREFILL_RATIO,
                                             pre.noise("f16")))
    out["prefill"] += [Target(p, p.speedup("f16"), TARGET_PREFILL_RATIO, p.noise("f16"), call_by_call=True)
                       for p in alternated.values()]
    out["prefill"].sort(key=lambda t: t.point.threads)
    return out


# --- kernels and noise -----------------------------------------------------------------------------

def kernel_ratios(window: DecodeWindow) -> list:
    """[(other kernel, median time ratio other / the window's kernel, points)] over the decode points
    both measured: `tiled/simd/avx2` by name beside the dispatched AVX-512 kernel in the full preset."""
    name = kernel(window)
    points = decode(window)
    out = []
    for other in points.values("kernel"):
        if other == name:
            continue
        ratios = []
        for p in points.where(kernel=other):
            mine = points.one(kernel=name, layout=p.layout, rows=p.rows, kv=p.kv, dtype=p.dtype, threads=p.threads)
            if mine is not None:
                ratios.append(p.value("call_us") / mine.value("call_us"))
        if ratios:
            out.append((other, float(np.median(ratios)), len(ratios)))
    return out


def noisy(window: DecodeWindow, limit: float = analysis.CV_FLAG) -> list:
    """Measured points whose time varies more than `limit` across repetitions, the noisiest first."""
    points = [p for p in window.table.measured() if p.cv.get("time_us", 0) > limit]
    return sorted(points, key=lambda p: -p.cv["time_us"])
