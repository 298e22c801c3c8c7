"""The section "Decoding against a KV cache": the decode window (decode.json) read against the
machine's triad and caches: where decode is bound by the bytes of K and V, where it stops being so
and why, the generation loop, prefill, and the decode goals. Every number comes from
analysis_decode; this module only phrases them."""
from __future__ import annotations

import math

import numpy as np

from .. import analysis
from ..analysis import decode as ad
from .. import formatting as fmt
from ..document import Bullets, Document, Paragraph, Table
from ..load.decode import TYPES
from .decode_turns import TYPE_NAMES, call_by_call, prefill_by_turns
from .decode_turns import value_range as _range

TITLE = "Decoding against a KV cache"
FIGURES = ("fig11_decode_time_per_token", "fig12_decode_bandwidth")
def _measured(window) -> bool:
    return window is not None and len(ad.decode(window)) > 0


def _threads(window, t: int) -> str:
    return fmt.threads(t, ad.threads_all(window))


def _where(window, p) -> str:
    """A point in words: "llama, rows:1, kv 16,384, fp16, 2 threads (all)", led by its kernel when the
    window has several."""
    kernel = f"{fmt.code(p.kernel)}, " if len(window.table.values("kernel")) > 1 else ""
    what = kernel + {"decode": f"{p.layout}, rows:{p.rows}, kv {fmt.count(p.kv)}",
            "generate": f"generation from {fmt.count(p.kv)} + {fmt.count(p.tokens)} tokens",
            "prefill": f"prefill n = {fmt.count(p.kv)}"}[p.family]
    return f"{what}, {TYPE_NAMES[p.dtype]}, {_threads(window, p.threads)}"


def _pct(x: float) -> str:
    return fmt.pct(x, 0)


def summary_item(window) -> str | None:
    """The summary's bullet: the 16-bit speedups, the best share of the triad and the targets."""
    if not _measured(window):
        return None
    name = ad.kernel(window)
    rows = ad.rows(window, name)
    speed = {t: [r.speedup(t) for r in rows if math.isfinite(r.speedup(t))] for t in ad.NARROW}
    best = max(ad.decode(window).where(kernel=name), key=lambda p: p.value("pct_triad"))
    parts = [f"{TYPE_NAMES[t]} {fmt.ratio(float(np.median(v)))}" for t, v in speed.items() if v]
    verdicts = {}
    for label, ts in zip(("K/V bandwidth beyond the L3", "16-bit speedup there", "fp16 prefill"),
                         ad.targets(window).values()):
        verdicts.setdefault(_verdict(ts), []).append(label)
    tier = ad.point_tier(window.run, best)
    alternated = [p for p in window.types if not p.error and p.kernel == name]
    turns = [f"{TYPE_NAMES[t]} {fmt.ratio(float(np.median(v)))}" for t in ad.NARROW
             if (v := [p.speedup(t) for p in alternated if math.isfinite(p.speedup(t))])]
    return (f"Decoding against a KV cache ({fmt.code(name)}, `decode.json`): K/V stored narrower than fp32 decodes "
            + " and ".join(parts) + f" as fast as fp32 per token (medians over {len(rows)} points"
            + (f"; called by turns, {' and '.join(turns)} over {len(alternated)} `types/` points" if turns else "")
            + "), and a call "
            f"reads K/V at up to {_pct(best.value('pct_triad'))} of the triad ({_where(window, best)}"
            + (f", K/V {_in(tier)}" if tier else "") + "); the decode goals: "
            + "; ".join(f"{', '.join(labels)}: {verdict}" for verdict, labels in verdicts.items()) + ".")


def _verdict(targets: list) -> str:
    if not targets:
        return "cannot be read from this run"
    met = sum(t.met for t in targets)
    if met == len(targets):
        return "met"
    beyond = sum(t.beyond_roofline for t in targets if not t.met)
    return (f"not met ({met} of {len(targets)} points"
            + (f"; at {beyond} of the other {len(targets) - met} the target lies beyond the roofline" if beyond else "")
            + ")")


def section(doc: Document, window, figures: dict) -> None:
    """The section when decode.json lies next to the results; nothing without it."""
    if window is None:
        return
    s = doc.section(TITLE)
    if not _measured(window):
        s.add(Paragraph(f"`{window.path.name}` lies next to the results but holds no measured decode point, so "
                        "there is nothing to read against the bandwidth, and the decode goals, which need them, "
                        "cannot be read."))
        call_by_call(s, window)
        prefill_by_turns(s, window)
        return
    name = ad.kernel(window)
    _intro(s, window, name)
    if FIGURES[0] in figures:
        s.add(doc.figure(figures[FIGURES[0]], "Time per token (call time over the query rows) against the K/V bytes "
                         "a call reads, one panel per layout, query rows and thread count; black: the bytes at the "
                         "measured triad bandwidth; dash-dotted: the L2 of the threads' cores and the L3; stars: the "
                         "generation loop's median step at the cache length of its middle step."))
    _table(s, window)
    call_by_call(s, window)
    _bandwidth_bound(s, window, name)
    _caches(s, window, name)
    _fixed_costs(s, window, name)
    _rows_per_head(s, window, name)
    if FIGURES[1] in figures:
        s.add(doc.figure(figures[FIGURES[1]], "GB/s of K/V (bytes a call reads over its time) against those bytes, "
                         "under the measured triad (solid) and the 75% of it the decode goals ask for beyond the L3 "
                         "(dotted)."))
    _kernels(s, window, name)
    _generation(s, window, name)
    _prefill(s, window, name)
    _targets(s, window, name)
    _noise(s, window)


def _intro(s, window, name: str) -> None:
    run, ctx = window.run, window.context
    points = ad.decode(window)
    counts = analysis.thread_counts(points)
    caches = ad.caches(run)
    triad = ", ".join(f"{fmt.sig(run.triad_gbs(t))} GB/s on {_threads(window, t)}" for t in counts if run.triad_gbs(t))
    peak = ", ".join(f"{fmt.sig(run.fma_peak_gflops(t))} GFLOP/s on {_threads(window, t)}" for t in counts
                     if run.fma_peak_gflops(t))
    others = [k for k in points.values("kernel") if k != name]
    text = ("`attnbench_bench --decode` times attention as inference engines run it: K and V held in a persistent "
            "cache in one storage type, fp32 or 16-bit (fp16, bf16) widened to fp32 as the micro-kernels load it, "
            "and R query rows per query head (rows:1, one generated token; rows:4) attending to every cached token; "
            "layout \"head\" is one query head over one K/V head, \"llama\" 32 query heads over 8 K/V heads, "
            "d = 128. A call reads each K/V head's keys and values once, kv_heads × kv × d × 2 × (4 or 2) bytes: "
            f"{_range([p.value('kv_bytes') for p in points], fmt.bytes_)} "
            f"here. Measured on **{ctx.get('cpu_model', 'an unknown CPU')}** ({ctx.get('num_cpus', '?')} CPUs), "
            f"kernel {fmt.code(name)}" + (" (and " + ", ".join(fmt.code(k) for k in others) + " by name)" if others
                                          else "")
            + " on " + " and ".join(_threads(window, t) for t in counts)
            + (f"; the triad the window measured: {triad}" if triad else "")
            + (f"; the FMA peak {peak}" if peak else "") + ".")
    if 2 in caches and 3 in caches:
        l2, l3 = caches[2], caches[3]
        text += (f" {run.caches_source} reports an L2 of {fmt.bytes_(l2.size)} "
                 + ("per core" if l2.num_sharing == 1 else f"per {l2.num_sharing} CPUs")
                 + f" and an L3 of {fmt.bytes_(l3.size)} shared by {l3.num_sharing} CPUs; below, K/V \"fit in L2\" "
                 "when "
                 "they are at most the L2 of the cores the threads run on together ("
                 + ", ".join(f"{fmt.bytes_(l2.capacity(t))} on {_threads(window, t)}" for t in counts)
                 + "), \"in L3\" when at most the L3.")
        if ad.l3_shared_and_huge(run):
            text += (f" That L3 is {fmt.bytes_(ad.l3_per_cpu(run))} per CPU of this run, more than the "
                     f"{fmt.bytes_(ad.HUGE_L3_PER_CPU)} per core any server builds: it is a whole socket's cache seen "
                     "from a machine given a few of its cores, shared with the socket's other cores (other tenants), "
                     "so K/V under its size may still be evicted, and \"in L3\" says only that the bytes are under "
                     "its size.")
    else:
        text += " The context lists no L2 and L3 sizes, so the points cannot be placed against the caches."
    text += (" `scripts/study.sh` runs the window with its repetitions randomly interleaved, so the ratios between "
             "storage types compare points measured under the same conditions.")
    s.add(Paragraph(text))


def _table(s, window) -> None:
    rows_ = ad.rows(window)
    kernels = ad.decode(window).values("kernel")
    types = [t for t in TYPES if any(t in r.points for r in rows_)]
    body = []
    for r in rows_:
        cells = [fmt.code(r.kernel)] if len(kernels) > 1 else []
        f32 = r.points.get("f32")
        tiers = " / ".join(dict.fromkeys(str(ad.point_tier(window.run, r.points[t])) for t in types if t in r.points))
        cells += [r.layout, str(r.rows), fmt.count(r.kv), str(r.threads),
                  fmt.bytes_(f32.value("kv_bytes")) if f32 else "", tiers]
        for t in types:
            p = r.points.get(t)
            cells.append(f"{fmt.us(p.value('token_us'))} · {fmt.sig(p.value('GB/s'))} GB/s "
                         f"({_pct(p.value('pct_triad'))})" if p else "")
        cells += [fmt.ratio(r.speedup(t)) for t in ad.NARROW if t in types]
        body.append(cells)
    header = (["kernel"] if len(kernels) > 1 else []) + ["layout", "rows", "kv", "threads", "K/V (fp32)", "fits"]
    header += [f"{TYPE_NAMES[t]}: µs/token · GB/s (% triad)" for t in types]
    header += [f"{TYPE_NAMES[t]} speed over fp32" for t in ad.NARROW if t in types]
    align = ("l" if len(kernels) > 1 else "") + "lrrrrl" + "r" * (len(header) - 6 - (len(kernels) > 1))
    s.add(Table(header, body, align=align, caption="Decode points (medians): time per token, GB/s of K/V and share "
                "of the triad per storage type, where the K/V fit (per type, fp32 first), and each narrower type's "
                "speed over fp32 (fp32's time over its):"))


def _bandwidth_bound(s, window, name: str) -> None:
    rows_ = ad.rows(window, name)
    text = ("If a call's time were its K/V bytes over a bandwidth, the black line of the figure (the bytes over the "
            "triad) would predict it and 16-bit storage, half the bytes, would halve it.")
    speeds = {t: [(r.speedup(t), r) for r in rows_ if math.isfinite(r.speedup(t))] for t in ad.NARROW}
    parts = [f"{TYPE_NAMES[t]} {fmt.ratio(float(np.median([v for v, _ in sp])))} "
             f"({_range([v for v, _ in sp], fmt.ratio)})" for t, sp in speeds.items() if sp]
    if parts:
        total = sum(len(sp) for sp in speeds.values())
        text += (f" Over the {len(rows_)} decode points, " + " and ".join(parts)
                 + " run as fast as fp32 per token (medians).")
        fast = [(v, r, t) for t, sp in speeds.items() for v, r in sp if v >= ad.TARGET_SPEEDUP]
        near = [(v, r, t) for v, r, t in fast if v >= 2 or analysis.within_noise(v / 2 - 1, r.noise(t))]
        if fast:
            text += (f" Of the {total} 16-bit points, {len(fast)} reach {fmt.ratio(ad.TARGET_SPEEDUP)} or more "
                     f"({len(near)} of them 2x or within noise of it): "
                     + "; ".join(f"{_where(window, r.points[t])} at {fmt.ratio(v)} (fp32: "
                                 f"{fmt.bytes_(r.points['f32'].value('kv_bytes'))} at "
                                 f"{_pct(r.points['f32'].value('pct_triad'))} of the triad)" for v, r, t in fast)
                     + ". At those the time follows the bytes; the paragraphs below say where it stops doing so.")
        else:
            text += (f" No 16-bit point reaches {fmt.ratio(ad.TARGET_SPEEDUP)}: nowhere in this run does the time "
                     "follow the bytes alone; the paragraphs below say what else it follows.")
    s.add(Paragraph(text))


def _caches(s, window, name: str) -> None:
    run = window.run
    shares = ad.triad_shares(window, name)
    columns = sorted({r for _, r in shares})
    tiers = [tier for tier in ad.TIERS if any(k[0] == tier for k in shares)]
    if not tiers:
        return
    body = [[tier] + [f"{_pct(shares[(tier, r)].median)} ({shares[(tier, r)].count})" if (tier, r) in shares else ""
                      for r in columns] for tier in tiers]
    s.add(Table(["K/V fit in"] + [f"{r} row{'s' if r != 1 else ''} per K/V head" for r in columns], body,
                caption=f"Median share of the triad (and number of points) of {fmt.code(name)}'s decode points, every "
                        "type and thread count, by where the K/V fit and the query rows that read each K/V head:"))
    facts = []
    for tier in tiers:
        points = [p for (t, _), sp in shares.items() if t == tier for p in sp.points]
        above = [p for p in points if p.value("pct_triad") > 100]
        best = max(points, key=lambda p: p.value("pct_triad"))
        facts.append(f"{len(above)} of the {len(points)} points whose K/V fit {_in(tier)} read faster than the "
                     f"triad (up to {_pct(best.value('pct_triad'))}, {_where(window, best)})")
    text = ("The triad streams arrays from memory; K/V that stay in a cache between calls can be read faster: "
            + "; ".join(facts) + ".")
    if "beyond L3" not in tiers:
        text += " No point of this run has K/V beyond the L3."
    groups = {}
    for small, large in ad.size_contrast(window, name):
        key = (large.layout, large.rows, small.value("kv_bytes"), large.value("kv_bytes"))
        groups.setdefault(key, []).append((small, large))
    for (layout, rows_, small_bytes, large_bytes), pairs in groups.items():
        text += (f" The same work per byte ({layout}, rows:{rows_}, fp32) reads at "
                 + ", ".join(f"{_pct(a.value('pct_triad'))} of the triad at {fmt.bytes_(small_bytes)} and "
                             f"{_pct(b.value('pct_triad'))} at {fmt.bytes_(large_bytes)} on "
                             f"{_threads(window, b.threads)}" for a, b in pairs))
        slower = [b for _, b in pairs if ad.point_tier(run, b) == "L3" and b.value("pct_triad") < 100]
        if slower:
            text += (f"; at {fmt.bytes_(large_bytes)} slower than the triad though under the L3's size" + (
                     ": in this shared L3, fitting under its nominal size does not mean being read from cache."
                     if ad.l3_shared_and_huge(run) else "."))
        else:
            text += "."
    s.add(Paragraph(text))


def _in(tier: str) -> str:
    return {"L2": "in the threads' L2", "L3": "in the L3 (not in L2)", "beyond L3": "beyond the L3"}[tier]


def _fixed_costs(s, window, name: str) -> None:
    fits = ad.call_fits(window, name)
    if not fits:
        return
    lengths = sorted({len(f.points) for f in fits})
    text = ("A fixed cost per call (starting the tasks, merging the key chunks' partial results by log-sum-exp) "
            "would dominate small caches; it shows as the intercept of the line call time = fixed + bytes / "
            "bandwidth through each series' lengths (layout, rows, type, threads; through "
            + " or ".join(str(n) for n in lengths) + " lengths here"
            + (", so the line is exact" if lengths == [2] else "")
            + ").")
    positive = [f for f in fits if f.fixed_us > 0]
    negative = [f for f in fits if f.fixed_us <= 0]
    if positive:
        groups = {}
        for f in positive:
            groups.setdefault((f.smallest.layout, f.smallest.threads), []).append(f)
        text += (f" {len(positive)} of {len(fits)} series have a positive one: "
                 + "; ".join(f"the {layout} layout's {len(fs)} on {_threads(window, t)}, "
                             f"{_range([f.fixed_us for f in fs], fmt.us)} or "
                             f"{_range([100 * f.fixed_share() for f in fs], _pct)} of the series' smallest call"
                             for (layout, t), fs in groups.items()) + ".")
    if negative:
        text += (f" {'The other' if positive else 'All'} {len(negative)} have a negative intercept: their time per "
                 "byte grows with the bytes, the smaller caches read faster (from a nearer level), so the data shows "
                 "the cache effect there, and no fixed cost can be read from it.")
    s.add(Paragraph(text))


def _rows_per_head(s, window, name: str) -> None:
    groups = ad.intensities(window, name)
    if not groups:
        return
    types = [t for t in TYPES if t in groups[0].pct_peak]
    body = [[str(g.rows_per_kv_head), ", ".join(f"{layout} rows:{rows}" for layout, rows in g.shapes),
             " / ".join(fmt.sig(g.flop_per_byte[t]) for t in types if t in ("f32", "f16"))]
            + [_pct(g.pct_peak[t]) for t in types] + [_pct(g.pct_triad[t]) for t in types]
            + [fmt.ratio(g.speedup.get(t, math.nan)) for t in ad.NARROW if t in types] for g in groups]
    s.add(Table(["rows per K/V head", "shapes", "FLOP/byte (fp32 / 16-bit)"]
                + [f"% peak {TYPE_NAMES[t]}" for t in types] + [f"% triad {TYPE_NAMES[t]}" for t in types]
                + [f"{TYPE_NAMES[t]} over fp32" for t in ad.NARROW if t in types], body,
                align="rl" + "r" * (len(body[0]) - 2),
                caption=f"{fmt.code(name)} by the query rows that read each K/V head in one call (medians over "
                        "kv and thread counts): FLOPs per K/V byte, share of the FMA peak and of the triad, 16-bit "
                        "speed over fp32:"))
    if len(groups) < 2:
        return
    first, last = groups[0], groups[-1]
    text = ("Each K/V head's keys and values are read once per call by every query row attending to them: R rows "
            "per query head, times the 4 query heads per K/V head of the llama layout. So the FLOPs per byte grow "
            f"with the rows, from {fmt.sig(first.flop_per_byte['f32'])} to {fmt.sig(last.flop_per_byte['f32'])} "
            f"(fp32) between {first.rows_per_kv_head} and {last.rows_per_kv_head} rows per K/V head, and the share "
            f"of the FMA peak with them, from {_pct(first.pct_peak['f32'])} to {_pct(last.pct_peak['f32'])} (fp32), "
            f"while the share of the triad goes from {_pct(first.pct_triad['f32'])} to {_pct(last.pct_triad['f32'])}.")
    falls = [t for t in ad.NARROW if t in first.speedup and t in last.speedup
             and last.speedup[t] < first.speedup[t]]
    if falls:
        text += (" The 16-bit gain falls as they grow: " + ", ".join(
            f"{TYPE_NAMES[t]} from {fmt.ratio(first.speedup[t])} to {fmt.ratio(last.speedup[t])}" for t in falls)
            + ". With more work per byte the time is no longer the bytes' alone: halving the bytes leaves the FMAs "
            "and, for 16-bit, widening every element to fp32 (which this run does not time apart), so 16-bit gains "
            "less than 2x there.")
    else:
        text += (" The data does not show the 16-bit gain falling as the rows grow ("
                 + ", ".join(f"{TYPE_NAMES[t]} {fmt.ratio(first.speedup.get(t, math.nan))} at "
                             f"{first.rows_per_kv_head}, {fmt.ratio(last.speedup.get(t, math.nan))} at "
                             f"{last.rows_per_kv_head}" for t in ad.NARROW) + ").")
    s.add(Paragraph(text))


def _kernels(s, window, name: str) -> None:
    ratios = ad.kernel_ratios(window)
    if ratios:
        s.add(Paragraph("Beside the dispatched " + fmt.code(name) + ": " + "; ".join(
            f"{fmt.code(k)} takes {fmt.ratio(r)} its time per call (median over {n} points)" for k, r, n in ratios)
            + "."))


def _generation(s, window, name: str) -> None:
    steps = ad.steps(window)
    if not steps:
        return
    run = window.run
    multi = len({st.point.kernel for st in steps}) > 1
    body = [([fmt.code(st.point.kernel)] if multi else [])
            + [TYPE_NAMES[st.point.dtype], str(st.point.threads),
               f"{fmt.count(st.point.kv)} + {fmt.count(st.point.tokens)}",
               fmt.bytes_(st.median_bytes), fmt.us(st.point.value("token_us")), fmt.us(st.point.value("first_us")),
               fmt.us(st.point.value("last_us")), fmt.us(st.point.value("append_us")),
               f"{fmt.sig(st.gbs)} ({_pct(st.pct_triad(run))})", fmt.ratio(st.over_twin)] for st in steps]
    header = ["type", "threads", "tokens", "K/V at the middle step", "median step", "first step", "last step", "append",
              "GB/s (% triad)", "step / decode call"]
    s.add(Table((["kernel"] if multi else []) + header, body, align=("l" if multi else "") + "lrr" + "r" * 7,
                caption="The generation loop (llama layout, one query row per head): append one token's K and V, "
                        "attend, repeated from the start length; the step over the decode call at the start length:"))
    mine = [st for st in steps if st.point.kernel == name]
    over = [st.over_twin for st in mine if math.isfinite(st.over_twin)]
    text = "A step appends one token's K and V and attends to the grown cache"
    if over:
        text += (f"; its median takes {_range(over, fmt.ratio)} the decode call at the start length, the append "
                 f"{_range([st.point.value('append_us') for st in mine], fmt.us)} of it")
    firsts = [st.first_over_median for st in mine]
    text += (f". The first step takes {_range(firsts, fmt.ratio)} the median: the loop starts from an empty "
             "workspace, which the first call sets up.")
    by = {(st.point.dtype, st.point.threads, st.point.kv): st for st in mine}
    for t in ad.NARROW:
        ratios = [by[("f32", th, kv)].point.value("token_us") / st.point.value("token_us")
                  for (dt, th, kv), st in by.items() if dt == t and ("f32", th, kv) in by]
        if ratios:
            text += f" {TYPE_NAMES[t]} steps run {_range(ratios, fmt.ratio)} as fast as fp32's."
    fits = ad.step_fits(window, name)
    if fits:
        text += (" Through the start lengths, the median step's time grows with the cache's bytes as if each added "
                 "byte were read at " + "; ".join(
                     f"{fmt.sig(f.marginal_gbs)} GB/s ({TYPE_NAMES[f.smallest.dtype]}, "
                     f"{_threads(window, f.smallest.threads)}, "
                     f"{_pct(100 * f.marginal_gbs / run.triad_gbs(f.smallest.threads))} of the triad)" for f in fits)
                 + ".")
    else:
        text += (" With one start length the step's time against the cache bytes is one point per type and thread "
                 "count (the stars of the figure, on the decode points' scale); a run with more start lengths gives "
                 "its slope.")
    s.add(Paragraph(text))


def _prefill(s, window, name: str) -> None:
    _prefill_points(s, window, name)
    prefill_by_turns(s, window)


def _prefill_points(s, window, name: str) -> None:
    pres = ad.prefills(window)
    if not pres:
        return
    body = []
    for pre in pres:
        for t in TYPES:
            p = pre.points.get(t)
            if p is not None:
                body.append([fmt.code(pre.kernel), fmt.count(pre.n), str(pre.d), str(pre.threads), TYPE_NAMES[t],
                             fmt.ms(p.value("time_us") / 1e3), fmt.sig(p.value("GFLOP/s")), _pct(p.value("pct_peak")),
                             fmt.ms(p.value("pack_ms")), _pct(100 * pre.pack_share(t)), fmt.ratio(pre.ratio(t))])
    s.add(Table(["kernel", "n", "d", "threads", "type", "time", "GFLOP/s", "% peak", "filling the cache", "fill share",
                 "over fp32"], body, align="lrrrl" + "r" * 6,
                caption="Prefill: fill an empty cache with n tokens (packing and converting to the type), then "
                        "causal attention of n rows over it; GFLOP/s count the causal scores' 4·d FLOPs over the "
                        "whole time, the fill included:"))
    text = []
    pres = [pre for pre in pres if pre.kernel == name]
    for pre in pres:
        for t in ad.NARROW:
            if t in pre.points and "f32" in pre.points:
                f32, p = pre.points["f32"], pre.points[t]
                rest = ((f32.value("time_us") - 1e3 * f32.value("pack_ms"))
                        / (p.value("time_us") - 1e3 * p.value("pack_ms")))
                text.append(f"{TYPE_NAMES[t]} at n = {fmt.count(pre.n)} on {_threads(window, pre.threads)}: "
                            f"{fmt.ratio(pre.ratio(t))} the fp32 GFLOP/s; filling the cache takes "
                            f"{_pct(100 * pre.pack_share(t))} of its time against {_pct(100 * pre.pack_share('f32'))} "
                            f"of fp32's, and without the fill its attention runs at {fmt.ratio(rest)} fp32's speed")
    if text:
        best = max((pre.points["f32"] for pre in pres if "f32" in pre.points), key=lambda p: p.value("pct_peak"),
                   default=None)
        s.add(Paragraph(
            "Prefill is compute-bound (n rows score every earlier key"
            + (f"; fp32 reaches {_pct(best.value('pct_peak'))} of the FMA peak on {_threads(window, best.threads)}"
               if best else "")
            + "), so storing K and V in 16 bits saves it no time and costs it the conversions: " + "; ".join(text)
            + ". What the fill does not explain is spent in the attention itself, which widens every 16-bit "
            "element as it loads it."))


def _targets(s, window, name: str) -> None:
    run, targets, t_all = window.run, ad.targets(window), ad.threads_all(window)
    l3 = ad.caches(run).get(3)
    l3_text = f"the L3 ({fmt.bytes_(l3.size)})" if l3 else "the L3 (the context lists no L3)"
    items = []
    at = f"{_threads(window, t_all)}"
    for key, wanted, dtypes in (
            ("bandwidth", f"decode reads K/V at ≥ {_pct(ad.TARGET_PCT_TRIAD)} of the triad", TYPES),
            ("speedup", f"fp16 and bf16 decode ≥ {fmt.ratio(ad.TARGET_SPEEDUP)} as fast as fp32", ad.NARROW)):
        largest = max(ad.decode(window).where(kernel=name, threads=t_all, dtype=list(dtypes)),
                      key=lambda p: (p.value("kv_bytes"), -p.rows_per_kv_head), default=None)
        head = f"With K/V beyond {l3_text}, {at}, {wanted}: "
        show = _pct if key == "bandwidth" else fmt.ratio
        if targets[key]:
            items.append(head + _verdict(targets[key]) + " (" + "; ".join(
                f"{_where(window, t.point)}: {show(t.measured)}"
                + ((" call by call" if key == "speedup" else " (its `types/` point)") if t.call_by_call else "")
                + _short(t) + (f", {'the roofline allows at most' if key == 'bandwidth' else 'both sides at the roofline give'} "
                               f"{show(t.bound)}" if t.compute_bound else "")
                for t in targets[key]) + ").")
        else:
            text = head + (f"cannot be read from this run: no {'16-bit ' if key == 'speedup' else ''}decode point of "
                           f"{fmt.code(name)} on {at} has K/V beyond it")
            if largest is not None:
                text += (f"; its largest read {fmt.bytes_(largest.value('kv_bytes'))} ({_where(window, largest)}, "
                         f"{_pct(largest.value('pct_triad'))} of the triad), inside the L3's size")
            items.append(text + ".")
    head = (f"Prefill at n = {fmt.count(ad.TARGET_PREFILL_N)}, d = {ad.TARGET_PREFILL_D}, fp16 ≥ "
            f"{fmt.ratio(ad.TARGET_PREFILL_RATIO)} the fp32 GFLOP/s: ")
    if targets["prefill"]:
        items.append(head + _verdict(targets["prefill"]) + " (" + "; ".join(
            f"{_threads(window, t.point.threads)}: {fmt.ratio(t.measured)}" + (" call by call" if t.call_by_call else "")
            + _short(t) for t in targets["prefill"]) + ").")
    else:
        have = [pre for pre in ad.prefills(window) if pre.kernel == name]
        items.append(head + "cannot be read from this run, which has no such prefill point" + (
            " (it has n = " + ", ".join(sorted({fmt.count(p.n) for p in have})) + "; there fp16 reaches "
            + ", ".join(f"{fmt.ratio(p.ratio('f16'))} on {_threads(window, p.threads)}" for p in have) + ")"
            if have else "") + ".")
    s.add(Paragraph("The decode goals, for " + fmt.code(name) + " (a ratio within the larger CV of its two times is "
                    "within noise of the target; a call-by-call ratio, within its CV over the repetitions; where the window has a "
                    "`types/` point at a shape, both decode targets read it: each type on caches of its own):"))
    s.add(Bullets(items))
    _roofline(s, window, targets)


def _roofline(s, window, targets: dict) -> None:
    """Why a target can be out of reach at a point: the roofline's bound, from the run's own ceilings."""
    beyond = {key: [t for t in targets[key] if t.beyond_roofline] for key in ("bandwidth", "speedup")}
    if not any(beyond.values()):
        return
    first = next(t for ts in beyond.values() for t in ts)
    run, threads = window.run, first.point.threads
    peak, triad = run.fma_peak_gflops(threads), run.triad_gbs(threads)
    shapes = {}
    for key, ts in beyond.items():
        for t in ts:
            shapes.setdefault((t.point.layout, t.point.rows, t.point.rows_per_kv_head), []).append((key, t))
    parts = []
    for (layout, rows_, per_head), kts in shapes.items():
        by_type = {t.point.dtype: t.point for _, t in kts}
        fpb = " and ".join(f"{fmt.sig(ad.flop_per_byte(by_type[d]))} FLOPs per {TYPE_NAMES[d]} byte"
                           for d in TYPES if d in by_type)
        said = {}  # the bound as said -> the types it holds for (once each, whatever the kv_len)
        for key, t in kts:
            bound = (f"read K/V at most at {_pct(t.bound)} of the triad" if key == "bandwidth" else
                     f"run at most {fmt.ratio(t.bound)} as fast as fp32 with both at the roofline")
            said.setdefault(bound, {})[TYPE_NAMES[t.point.dtype]] = None
        bounds = [" and ".join(names) + " " + bound for bound, names in said.items()]
        parts.append(f"{layout}, rows:{rows_} ({per_head} query rows per K/V head) does {fpb}, so there "
                     + " and ".join(bounds))
    s.add(Paragraph(
        "A call takes at least its K/V bytes at the triad or its FLOPs at the FMA peak, whichever is longer (the "
        f"roofline, from this run's ceilings on {_threads(window, threads)}: {fmt.sig(triad)} GB/s and "
        f"{fmt.sig(peak)} GFLOP/s, a balance of {fmt.sig(peak / triad)} FLOPs per byte; above it the FMAs bound "
        "the call, not the bytes, and 16-bit storage halves the bytes but keeps the FLOPs). " + "; ".join(parts)
        + ". Those targets lie beyond this machine's roofline whatever the kernel; at the other points the kernel "
        "meets or misses them."))


def _short(target) -> str:
    """ ", short of it within noise" for a target missed by less than its noise."""
    within = analysis.within_noise(target.measured / target.wanted - 1, target.noise)
    return ", short of it within noise" if not target.met and within else ""


def _noise(s, window) -> None:
    measured = window.table.measured()
    cvs = [p.cv.get("time_us", math.nan) for p in measured if math.isfinite(p.cv.get("time_us", math.nan))]
    if not cvs:
        return
    noisy = ad.noisy(window)
    s.add(Paragraph(
        f"Noise: over the window's {len(cvs)} measured points the median CV of the time is "
        f"{fmt.pct(100 * float(np.median(cvs)), 1)} and the largest {fmt.pct(100 * max(cvs), 1)}; {len(noisy)} are "
        f"above {fmt.pct(100 * analysis.CV_FLAG, 0)}. A ratio between two points is within noise when it differs from "
        "the value compared by less than the larger CV of the two."))
    if noisy:
        s.add(Table(["point", "CV of time", "repetitions", "median time"],
                    [[_where(window, p), fmt.pct(100 * p.cv["time_us"]), str(p.repetitions), fmt.us(p.value("time_us"))]
                     for p in noisy], align="lrrr",
                    caption=f"Decode-window points with CV above {fmt.pct(100 * analysis.CV_FLAG, 0)}:"))
