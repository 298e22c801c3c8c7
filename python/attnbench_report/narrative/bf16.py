"""bf16 against fp32: the bf16-products kernel beside the float32 tiled SIMD kernel at the same
points of the matrix (whose repetitions the study interleaves), each against its own measured peak:
the FMA peak for float32, the vdpbf16ps peak for the AVX512_BF16 kernel, the AMX tile peak for the
AMX one. Every number comes from the run's JSON."""
from __future__ import annotations

import math
import statistics

from .. import analysis
from .. import formatting as fmt
from ..analysis.contenders import fastest_gflops
from ..document import Bullets, Document, Paragraph, Table
from ..load.results import Table as Points

TITLE = "bf16 against fp32"


def _bf16_peak(run, threads: int) -> float | None:
    return run._number(f"bf16_peak_gflops_threads_{threads}")


def _is_amx(kernel: str) -> bool:
    return kernel.endswith("/amxbf16")


def _amx_peak(run, threads: int) -> float | None:
    return run._number(f"amx_peak_gflops_threads_{threads}")


def _peak(run, kernel: str, threads: int) -> float | None:
    """The measured peak of the products `kernel` runs on: AMX tiles or vdpbf16ps."""
    return _amx_peak(run, threads) if _is_amx(kernel) else _bf16_peak(run, threads)


def _peak_name(kernel: str) -> str:
    return "the AMX tile peak" if _is_amx(kernel) else "the vdpbf16ps peak"


def _kernels(found: list) -> list:
    """The bf16 kernels of the pairs, in the order they appear."""
    return list(dict.fromkeys(b.kernel for _, b in found))


def pairs(table: Points, pass_: str = "forward") -> list:
    """(fp32 record, bf16 record) at every point of the pass both measured: the bf16 kernel against
    the float32 tiled SIMD kernel the dispatcher chose."""
    bf16 = table.bf16().where(pass_=pass_).measured()
    fp32_kernel = analysis.simd_kernel(table.forward().matrix().measured(), "tiled")
    if not len(bf16) or fp32_kernel is None:
        return []
    fp32 = table.matrix().where(pass_=pass_).measured().where(kernel=fp32_kernel)
    out = []
    for b in sorted(bf16.where(strategy="tiled", backend="simd-bf16"),
                   key=lambda r: (r.causal, r.d, r.threads, r.n, r.kernel)):
        match = fp32.where(n=b.n, d=b.d, threads=b.threads, causal=b.causal).records
        if match:
            out.append((match[0], b))
    return out


def _speedup(f, b) -> float:
    """bf16's speed over fp32's: fastest repetitions where both have one (compute-bound), else medians."""
    fa, fb = fastest_gflops(f), fastest_gflops(b)
    if fa and fb:
        return fb / fa
    return b.gflops_median / f.gflops_median


def summary_item(table: Points) -> str:
    everything = pairs(table)
    if not everything:
        return ""
    kernel = table.runs[0].dispatch("tiled/simd-bf16")
    if kernel not in _kernels(everything):
        kernel = _kernels(everything)[0]
    found = [(f, b) for f, b in everything if b.kernel == kernel]
    speedups = [_speedup(f, b) for f, b in found]
    text = (f"bf16 products ({fmt.code(kernel)}): {fmt.ratio(min(speedups))} to {fmt.ratio(max(speedups))} the speed "
            f"of fp32 (median {fmt.ratio(statistics.median(speedups))} over {len(found)} points)")
    backward = [_speedup(f, b) for f, b in pairs(table, "backward") if b.kernel == kernel]
    if backward:
        text += f", the backward {fmt.ratio(statistics.median(backward))} (median over {len(backward)} points)"
    return text + "."


def section(doc: Document, table: Points, all_threads: int, phases: list | None = None) -> None:
    """The section, when the run measured a bf16-products kernel beside the float32 one; `phases`:
    the phases window's points (model.load_phases), where it timed both kernels' phases."""
    found = pairs(table)
    if not found:
        return
    run = table.runs[0]
    s = doc.section(TITLE)
    kernels = _kernels(found)
    several = len(kernels) > 1
    fp32_kernel = found[0][0].kernel
    rows, shares = [], {k: [] for k in kernels}
    for f, b in found:
        fma, bf = run.fma_peak_gflops(f.threads), _peak(run, b.kernel, b.threads)
        speed_f, speed_b = fastest_gflops(f) or f.gflops_median, fastest_gflops(b) or b.gflops_median
        share_b = 100 * speed_b / bf if bf else math.nan
        shares[b.kernel].append((share_b, b))
        rows.append(([fmt.code(b.kernel)] if several else [])
                    + [fmt.count(f.n), str(f.d), fmt.threads(f.threads, all_threads), "yes" if f.causal else "no",
                       fmt.ms(f.time_ms_median), fmt.ms(b.time_ms_median), fmt.ratio(_speedup(f, b)),
                       fmt.pct(100 * speed_f / fma if fma else math.nan, 0), fmt.pct(share_b, 0)])
    peaks = []
    for t in sorted({f.threads for f, _ in found}):
        fma, bf = run.fma_peak_gflops(t), _bf16_peak(run, t)
        if fma and bf:
            peaks.append(f"{fmt.sig(bf)} against {fmt.sig(fma)} GFLOP/s on {fmt.threads(t, all_threads)} "
                         f"({fmt.ratio(bf / fma)})")
    amx_peaks = [f"{fmt.sig(amx)} GFLOP/s on {fmt.threads(t, all_threads)} ({fmt.ratio(amx / fma)} the FMA peak)"
                 for t in sorted({f.threads for f, _ in found})
                 for fma, amx in [(run.fma_peak_gflops(t), _amx_peak(run, t))] if fma and amx]
    vector = [k for k in kernels if not _is_amx(k)]
    tiles = [k for k in kernels if _is_amx(k)]
    intro = (f"{fmt.code(vector[0]) if vector else 'The bf16 kernel'} computes Q Kᵀ and P V as bfloat16 products "
             "accumulated in float32 (`vdpbf16ps`: 16 pairs of products added to 16 float32 lanes, twice the FLOPs of "
             "an fp32 FMA instruction), Q, K and V rounded to bfloat16 once, the weights P rounded once before P V; the "
             "scores, the online softmax and the accumulator stay float32.")
    if tiles:
        intro += (f" {fmt.code(tiles[0])} is the same algorithm with both products on AMX tiles (`TDPBF16PS`: a "
                  "16 x 32 by 32 x 16 bfloat16 tile product into 16 x 16 float32 sums, 16,384 FLOPs an instruction), "
                  "16 query rows a tile, the softmax on AVX-512 as before.")
    intro += (f" Beside {'them' if several else 'it'}, {fmt.code(fp32_kernel)} at the same points, their repetitions "
              "interleaved in one window. The measured product peaks, bf16 (`vdpbf16ps`) against fp32: "
              + ("; ".join(peaks) if peaks else "not measured in this run") + ".")
    if tiles:
        intro += " The AMX tile peak: " + ("; ".join(amx_peaks) if amx_peaks else "not measured in this run") + "."
    s.add(Paragraph(intro))
    s.add(Table((["bf16 kernel"] if several else [])
                + ["n", "d", "threads", "causal", "fp32 time", "bf16 time", "bf16 speed over fp32",
                   "fp32 % of FMA peak", "bf16 % of its peak"], rows,
                caption="Median times; the speed ratio and the shares read each side's fastest repetition "
                        "(compute-bound points: noise only adds time). Each bf16 kernel's share is of the peak of "
                        "the products it runs on."))
    texts = [_forward_text(run, k, [(f, b) for f, b in found if b.kernel == k], shares[k], several, all_threads)
             for k in kernels]
    if tiles and vector:
        on_vectors = {(b.n, b.d, b.threads, b.causal): b for _, b in found if b.kernel == vector[0]}
        over = [_speedup(on_vectors[key], a) for _, a in found if a.kernel == tiles[0]
                for key in [(a.n, a.d, a.threads, a.causal)] if key in on_vectors]
        if over:
            texts.append(f"On AMX tiles the kernel runs {fmt.ratio(min(over))} to {fmt.ratio(max(over))} the speed of "
                         f"{fmt.code(vector[0])} (median {fmt.ratio(statistics.median(over))}): its products take a "
                         "fraction of their `vdpbf16ps` time, the float32 softmax between them (the same work per "
                         "score) does not, so the softmax sets its pace and its share of the tile peak stays low")
    s.add(Paragraph(". ".join(texts) + "."))
    timed_phases = _phases(s, run, phases or [], fp32_kernel, kernels)
    _backward(s, table, all_threads)
    s.add(Bullets([
        "Accuracy: the kernels are tested against the float64 oracle on the bfloat16-rounded inputs, within the "
        "float32 bound plus one bfloat16 rounding of the weights (docs/testing.md)."]
        + ([] if tiles else ["Not measured here: AMX tiles (this CPU or its OS does not offer them)"
                             + ("." if timed_phases else "; and the bf16 kernel's phases (the phases window timed "
                                                         "float32 kernels only).")])
        + (["Not measured here: the bf16 kernel's phases (the phases window timed float32 kernels only)."]
           if tiles and not timed_phases else [])))


def _forward_text(run, kernel: str, found: list, shares: list, several: bool, all_threads: int) -> str:
    """What the forward table says of one bf16 kernel: its speed over fp32 and why."""
    speedups = [_speedup(f, b) for f, b in found]
    text = (f"{fmt.code(kernel) if several else 'bf16'} runs {fmt.ratio(min(speedups))} to "
            f"{fmt.ratio(max(speedups))} the speed of fp32 (median {fmt.ratio(statistics.median(speedups))})")
    best_share = max((x for x in shares if math.isfinite(x[0])), key=lambda x: x[0], default=None)
    if best_share is not None:
        text += (f"; at best {fmt.pct(best_share[0], 0)} of {_peak_name(kernel)} (n = {fmt.count(best_share[1].n)}, "
                 f"d = {best_share[1].d}, {fmt.threads(best_share[1].threads, all_threads)})")
    if _is_amx(kernel):
        return text
    small = [(f, b) for f, b in found if f.d == min(x.d for x, _ in found)]
    large = [(f, b) for f, b in found if f.d == max(x.d for x, _ in found)]
    ratios = [bf / fma for t in sorted({f.threads for f, _ in found})
              for fma, bf in [(run.fma_peak_gflops(t), _bf16_peak(run, t))] if fma and bf]
    if ratios and max(ratios) < 1:
        # vdpbf16ps slower than the FMAs it replaces: the products cannot gain, the softmax is the same
        text += (f". Here `vdpbf16ps` delivers {fmt.ratio(min(ratios))} to {fmt.ratio(max(ratios))} of the fp32 FMA "
                 f"rate (the measured peaks), so bf16 products take longer than fp32 ones on this CPU and "
                 f"{fmt.code(kernel) if several else 'the bf16 kernel'} can only be slower; it runs above that ratio "
                 "because the softmax between the products (exp, max, sum, in float32 either way) takes the same time "
                 "in both. What it buys here is half the bytes of K and V (the decode section's types)")
    elif small and large and small[0][0].d != large[0][0].d:
        text += (f". The gain grows with d (median {fmt.ratio(statistics.median(_speedup(f, b) for f, b in small))} "
                 f"at d = {small[0][0].d}, {fmt.ratio(statistics.median(_speedup(f, b) for f, b in large))} at "
                 f"d = {large[0][0].d}): the products halve their instructions, the softmax between them (exp, max, "
                 "sum and the rounding of P, per score whatever d) does not, so its share of the time grows as d "
                 "shrinks")
    return text


def _phases(s, run, phases: list, fp32_kernel: str, kernels: list) -> bool:
    """Each kernel's phases timed alone (the phases window, one thread), at the points where the
    window timed the fp32 kernel and a bf16 one: each product against its own peak, and the
    softmax's share of the call. Whether it had any."""
    by_point = {(m.kernel, m.n, m.d): m for m in phases}
    timed = {k: sorted((n, d) for name, n, d in by_point if name == k and (fp32_kernel, n, d) in by_point)
             for k in kernels}
    timed = {k: points for k, points in timed.items() if points}
    if not timed:
        return False
    rows, sentences = [], []
    for n, d in sorted({p for points in timed.values() for p in points}):
        each = 2.0 * n * n * d  # FLOPs of one product
        for name in [fp32_kernel] + [k for k in timed if (n, d) in timed[k]]:
            m = by_point[(name, n, d)]
            peak = run.fma_peak_gflops(1) if name == fp32_kernel else _peak(run, name, 1)

            def of_peak(ms: float) -> str:
                return fmt.pct(100 * each / (ms * 1e6) / peak, 0) if peak and ms > 0 else "–"

            rows.append([fmt.code(name), fmt.count(n), str(d), fmt.ms(m.ms["all"]),
                         f"{fmt.ms(m.ms['score'])} ({of_peak(m.ms['score'])})",
                         f"{fmt.ms(m.ms['softmax'])} ({fmt.pct(100 * m.share['softmax'], 0)})",
                         f"{fmt.ms(m.ms['blend'])} ({of_peak(m.ms['blend'])})"])
    s.add(Table(["kernel", "n", "d", "whole kernel", "Q Kᵀ (of its peak)", "softmax (of the kernel)",
                 "P V (of its peak)"], rows,
                caption="Phases alone, one thread (the phases window, `phases.json`: the kernel's own loops with one "
                        "phase at a time, in rotating rounds; the bf16 kernel's softmax includes rounding P to "
                        "bfloat16). Each product's share is of its own peak: the FMA peak for fp32, the "
                        "vdpbf16ps peak for the AVX512_BF16 kernel, the AMX tile peak for the AMX one:"))
    for kernel, both in timed.items():
        fp32_share = statistics.median(by_point[(fp32_kernel, n, d)].share["softmax"] for n, d in both)
        bf16_share = statistics.median(by_point[(kernel, n, d)].share["softmax"] for n, d in both)
        products = statistics.median(
            (by_point[(kernel, n, d)].ms["score"] + by_point[(kernel, n, d)].ms["blend"])
            / (by_point[(fp32_kernel, n, d)].ms["score"] + by_point[(fp32_kernel, n, d)].ms["blend"])
            for n, d in both)
        name = fmt.code(kernel) if len(timed) > 1 else "the bf16 kernel"
        sentences.append(
            f"The softmax takes {fmt.pct(100 * bf16_share, 0)} of {name}'s time against "
            f"{fmt.pct(100 * fp32_share, 0)} of the fp32 kernel's (medians over these points), its float32 work per "
            f"score the same in both (the rounding of P aside); {'its' if len(timed) > 1 else 'the bf16'} products "
            f"take {fmt.ratio(products)} the fp32 products' time here, so the softmax weighs "
            + ("more" if products < 1 else "less") + f" in {name}"
            + (", and becomes its limit first as d shrinks." if products < 1 else "."))
    s.add(Paragraph(" ".join(sentences)))
    return True


def _backward(s, table: Points, all_threads: int) -> None:
    """The bf16 backward beside the fp32 one, at the matrix's backward points."""
    found = pairs(table, "backward")
    if not found:
        return
    run = table.runs[0]
    several = len(_kernels(found)) > 1
    rows = []
    for f, b in found:
        fma, bf = run.fma_peak_gflops(f.threads), _peak(run, b.kernel, b.threads)
        speed_f, speed_b = fastest_gflops(f) or f.gflops_median, fastest_gflops(b) or b.gflops_median
        rows.append(([fmt.code(b.kernel)] if several else []) + [fmt.count(f.n), str(f.d), fmt.threads(f.threads, all_threads), fmt.ms(f.time_ms_median),
                     fmt.ms(b.time_ms_median), fmt.ratio(_speedup(f, b)),
                     fmt.pct(100 * speed_f / fma if fma else math.nan, 0),
                     fmt.pct(100 * speed_b / bf if bf else math.nan, 0)])
    s.add(Table((["bf16 kernel"] if several else [])
                + ["n", "d", "threads", "fp32 backward", "bf16 backward", "bf16 speed over fp32",
                   "fp32 % of FMA peak", "bf16 % of its peak"], rows,
                caption="The backward pass (dQ, dK, dV from the forward's O and LSE: five products of the "
                        "forward's size), median times; ratio and shares from the fastest repetitions."))
    speedups = [_speedup(f, b) for f, b in found]
    s.add(Paragraph(
        f"The bf16 backward runs {fmt.ratio(min(speedups))} to {fmt.ratio(max(speedups))} the speed of the fp32 one "
        f"(median {fmt.ratio(statistics.median(speedups))} over {len(found)} points): its five products are bf16 "
        "products too (P and dS rounded once each), its recomputed softmax and the gradients' accumulators float32"
        + ("; the AMX kernel's backward is the `vdpbf16ps` one (its tiles serve the forward only)." if several and
           any(_is_amx(k) for k in _kernels(found)) else ".")))
