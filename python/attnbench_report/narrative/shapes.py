"""The shapes beyond the square one-head matrix: causal masking, decoding (one query row) and
grouped-query attention."""
from __future__ import annotations

from .. import analysis
from ..analysis import decode as analysis_decode
from ..analysis import memory as analysis_memory
from ..analysis import throughput as analysis_throughput
from .. import formatting as fmt
from ..document import Document, Paragraph, Table
from ..load.results import Table as Points


# --- causal -------------------------------------------------------------------------------------

def causal(doc: Document, table: Points, all_threads: int) -> None:
    ratios = analysis.causal_ratios(table)
    if not ratios:
        return
    s = doc.section("Causal masking")
    rows = [[fmt.code(c.full.kernel), fmt.count(c.full.n), str(c.full.d), str(c.full.threads),
             fmt.ms(c.full.time_ms_median), fmt.ms(c.causal.time_ms_median), fmt.ratio(c.ratio), fmt.ratio(c.ideal)]
            for c in ratios]
    s.add(Table(["kernel", "n", "d", "threads", "not causal", "causal", "time ratio", "ideal"], rows))
    s.add(Paragraph(
        "Under the causal mask query i sees keys 0 to i: n(n+1)/2 of the n² scores, so the ideal time ratio is "
        "2n/(n+1). Key blocks wholly above the diagonal are skipped, not masked; the blocks on the diagonal are "
        "computed and masked, which costs relatively more at small n, where the diagonal is a large share of "
        "the blocks."))


# --- decoding and grouped-query attention -------------------------------------------------------

def decode_and_gqa(doc: Document, table: Points, all_threads: int) -> None:
    decode = table.measured().where(family="decode").sorted()
    gqa = table.measured().where(family="gqa").sorted()
    if not len(decode) and not len(gqa):
        return
    run = table.runs[0]
    s = doc.section("Decoding and grouped-query attention")
    if len(decode):
        rows = []
        for r in decode:
            triad_pct = analysis_throughput.triad_pct(run, r)
            rows.append([fmt.code(r.kernel), r.shape, str(r.d), str(r.threads), fmt.ms(r.time_ms_median),
                         fmt.sig(r.gflops_median), fmt.sig(analysis_throughput.arithmetic_intensity(r)),
                         fmt.sig(analysis_throughput.moved_gbs(r)), fmt.pct(triad_pct) if triad_pct is not None else "",
                         fmt.bytes_(r.scratch_bytes_median)])
        s.add(Table(["kernel", "shape", "d", "threads", "time", "GFLOP/s", "FLOP/byte", "GB/s moved", "% of triad",
                     "scratch"], rows, align="llrrrrrrrr",
                    caption="Decoding: one new query against the keys of the whole context:"))
        example = decode.records[0]
        text = (f"One query row scores every key once: 4·kv·d FLOPs against reading all of K and V, so the "
                f"intensity is about {fmt.sig(analysis_throughput.arithmetic_intensity(example))} FLOP/byte, far left of the "
                f"ridge: decoding is bound by moving K and V, and its figure of merit is GB/s against the triad "
                f"bandwidth, not GFLOP/s against the FMA peak. A tiled kernel splits such a shape's keys into chunks "
                f"computed as separate tasks and merged by log-sum-exp, so several threads can stream K and V at once.")
        if (analysis_memory.fits_in_cache(run, example.bytes_moved_median, 3)
                and not analysis_decode.l3_shared_and_huge(run)):
            text += (f" Here the {fmt.bytes_(example.bytes_moved_median)} a call moves (K and V, mostly) fit in the "
                     f"{fmt.bytes_(run.cache_bytes(3))} L3, so repeated calls read them from cache and can pass the DRAM triad.")
        s.add(Paragraph(text))
    if len(gqa):
        rows = []
        for r in gqa:
            rows.append([fmt.code(r.kernel), r.shape, str(r.d), str(r.threads), fmt.ms(r.time_ms_median),
                         fmt.sig(r.gflops_median), fmt.bytes_(r.scratch_bytes_median)])
        s.add(Table(["kernel", "shape", "d", "threads", "time", "GFLOP/s", "scratch"], rows, align="llrrrrr",
                    caption="Grouped-query attention: several query heads share one key/value head:"))
        facts = [f"{fmt.code(gain.kernel)} on {fmt.threads(gain.threads, all_threads)}: {gain.grouped.heads} query "
                 f"heads over {gain.grouped.kv_heads} kv heads run {fmt.ratio(gain.speedup)} as fast as over "
                 f"{gain.full.kv_heads}, with {fmt.ratio(gain.scratch_saving)} less scratch"
                 for gain in analysis.grouping_gains(table)]
        text = ("The FLOPs are the same with or without grouping (every query head scores every key), but K and V are "
                "packed once per key/value head and read by every query head of its group, so fewer key/value heads "
                "mean less packing, less scratch and less K/V traffic.")
        if facts:
            text += " Measured: " + "; ".join(facts) + "."
        s.add(Paragraph(text))
