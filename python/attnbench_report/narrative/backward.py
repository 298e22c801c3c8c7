"""The backward pass: its time exponent, share of the FMA peak, thread scaling, naive against tiled,
and where its time goes against the forward's. Every number comes from analysis_backward (and the
shared helpers of analysis); this module only phrases them."""
from __future__ import annotations

import numpy as np

from .. import analysis
from ..analysis import backward as ab
from .. import formatting as fmt
from ..document import Bullets, Document, Paragraph, Table
from ..load.results import Table as Points

TITLE = "The backward pass"


def summary_item(table: Points, all_threads: int) -> str:
    """The summary's bullet: the tiled SIMD backward's best share of the peak and the median time
    ratio to its forward, or that the run has no backward point."""
    if not ab.measured(table):
        return ("Backward pass: not measured in this run (no `pass:backward` point in the JSON), so the report has "
                "no backward section.")
    points = ab.backward(table).measured()
    kernel = analysis.simd_kernel(points, "tiled") or points.values("kernel")[0]
    parts = []
    for t in analysis.thread_counts(points):
        best = max(points.where(kernel=kernel, threads=t), key=lambda r: r.gflops_median, default=None)
        if best is not None:
            parts.append(f"{fmt.sig(best.gflops_median)} GFLOP/s ({fmt.pct(best.pct_peak_median)} of the peak) on "
                         f"{fmt.threads(t, all_threads)} at n = {fmt.count(best.n)}, d = {best.d}")
    text = f"Backward pass of {fmt.code(kernel)}, at best: " + "; ".join(parts) + "."
    spread = next((s for s in ab.ratio_spreads(ab.time_ratios(table)) if s.kernel == kernel and s.threads == 1), None)
    if spread is not None:
        text += (f" It takes {fmt.ratio(spread.median)} its forward's time (median over {fmt.count(spread.count)} "
                 f"point{'s' if spread.count != 1 else ''}, one thread), against the "
                 f"{fmt.ratio(ab.BACKWARD_FLOP_FACTOR)} of its FLOP count.")
    return text


def section(doc: Document, table: Points, figures: dict, all_threads: int) -> None:
    """The section, when the run measured the backward; nothing otherwise (the summary says so)."""
    if not ab.measured(table):
        return
    s = doc.section(TITLE)
    points = ab.backward(table)
    s.add(Paragraph(
        "Training needs the gradients dQ, dK and dV of a loss whose gradient with respect to O is dO. The tiled "
        "kernels compute them as FlashAttention-2 does: per key block, S = Q Kᵀ again, P = exp(S − LSE) from the "
        "log-sum-exp the forward left, dP = dO Vᵀ, dS = P ∘ (dP − D) with D = rowsum(dO ∘ O), then dV += Pᵀ dO, "
        "dK += dSᵀ Q and dQ += dS K (scaled), in a fixed order so that the gradients are the same bits for every "
        "thread count; the naive kernels materialise P and dS, 2 × 4n² bytes. The benchmark counts the backward as "
        f"FlashAttention's benchmarks do, {fmt.sig(ab.BACKWARD_FLOP_FACTOR)} × the forward's 4·n²·d (five products of "
        "the forward's size against its two), and a training step (`pass:forward+backward`) as "
        f"{fmt.sig(ab.STEP_FLOP_FACTOR)} ×; GFLOP/s and % of peak are those FLOPs over the median time."))
    s.add(doc.figure(figures["fig9_backward_gflops"], "Backward GFLOP/s against n (2.5·4·n²·d FLOPs over the "
                     "median time), one panel per head dim and thread count, under the measured FMA peak."))
    _exponents(s, points, all_threads)
    _peak(s, points, table, all_threads)
    _targets(s, table)
    _threads(s, points, all_threads)
    _naive_against_tiled(s, points, table)
    _against_forward(doc, s, table, figures, all_threads)


def _exponents(s, points: Points, all_threads: int) -> None:
    dims, counts = points.values("d"), analysis.thread_counts(points)
    fits_by_t = {t: analysis.time_fits(points, t) for t in counts}
    rows = []
    for kernel in points.measured().values("kernel"):
        row = [fmt.code(kernel)]
        for t in counts:
            for d in dims:
                fit = fits_by_t[t].get((kernel, d))
                row.append("" if fit is None else f"{fit.slope:.2f}" + (" †" if analysis.through_two_lengths(fit) else ""))
        if any(row[1:]):
            rows.append(row)
    if rows:
        s.add(Table(["kernel"] + [f"d = {d}, {fmt.threads(t, all_threads)}" for t in counts for d in dims], rows,
                    caption="Fitted exponent b of backward time ∝ n^b (every measured n; † through two lengths only):"))
    else:
        s.add(Paragraph("No kernel's backward was measured at two lengths or more, so no exponent can be fitted."))
    notes = []
    r2 = analysis.r2_range(fit for fits in fits_by_t.values() for fit in fits.values())
    if r2:
        notes.append(f"R² of the fits through three or more lengths is between {r2[0]:.4f} and {r2[1]:.4f}")
    fits = fits_by_t.get(1, {})
    for _, tiled, naive in analysis.crossover_pairs(points.measured()):
        both, steeper = analysis.steeper_exponents(fits, naive, tiled, dims)
        if both and naive.startswith("naive/"):
            notes.append(f"{fmt.code(naive)} grows faster than {fmt.code(tiled)} at {len(steeper)} of {len(both)} head "
                         "dims (" + ", ".join(f"d = {d}: {fits[(naive, d)].slope:.2f} against {fits[(tiled, d)].slope:.2f}"
                                              for d in both) + ")")
    s.add(Paragraph(
        "Like the forward, the backward scores every query against every key, so its time should grow as n² once "
        "the costs linear in n (packing K and V, D = rowsum(dO ∘ O), zeroing the gradients) are amortised"
        + (": " + "; ".join(notes) + "." if notes else ".")))


def _peak(s, points: Points, table: Points, all_threads: int) -> None:
    run = table.runs[0]
    counts, ns = analysis.thread_counts(points), points.values("n")
    rows = []
    for kernel in points.measured().values("kernel"):
        for d in points.values("d"):
            for t in counts:
                mine = points.where(kernel=kernel, d=d, threads=t)
                if not len(mine):
                    continue
                cells = []
                for n in ns:
                    r = mine.one(n=n)
                    if r is None:
                        cells.append("")
                    elif r.skipped:
                        cells.append(r.status)
                    else:
                        cells.append(f"{fmt.sig(r.gflops_median)} ({fmt.pct(r.pct_peak_median)})")
                rows.append([fmt.code(kernel), str(d), str(t)] + cells)
    peaks = ", ".join(f"{fmt.sig(run.fma_peak_gflops(t))} GFLOP/s on {fmt.threads(t, all_threads)}"
                      for t in counts if run.fma_peak_gflops(t))
    s.add(Table(["kernel", "d", "threads"] + [f"n = {fmt.count(n)}" for n in ns], rows, align="lrr" + "r" * len(ns),
                caption=f"Backward GFLOP/s (and % of the measured FMA peak: {peaks}) per point; "
                        "\"skipped\" or \"failed\" where it was not timed (reasons under Skipped points):"))
    best = [(t, max(points.measured().where(threads=t), key=lambda r: r.pct_peak_median, default=None)) for t in counts]
    facts = [f"on {fmt.threads(t, all_threads)}, {fmt.pct(r.pct_peak_median)} ({fmt.code(r.kernel)}, n = "
             f"{fmt.count(r.n)}, d = {r.d})" for t, r in best if r is not None]
    if facts:
        s.add(Paragraph("The highest share of the peak the backward reaches: " + "; ".join(facts) + ". Per score the "
                        "backward is credited with " + ", ".join(f"{fmt.sig(ab.flops_per_score(d))} FLOPs at d = {d}"
                                                                for d in points.values("d"))
                        + " against one exp (P recomputed from LSE), where the forward has 4d FLOPs per exp: the exp "
                        "weighs less per FLOP, while the products that reduce over query rows (dK = dSᵀ Q, "
                        "dV = Pᵀ dO) and the ordered additions into dQ are work the forward does not have."))


def _targets(s, table: Points) -> None:
    kernel, targets = ab.targets(table)
    if kernel is None:
        return
    if not targets:
        s.add(Paragraph(f"The backward goals for {fmt.code(kernel)} (n = "
                        + " and ".join(fmt.count(n) for n in ab.TARGET_LENGTHS)
                        + ") cannot be read from this run: it has no backward point of that kernel there."))
        return
    rows = [[t.what, str(t.d), fmt.count(t.n),
             fmt.pct(t.measured) if t.what == "share of peak" else fmt.ratio(t.measured),
             fmt.pct(t.wanted, 0) if t.what == "share of peak" else fmt.ratio(t.wanted), "yes" if t.met else "no"]
            for t in targets]
    met = sum(t.met for t in targets)
    s.add(Table(["target", "d", "n", "measured", "wanted", "met"], rows, align="lrrrrl",
                caption=f"The backward goals for {fmt.code(kernel)}, one thread (two for the speedup): "
                        f"{met} of {len(targets)} met here:"))
    if any(t.what == "two threads over one" for t in targets):
        s.add(Paragraph("The speedups above divide the matrix's medians, whose repetitions are seconds apart; where "
                        "the scaling window ran beside this run, its section \"Thread scaling in rounds\" measures "
                        "the same ratio in rounds milliseconds apart, against every core's 1-thread speed, and is the "
                        "one to read on a noisy host."))


def _threads(s, points: Points, all_threads: int) -> None:
    if all_threads == 1:
        return
    scaling = analysis.thread_scaling(points, all_threads)
    if not scaling:
        return
    rows = [[fmt.code(x.kernel), str(x.d), fmt.count(x.n), fmt.ms(x.one.time_ms_median), fmt.ms(x.many.time_ms_median),
             fmt.ratio(x.speedup), fmt.pct(x.efficiency_pct, 0)] for x in scaling]
    s.add(Table(["kernel", "d", "n", "1 thread", f"{all_threads} threads", "speedup", "efficiency"], rows,
                caption=f"Backward thread scaling at each kernel's largest n measured on 1 and {all_threads} threads:"))


def _naive_against_tiled(s, points: Points, table: Points) -> None:
    rows = []
    for name, tiled, naive in analysis.crossover_pairs(points.measured()):
        if not naive.startswith("naive/"):
            continue
        for t in analysis.thread_counts(points):
            for d in points.values("d"):
                c = analysis.crossover(points.measured(), tiled, naive, d, t)
                if len(c.n):
                    rows.append([name, f"{fmt.code(tiled)} vs {fmt.code(naive)}", str(d), str(t), c.sentence()])
    if rows:
        s.add(Table(["pair", "kernels", "d", "threads", f"backward: where tiled overtakes naive ({analysis.statistic(points)})"], rows,
                    align="llrrl"))
    pairs = ab.scratch_pairs(table)
    if pairs:
        facts = []
        for p in pairs:
            slopes = [ab.scratch_growth(table, k, p.tiled.d) for k in (p.naive.kernel, p.tiled.kernel)]
            slope_text = ("" if None in slopes else
                          f"; log-log slopes {slopes[0].slope:.2f} and {slopes[1].slope:.2f} over the measured n")
            facts.append(f"d = {p.tiled.d}, n = {fmt.count(p.naive.n)}: {fmt.code(p.naive.kernel)} "
                         f"{fmt.bytes_(p.naive.scratch_bytes_median)} (P and dS alone: "
                         f"{fmt.bytes_(p.p_and_ds_bytes)}) against {fmt.code(p.tiled.kernel)} "
                         f"{fmt.bytes_(p.tiled.scratch_bytes_median)}, {fmt.ratio(p.ratio)} less{slope_text}")
        s.add(Paragraph("Scratch of the backward, one thread (the workspace's peak; the gradients themselves are "
                        "outputs, not scratch):"))
        s.add(Bullets(facts))
        s.add(Paragraph("The naive backward holds a head's P and dS whole, twice the forward's score matrix, so it "
                        "meets the naive memory budget at n √2 smaller than the forward does; the tiled backward "
                        "recomputes each block of P from Q, K and LSE, and its scratch is per block."))


def _against_forward(doc: Document, s, table: Points, figures: dict, all_threads: int) -> None:
    ratios = ab.time_ratios(table)
    if not ratios:
        s.add(Paragraph("No backward point has a forward point at the same kernel, n, d and thread count, so the "
                        "backward's time cannot be set against the forward's."))
        return
    s.add(doc.figure(figures["fig10_backward_over_forward"], "Backward time over forward time at the same kernel, n, "
                     "d and thread count; the dotted line is the 2.5x of the FLOP count."))
    points = Points([r.backward for r in ratios], table.runs)
    ns = points.values("n")
    rows = []
    for kernel in points.values("kernel"):
        for d in points.values("d"):
            for t in analysis.thread_counts(points):
                mine = {r.backward.n: r for r in ratios if (r.backward.kernel, r.backward.d, r.backward.threads) == (kernel, d, t)}
                if mine:
                    rows.append([fmt.code(kernel), str(d), str(t)]
                                + [fmt.ratio(mine[n].ratio) if n in mine else "" for n in ns])
    s.add(Table(["kernel", "d", "threads"] + [f"n = {fmt.count(n)}" for n in ns], rows, align="lrr" + "r" * len(ns),
                caption="Backward time over forward time, median times:"))
    spreads = ab.ratio_spreads(ratios)
    slower = [sp for sp in spreads if sp.verdict == "longer"]
    faster = [sp for sp in spreads if sp.verdict == "shorter"]
    level = [sp for sp in spreads if sp.verdict == "within noise"]
    items = []
    for sp in spreads:
        low, high = sp.lowest.backward, sp.highest.backward
        where = (f"at n = {fmt.count(low.n)}, d = {low.d}" if sp.count == 1 else
                 f"median over {sp.count} points, from {fmt.ratio(sp.lowest.ratio)} at n = {fmt.count(low.n)}, "
                 f"d = {low.d} to {fmt.ratio(sp.highest.ratio)} at n = {fmt.count(high.n)}, d = {high.d}")
        items.append(f"{fmt.code(sp.kernel)}, {fmt.threads(sp.threads, all_threads)}: {fmt.ratio(sp.median)} ({where}), "
                     f"so its backward runs at {fmt.ratio(ab.BACKWARD_FLOP_FACTOR / sp.median)} its forward's GFLOP/s")
    s.add(Bullets(items))
    text = (f"If the backward's time went where its FLOPs go, it would take {fmt.ratio(ab.BACKWARD_FLOP_FACTOR)} the "
            f"forward's. Of {len(spreads)} kernel and thread-count pairs, {len(slower)} take longer than that "
            f"(median), {len(faster)} less, and {len(level)} are within noise of it (the median difference from "
            f"{fmt.ratio(ab.BACKWARD_FLOP_FACTOR)} smaller than the median of the larger CV of the two times).")
    if slower:
        text += (" Longer: " + ", ".join(f"{fmt.code(sp.kernel)} ({fmt.threads(sp.threads, all_threads)})"
                                          for sp in slower)
                 + "; what the FLOP count leaves out costs them more than it costs the forward: recomputing each "
                 "score's exp, the elementwise dS = P ∘ (dP − D) per score, the reductions over query rows for dK "
                 "and dV, dQ's additions in a fixed key-block order (which also serialises threads on dQ) and, for "
                 "naive kernels, writing and reading P and dS, 8 bytes per score.")
    if faster:
        text += (" Shorter: " + ", ".join(f"{fmt.code(sp.kernel)} ({fmt.threads(sp.threads, all_threads)})"
                                           for sp in faster)
                 + "; their backward does more FLOPs per exp and per byte than their forward (10d against 4d per "
                 "score), and those FLOPs are the products the kernel is good at.")
    s.add(Paragraph(text))
    sums = [r.step_over_sum for r in ratios if r.step is not None]
    if sums:
        s.add(Paragraph(
            f"A training step (`pass:forward+backward`, the forward writing LSE, then the backward) takes "
            f"{fmt.ratio(min(sums))} to {fmt.ratio(max(sums))} the forward's and the backward's times added "
            f"(median {fmt.ratio(float(np.median(sums)))} over {len(sums)} points): near 1 means the two "
            "passes cost what they cost apart, with nothing lost or gained by running back to back."))
