"""The shapes beyond the square one-head matrix: causal masking, decoding (one query row) and
grouped-query attention."""
from __future__ import annotations

import analysis
import analysis_throughput
import formatting as fmt
from document import Document, Paragraph, Table
from loader import Table as Points


# --- causal -------------------------------------------------------------------------------------

def causal(doc: Document, table: Points, all_threads: int) -> None:
    ratios = analysis.causal_ratios(table)
    if not ratios:
        return
    s = doc.section("Causal masking")
    rows = [[fmt.code(full.kernel), fmt.count(full.n), str(full.d), str(full.threads), fmt.ms(full.time_ms_median),
             fmt.ms(causal.time_ms_median), fmt.ratio(ratio), fmt.ratio(2 * full.n / (full.n + 1))]
            for full, causal, ratio in ratios]
    s.add(Table(["kernel", "n", "d", "threads", "not causal", "causal", "time ratio", "ideal"], rows))
    s.add(Paragraph(
        "Under the causal mask query i sees keys 0 to i: n(n+1)/2 of the n² scores, so the ideal time ratio is "
        "2n/(n+1). Key blocks wholly above the diagonal are skipped, not masked; the blocks on the diagonal are "
        "computed and masked, which costs relatively more at small n, where the diagonal is a large share of "
        "the blocks."))


# --- decoding and grouped-query attention ------------------------------------------------------

def decode_and_gqa(doc: Document, table: Points, all_threads: int) -> None:
    decode = table.measured().where(family="decode").sorted()
    gqa = table.measured().where(family="gqa").sorted()
    if not len(decode) and not len(gqa):
        return
    run = table.runs[0]
    s = doc.section("Decoding and grouped-query attention")
    if len(decode):
        rows, rates = [], []
        for r in decode:
            gbs = r.bytes_moved_median / (r.time_ms_median * 1e6)  # bytes per ms -> GB/s
            triad = run.triad_gbs(r.threads)
            rates.append((r, gbs))
            rows.append([fmt.code(r.kernel), r.shape, str(r.d), str(r.threads), fmt.ms(r.time_ms_median),
                         fmt.sig(r.gflops_median), fmt.sig(analysis_throughput.arithmetic_intensity(r)), fmt.sig(gbs),
                         fmt.pct(100 * gbs / triad) if triad else "", fmt.bytes_(r.scratch_bytes_median)])
        s.add(Table(["kernel", "shape", "d", "threads", "time", "GFLOP/s", "FLOP/byte", "GB/s moved", "% of triad",
                     "scratch"], rows, align="llrrrrrrrr",
                    caption="Decoding: one new query against the keys of the whole context:"))
        example = decode.records[0]
        l3 = run.cache_bytes(3)
        text = (f"One query row scores every key once: 4·kv·d FLOPs against reading all of K and V, so the "
                f"intensity is about {fmt.sig(analysis_throughput.arithmetic_intensity(example))} FLOP/byte, far left of the "
                f"ridge: decoding is bound by moving K and V, and its figure of merit is GB/s against the triad "
                f"bandwidth, not GFLOP/s against the FMA peak. A tiled kernel splits such a shape's keys into chunks "
                f"computed as separate tasks and merged by log-sum-exp, so several threads can stream K and V at once.")
        if l3 and example.bytes_moved_median < l3:
            text += (f" Here the {fmt.bytes_(example.bytes_moved_median)} a call moves (K and V, mostly) fit in the "
                     f"{fmt.bytes_(l3)} L3, so repeated calls read them from cache and can pass the DRAM triad.")
        s.add(Paragraph(text))
    if len(gqa):
        rows = []
        for r in gqa:
            rows.append([fmt.code(r.kernel), r.shape, str(r.d), str(r.threads), fmt.ms(r.time_ms_median),
                         fmt.sig(r.gflops_median), fmt.bytes_(r.scratch_bytes_median)])
        s.add(Table(["kernel", "shape", "d", "threads", "time", "GFLOP/s", "scratch"], rows, align="llrrrrr",
                    caption="Grouped-query attention: several query heads share one key/value head:"))
        facts = []
        for kernel in gqa.values("kernel"):
            for t in gqa.values("threads"):
                mine = gqa.where(kernel=kernel, threads=t).records
                full = [r for r in mine if r.kv_heads == r.heads]
                grouped = [r for r in mine if r.kv_heads < r.heads]
                for f in full:
                    for g in grouped:
                        if (g.heads, g.q_len, g.kv_len, g.d) == (f.heads, f.q_len, f.kv_len, f.d):
                            facts.append(f"{fmt.code(kernel)} on {fmt.threads(t, all_threads)}: {g.heads} query heads over "
                                         f"{g.kv_heads} kv heads run {fmt.ratio(f.time_ms_median / g.time_ms_median)} "
                                         f"as fast as over {f.kv_heads}, with {fmt.ratio(f.scratch_bytes_median / g.scratch_bytes_median)} "
                                         f"less scratch")
        text = ("The FLOPs are the same with or without grouping (every query head scores every key), but K and V are "
                "packed once per key/value head and read by every query head of its group, so fewer key/value heads "
                "mean less packing, less scratch and less K/V traffic.")
        if facts:
            text += " Measured: " + "; ".join(facts) + "."
        s.add(Paragraph(text))
