"""What the kernels achieve: GFLOP/s and share of the FMA peak, the fastest kernel per cell, speedups,
the roofline and thread scaling."""
from __future__ import annotations

from .. import analysis
from ..analysis import throughput as analysis_throughput
from .. import formatting as fmt
from ..document import Document, Paragraph, Table
from ..load.results import Table as Points


# --- throughput ---------------------------------------------------------------------------------

def throughput(doc: Document, table: Points, figures: dict, all_threads: int) -> None:
    s = doc.section("Throughput and share of the peak")
    run = table.runs[0]
    s.add(doc.figure(figures["fig3_gflops_vs_n"], "GFLOP/s (4·n²·d FLOPs, or 4·n(n+1)/2·d when causal, "
                 "over the median time) against n; the black line is this machine's measured fp32 FMA peak for "
                 "that thread count."))
    counts = analysis.thread_counts(table)
    header = ["kernel"]
    for t in counts:
        header += [f"best GFLOP/s, {fmt.threads(t, all_threads)}", "at (n, d)", "% of peak"]
    rows = []
    for kernel in table.measured().values("kernel"):
        row = [fmt.code(kernel)]
        for t in counts:
            best = analysis_throughput.best_of_kernel(table.where(causal=False), kernel, t)
            if best is None:
                row += ["", "", ""]
            else:
                row += [fmt.sig(best.gflops_median), f"({best.n}, {best.d})", fmt.pct(best.pct_peak_median)]
        rows.append(row)
    peaks = ", ".join(f"{fmt.sig(run.fma_peak_gflops(t))} GFLOP/s on {fmt.threads(t, all_threads)}"
                      for t in counts if run.fma_peak_gflops(t))
    s.add(Table(header, rows, caption=f"Best median GFLOP/s per kernel, not causal, and its share of the measured "
                                      f"FMA peak ({peaks}):"))
    # head dims at a common length
    dims = table.values("d")
    if len(dims) > 1:
        header = ["kernel", "n"] + [f"d = {d}" for d in dims] + [f"d = {dims[-1]} over d = {dims[0]}"]
        by_dim = analysis_throughput.head_dim_gflops(table)
        rows = [[fmt.code(k.kernel), str(k.n)] + [fmt.sig(v) for v in k.gflops] + [fmt.ratio(k.ratio)] for k in by_dim]
        if rows:
            s.add(Table(header, rows, caption="GFLOP/s by head dim, one thread, at the largest n measured at every d:"))
            better = [k.kernel for k in by_dim if k.faster_at_largest_d]
            s.add(Paragraph(f"{len(better)} of {len(by_dim)} kernels run faster at d = {dims[-1]} than at d = {dims[0]} "
                            f"at the same n" + (f" ({', '.join(fmt.code(k) for k in better)})" if better else "") + "."))
        per_exp = ", ".join(f"{analysis_throughput.flops_per_score(d)} at d = {d}" for d in dims)
        s.add(Paragraph(
            f"Why small head dims are less efficient: per score the kernels do 4d FLOPs of multiply-add (2d in "
            f"Q Kᵀ, 2d in P V) but always one exp, a compare for the running max, an add for the sum and a scale, "
            f"and they touch each score in every softmax pass. FLOPs per exp: {per_exp}. The SIMD exp (a range "
            f"reduction, a degree-5 polynomial and 2^n built in the exponent bits: over a dozen vector instructions) "
            f"and the max, sum and scale are work that GFLOP/s, counting 4·n²·d, leaves out; the smaller d, the "
            f"larger their share of the time. The micro-kernels' loads of Q, K and V rows and the per-block "
            f"bookkeeping are also amortised over fewer FMAs. For naive kernels the memory traffic per FLOP "
            f"also grows as d shrinks: 16 bytes of score-matrix sweeps per score against 4d FLOPs."))
    flatness(s, table, all_threads)


def flatness(s, table: Points, all_threads: int) -> None:
    """Is each SIMD tiled kernel's throughput flat in n? Its GFLOP/s at each n over its own at
    FLAT_BASE_N, the verdict per row, and which ratios are within noise."""
    rows_in = analysis_throughput.tiled_flatness(table)
    if not rows_in:
        return
    base_n, tolerance = analysis_throughput.FLAT_BASE_N, analysis_throughput.FLAT_TOLERANCE
    ns = sorted({r.n for f in rows_in for r in f.later})
    header = ["kernel", "d", "threads", f"GFLOP/s at n = {fmt.count(base_n)}"] + [f"n = {fmt.count(n)}" for n in ns]
    rows, flat, falls, noise = [], 0, [], 0
    for f in rows_in:
        by_n = {r.n: r for r in f.later}
        cells = []
        for n in ns:
            r = by_n.get(n)
            if r is None:
                cells.append("")
                continue
            mark = "*" if f.noisy(r) else ""
            noise += bool(mark)
            cells.append(fmt.ratio(f.ratio(r)) + mark)
        rows.append([fmt.code(f.kernel), str(f.d), fmt.threads(f.threads, all_threads),
                     fmt.sig(analysis.best_gflops(f.base))] + cells)
        below = [r for r in f.below if not f.noisy(r)]
        if not f.below:
            flat += 1
        elif below:
            falls.append(f"{fmt.code(f.kernel)} at d = {f.d} on {fmt.threads(f.threads, all_threads)}: "
                         f"n = {', '.join(fmt.count(r.n) for r in below)}")
    s.add(Table(header, rows, caption=f"Is tiled throughput flat in n? GFLOP/s ({analysis.statistic(table)}) at each "
                                      f"n over the same kernel's at n = {fmt.count(base_n)}, same d and threads, not "
                                      f"causal; * marks a ratio within noise of the {fmt.ratio(1 - tolerance)} line "
                                      f"(its distance to the line {analysis.noise_rule(table)}):"))
    text = (f"{flat} of {len(rows_in)} rows stay within {fmt.pct(100 * tolerance, 0)} of their n = {fmt.count(base_n)} "
            f"figure at every longer n. A tiled kernel's work per key block does not depend on n, so a ratio below "
            f"{fmt.ratio(1 - tolerance)} means the memory hierarchy charges more as n grows (K and V streamed from "
            f"beyond the L2 once per query block; see the README's kernel section for what was measured).")
    if falls:
        text += " Below it, outside noise: " + "; ".join(falls) + "."
    if noise:
        text += (f" {noise} ratios are within noise (*): this statistic cannot say whether they are flat; the "
                 f"per-call interleaved measurements in the README can.")
    s.add(Paragraph(text))


# --- winners ------------------------------------------------------------------------------------

def winners(doc: Document, table: Points, figures: dict, all_threads: int) -> None:
    s = doc.section("Which kernel wins each cell")
    s.add(doc.figure(figures["fig4_heatmap"], "Median GFLOP/s of each kernel over (n, d), one thread, not "
                 "causal, on one logarithmic colour scale."))
    dims, ns = table.values("d"), table.values("n")
    floor = analysis.noise_floor(table)
    for t in analysis.thread_counts(table):
        cells = analysis.winners(table, t)
        rows = []
        for n in ns:
            row = [fmt.count(n)]
            for d in dims:
                ranked = cells.get((n, d))
                if not ranked:
                    row.append("")
                    continue
                best = ranked[0]
                text = f"{fmt.code(best.kernel)} {fmt.sig(analysis.best_gflops(best))}"
                lead = analysis.lead(ranked, floor)
                if lead is not None:
                    text += f" (+{fmt.pct(100 * lead.margin)} over {fmt.code(lead.runner_up.kernel)}"
                    text += ", within noise)" if lead.within_noise else ")"
                row.append(text)
            if any(row[1:]):
                rows.append(row)
        s.add(Table(["n"] + [f"d = {d}" for d in dims], rows, align="r" + "l" * len(dims),
                    caption=f"Fastest kernel per cell on {fmt.threads(t, all_threads)}, not causal, by its "
                            f"{analysis.statistic(table)}: its GFLOP/s there and its lead over the runner-up "
                            f"(\"within noise\" when the lead is {analysis.noise_rule(table)}):"))


# --- speedups -----------------------------------------------------------------------------------

def speedups(doc: Document, table: Points, figures: dict, all_threads: int) -> None:
    s = doc.section("Speedups")
    s.add(doc.figure(figures["fig5_speedups"], "Speedup = the baseline's median time over the kernel's at "
                 "the same point (above 1x: the first-named kernel is faster), not causal."))
    rows = []
    for c in analysis.comparisons(table):
        t = all_threads if c.threads_vs_one else 1
        for d in table.values("d"):
            speedup = analysis.speedup_range(table, c, d, t)
            if speedup is not None:
                rows.append([c.group, c.label, str(d), f"{fmt.ratio(speedup.lowest)} – {fmt.ratio(speedup.highest)}",
                             fmt.count(speedup.n_largest), fmt.ratio(speedup.at_largest)])
    if rows:
        s.add(Table(["comparison", "kernels", "d", "range over n", "largest common n", "speedup there"], rows,
                    align="llrrrr"))
    tiled = analysis.simd_kernel(table, "tiled")
    lanes = analysis.fp32_lanes(tiled)
    s.add(Paragraph(
        "SIMD over scalar: the scalar kernels are compiled with the vectoriser off, so this is what explicit "
        "vectors give: up to the lane count (" + (f"{lanes} fp32 lanes for {fmt.code(tiled)}; " if lanes else "") +
        ", ".join(f"{n} for {isa}" for isa, n in analysis.SIMD_LANES.items()) + "), more when fused multiply-add and register blocking keep "
        "more operations in flight than the scalar loop can. Explicit SIMD over auto-vectorised compares the "
        "AVX2 kernels against the same scalar source compiled with `-O3 -mavx2 -mfma`: without `-ffast-math` "
        "the compiler may not reorder a dot product's sum, so Q Kᵀ stays scalar. Threads: all cores over one; "
        "at small n there are few tasks and the start-up is not amortised. Tiled over naive: the online "
        "softmax against the materialised score matrix (see the crossover). Over OpenBLAS: every kernel against "
        "the baseline that NumPy users get."))


# --- roofline -----------------------------------------------------------------------------------

def roofline(doc: Document, table: Points, figures: dict, all_threads: int) -> None:
    s = doc.section("Roofline")
    run = table.runs[0]
    s.add(doc.figure(figures["fig6_roofline"], "Each measured point's arithmetic intensity (flops_per_call / "
                 "bytes_moved, the compulsory traffic) against its GFLOP/s, under the roofs min(peak, intensity × "
                 "triad bandwidth) measured on this machine."))
    ridges = []
    for t in analysis.thread_counts(table):
        r = analysis_throughput.ridge(run, t)
        if r:
            ridges.append(f"{fmt.sig(r)} FLOP/byte on {fmt.threads(t, all_threads)} "
                          f"({fmt.sig(run.fma_peak_gflops(t))} GFLOP/s ÷ {fmt.sig(run.triad_gbs(t))} GB/s)")
    measured = table.measured().where(causal=False, threads=1)
    rows = [[fmt.code(p.record.kernel), str(p.record.d), fmt.count(p.record.n), fmt.sig(p.intensity),
             fmt.sig(p.record.gflops_median), fmt.sig(p.roof), fmt.pct(p.roof_pct) if p.roof_pct is not None else "",
             p.bound or ""]
            for p in analysis_throughput.roofline_at_largest_n(measured, run)]
    s.add(Paragraph(
        "The benchmark's traffic model (`bytes_moved`) counts what a kernel must move at least: Q, K and V read "
        "and O written once, 16nd bytes; a naive kernel also writes its score matrix, reads and rewrites it to "
        "normalise and reads it again to blend, 16 bytes per score. With 4d FLOPs per score, a naive kernel's "
        "intensity is capped near d/4 FLOP/byte however long the sequence, while a tiled kernel's is "
        "4n²d / 16nd = n/4 and grows with n. The ridge point, where the bandwidth roof meets the peak, is "
        + ("; ".join(ridges) if ridges else "not known (the run has no measured ceilings)") + "."))
    if rows:
        s.add(Table(["kernel", "d", "n", "FLOP/byte", "GFLOP/s", "roof GFLOP/s", "% of roof", "bound by the model"], rows,
                    caption="One thread, each kernel's largest measured n per head dim:"))
    if analysis_throughput.ridge(run, 1):
        s.add(Paragraph(_roofline_reading(measured, run)))


def _roofline_reading(measured: Points, run) -> str:
    """What the one-thread points say against the roofs, in numbers."""
    right, left = analysis_throughput.sides_of_ridge(measured, run)
    parts = [f"On one thread, {right} of {len(measured)} points lie right of the ridge "
             f"(compute-bound by the model) and {left} left of it (memory-bound)."]
    falls = [f"{fmt.code(f.kernel)} at d = {f.d} from {fmt.sig(f.best.gflops_median)} GFLOP/s (n = {f.best.n}) to "
             f"{fmt.sig(f.last.gflops_median)} (n = {f.last.n})" for f in analysis_throughput.throughput_falls(measured)]
    if falls:
        parts.append("Yet naive kernels lose throughput as n grows although their modelled intensity barely "
                     "moves (it approaches d/4): " + "; ".join(falls) + ". The model counts compulsory traffic only; what it leaves "
                     "out is the score matrix leaving the caches, so each softmax pass really goes to DRAM, and the "
                     "softmax work that is not FMA.")
    slow = [f"{fmt.code(kernel)} ({fmt.pct(100 * share)})"
            for kernel, share in analysis_throughput.instruction_bound(measured, run)]
    if slow:
        parts.append("Kernels that stay under a fifth of their roof at every point are limited by the instructions "
                     "they issue, not by memory or the FMA units' peak: " + ", ".join(slow) + " at best.")
    return " ".join(parts)


# --- threads ------------------------------------------------------------------------------------

def thread_scaling(doc: Document, table: Points, figures: dict, all_threads: int) -> None:
    s = doc.section("Thread scaling")
    run = table.runs[0]
    s.add(doc.figure(figures["fig7_thread_scaling"], f"Speedup of {all_threads} threads over one against n "
                 f"per head dim (dotted: ideal), and GFLOP/s against the thread count."))
    if all_threads == 1:
        s.add(Paragraph("Only one thread count was measured."))
        return
    rows = [[fmt.code(x.kernel), str(x.d), fmt.count(x.n), fmt.ms(x.one.time_ms_median), fmt.ms(x.many.time_ms_median),
             fmt.ratio(x.speedup), fmt.pct(x.efficiency_pct, 0)]
            for x in analysis.thread_scaling(table, all_threads)]
    s.add(Table(["kernel", "d", "n", "1 thread", f"{all_threads} threads", "speedup", "efficiency"], rows,
                caption=f"At each kernel's largest n measured on both 1 and {all_threads} threads:"))
    s.add(Paragraph(
        f"On more than one thread, work is split into {run.tasks_phrase()} of one head under `tbb::parallel_for`, "
        f"so a length n gives n / {run.rows_per_task() or 'that many'} tasks: few at small n, where starting {all_threads} threads and packing K and V are not "
        f"amortised. Efficiency is speedup / threads; on a machine whose cores "
        f"are shared with other work it also measures that contention."))
