"""How time and memory grow with the sequence length n: the fitted exponents of time, where the tiled
kernel overtakes the naive one, and the n x n score matrix against packed K and V."""
from __future__ import annotations

from .. import analysis
from ..analysis import decode as analysis_decode
from ..analysis import memory as analysis_memory
from .. import formatting as fmt
from ..document import Bullets, Document, Paragraph, Table
from ..load.results import Table as Points


# --- time ---------------------------------------------------------------------------------------

def time_vs_n(doc: Document, table: Points, figures: dict, all_threads: int) -> None:
    s = doc.section("Time: the n² of the score matrix")
    run = table.runs[0]
    s.add(Paragraph(
        "Attention at sequence length n and head dim d scores every query against every key: n² dot products "
        "of length d for S = Q Kᵀ (2n²d FLOPs), a softmax over each row of the n × n score matrix (one exp per "
        "score, plus a max and a sum), and n² weighted sums of value rows for O = P V (another 2n²d FLOPs). "
        "So once the per-call costs that grow more slowly (packing K and V, O(n·d); starting threads; the "
        "workspace) are paid for, time should grow as n²: a slope of 2 on log-log axes."))
    s.add(doc.figure(figures["fig1_time_vs_n"], "Median time per call against n on log-log axes, one "
                 "panel per head dim and thread count; b is the least-squares slope of ln t on ln n, the dotted line "
                 "an n² guide."))
    dims, counts = table.values("d"), analysis.thread_counts(table)
    header = ["kernel"] + [f"d = {d}, {fmt.threads(t, all_threads)}" for t in counts for d in dims]
    rows, two_point = [], False
    fits_by_t = {t: analysis.time_fits(table, t) for t in counts}
    for kernel in table.measured().values("kernel"):
        row = [fmt.code(kernel)]
        for t in counts:
            for d in dims:
                fit = fits_by_t[t].get((kernel, d))
                if fit is None:
                    row.append("")
                    continue
                mark = ""
                if analysis.through_two_lengths(fit):
                    mark, two_point = " †", True
                row.append(f"{fit.slope:.2f}{mark}")
        rows.append(row)
    s.add(Table(header, rows, caption="Fitted exponent b of time ∝ n^b (every measured n, not causal):"))
    notes = []
    r2 = analysis.r2_range(fit for fits in fits_by_t.values() for fit in fits.values())
    if r2:
        notes.append(f"R² of the fits with three or more lengths is between {r2[0]:.4f} and {r2[1]:.4f}")
    if two_point:
        notes.append("† marks a fit through only two lengths (the others were skipped): exact by construction, "
                     "so it says less")
    if notes:
        s.add(Paragraph("; ".join(notes) + "."))
    tiled, naive = analysis.simd_kernel(table, "tiled"), analysis.simd_kernel(table, "naive")
    fits = fits_by_t.get(1, {})
    both, steeper = analysis.steeper_exponents(fits, naive, tiled, dims)
    if both:
        s.add(Paragraph(
            f"On one thread the naive SIMD kernel's time grows faster than the tiled one's at {len(steeper)} of "
            f"{len(both)} head dims (" + ", ".join(f"d = {d}: {fits[(naive, d)].slope:.2f} against "
                                                    f"{fits[(tiled, d)].slope:.2f}" for d in both) + ")."))
    l2, l3 = analysis_memory.cache_fit_n(run, 2), analysis_memory.cache_fit_n(run, 3)
    cache_sentence = ""
    if l2 and l3 and analysis_decode.l3_shared_and_huge(run):
        cache_sentence = (f" On this machine the fp32 score matrix of one head fits in L2 up to n ≈ {fmt.count(l2)} "
                          f"({fmt.bytes_(run.cache_bytes(2))}); the L3 it reports ({fmt.bytes_(run.cache_bytes(3))}) "
                          "is a whole socket's, shared with cores this run does not see, so its size does not say "
                          "where the matrix leaves the caches (the cost model's section measures it).")
    elif l2 and l3:
        cache_sentence = (f" On this machine the fp32 score matrix of one head fits in L2 up to n ≈ {fmt.count(l2)} "
                          f"({fmt.bytes_(run.cache_bytes(2))}) and in L3 up to n ≈ {fmt.count(l3)} "
                          f"({fmt.bytes_(run.cache_bytes(3))}); past that, every pass of a naive kernel streams "
                          f"4n² bytes from DRAM.")
    s.add(Paragraph(
        "An exponent below 2 means that costs linear in n (or fixed) still weigh at the small lengths, so the "
        "curve steepens towards 2 as n grows; above 2, each score costs more as n grows, which for a naive "
        "kernel is its score matrix falling out of cache: it writes the n × n matrix once, reads and rewrites it "
        "to normalise (softmax), and reads it again to blend the values." + cache_sentence +
        " A tiled kernel keeps one block of scores and its running max m and sum l in cache whatever n is."))


# --- crossover ----------------------------------------------------------------------------------

def crossover(doc: Document, table: Points, all_threads: int) -> None:
    pairs = analysis.crossover_pairs(table)
    if not pairs:
        return
    s = doc.section("Tiled against naive: where the online softmax wins")
    rows = []
    for name, tiled, naive in pairs:
        for t in analysis.thread_counts(table):
            for d in table.values("d"):
                c = analysis.crossover(table, tiled, naive, d, t)
                if len(c.n):
                    rows.append([name, f"{fmt.code(tiled)} vs {fmt.code(naive)}", str(d), str(t), c.sentence()])
    s.add(Table(["pair", "kernels", "d", "threads", "where tiled overtakes naive (median times, not causal)"], rows,
                align="llrrl"))
    s.add(Paragraph(
        "The crossover is the smallest measured n from which the tiled kernel stays faster, interpolated "
        "between the two measured lengths around it (where ln(naive time / tiled time) crosses 0). At small n "
        "the naive kernel's score matrix sits in cache and its three passes are cheap, while the tiled kernel "
        "pays for the online softmax: per key block it finds the block's row max, rescales its running sum l "
        "and its accumulator O by exp(m_old − m_new) when the max grows, and only then blends the values. As n "
        "grows, the naive kernel's n² scores leave the caches and its passes become memory traffic, while the "
        "tiled kernel's traffic stays at reading Q, K, V and writing O. Against OpenBLAS the question is "
        "different: two `cblas_sgemm` calls are fast matrix products, but the softmax between them is a plain "
        "pass over the n × n matrix in memory."))


# --- memory -------------------------------------------------------------------------------------

def memory(doc: Document, table: Points, figures: dict) -> None:
    s = doc.section("Memory: n² scores against packed K and V")
    run = table.runs[0]
    d = analysis_memory.memory_d(table)
    curves = analysis_memory.memory_curves(table, d) if d is not None else []
    s.add(Paragraph(
        "The naive kernel materialises the whole n × n score matrix, 4n² bytes in fp32, because the softmax of "
        "a row needs that row's max and sum before any weight is known. The tiled kernel (FlashAttention's online "
        "softmax) keeps per query row a running max m, a running sum l and an output accumulator, and sees the "
        "keys one block at a time, so its scratch is the packed copy of K and V (O(n·d)) plus a fixed block of "
        "scores: slope 2 against slope 1 on log-log axes."))
    s.add(doc.figure(figures["fig2_memory_vs_n"], f"Measured scratch (the workspace's peak, packed K and V "
                 f"included) and process RSS high-water mark against n at d = {d}, one thread, with the analytic "
                 f"score matrix, this machine's RAM and the naive memory budget; dashed: least-squares models "
                 f"extrapolated to n = {fmt.count(analysis_memory.EXTRAPOLATE_N)}."))
    if not curves:
        return
    by = analysis_memory.curves_by_strategy(curves)
    ns = analysis_memory.measured_lengths(curves)
    header = ["n", "score matrix 4n²"]
    columns = []
    for strategy in ("naive", "tiled"):
        for measure, label in (("scratch_bytes", "scratch"), ("rss_peak_bytes", "RSS")):
            c = by.get((strategy, measure))
            if c is not None:
                header.append(f"{fmt.code(c.kernel)} {label}")
                columns.append(dict(zip(c.n.astype(int), c.bytes)))
    rows = [[fmt.count(n), fmt.bytes_(analysis_memory.score_matrix_bytes(n))]
            + [fmt.bytes_(col[n]) if n in col else "" for col in columns] for n in ns]
    long_context = analysis_memory.long_context(run, curves)
    n_end = long_context.n
    extrapolated = [f"**{fmt.count(n_end)}** (extrapolated)", f"**{fmt.bytes_(long_context.score_matrix_bytes)}**"]
    for strategy in ("naive", "tiled"):
        for measure in ("scratch_bytes", "rss_peak_bytes"):
            c = by.get((strategy, measure))
            if c is None:
                continue
            end = c.extrapolated(n_end)
            extrapolated.append(fmt.bytes_(end) if end is not None else "")
    rows.append(extrapolated)
    s.add(Table(header, rows, caption=f"Measured bytes at d = {d}, one thread, not causal:"))
    sentences = []
    for strategy in ("naive", "tiled"):
        c = by.get((strategy, "scratch_bytes"))
        if c is None or c.fit is None:
            continue
        sentences.append(
            f"{fmt.code(c.kernel)} scratch: log-log slope {c.fit.slope:.2f} over n = {fmt.count(c.fit.x_min)} to "
            f"{fmt.count(c.fit.x_max)} (R² {c.fit.r2:.4f})"
            + (f"; least-squares model {c.model.describe('bytes')}" if c.model else ""))
    if sentences:
        s.add(Bullets(sentences))
    facts = [f"At n = {fmt.count(n_end)}, one head's fp32 score matrix is {fmt.count(n_end)}² × 4 bytes = "
             f"{fmt.bytes_(long_context.score_matrix_bytes)}"]
    if long_context.ram_share is not None:
        facts.append(f"{fmt.ratio(long_context.ram_share)} this machine's {fmt.bytes_(run.memory_bytes)} of RAM; "
                     f"the largest n whose score matrix fits in RAM at all is {fmt.count(long_context.longest_in_ram)}")
    if long_context.longest_in_budget is not None:
        facts.append(f"the naive kernels refuse a score matrix over their memory budget "
                     f"({fmt.bytes_(run.naive_memory_budget_bytes)}, half of RAM), i.e. n over "
                     f"{fmt.count(long_context.longest_in_budget)}")
    if long_context.tiled_scratch_bytes is not None:
        facts.append(f"the tiled kernel's scratch extrapolates to {fmt.bytes_(long_context.tiled_scratch_bytes)}, "
                     f"{fmt.ratio(long_context.tiled_saving)} less than the score matrix alone")
    s.add(Paragraph("; ".join(facts) + ". A real model has many heads and layers, so multiply accordingly: "
                    "this is why long-context attention is computed tiled."))
    rss = [c for c in curves if c.measure == "rss_peak_bytes"]
    if rss:
        s.add(Paragraph(
            "The RSS curves are the whole benchmark process's resident high-water mark during each point, reset "
            "before it: they include the input tensors that the benchmark keeps for every shape it has measured, "
            "so they rise with the order of the run and bound the kernel's own memory from above; their slopes ("
            + ", ".join(f"{fmt.code(c.kernel)} {c.fit.slope:.2f}" for c in rss if c.fit) +
            ") are not the kernels'. The scratch counter is the kernels' own measured peak."))
