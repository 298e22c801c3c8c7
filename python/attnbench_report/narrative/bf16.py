"""bf16 against fp32: the bf16-products kernel beside the float32 tiled SIMD kernel at the same
points of the matrix (whose repetitions the study interleaves), each against its own measured peak:
the FMA peak for float32, the vdpbf16ps peak for bf16. Every number comes from the run's JSON."""
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


def pairs(table: Points, pass_: str = "forward") -> list:
    """(fp32 record, bf16 record) at every point of the pass both measured: the bf16 kernel against
    the float32 tiled SIMD kernel the dispatcher chose."""
    bf16 = table.bf16().where(pass_=pass_).measured()
    fp32_kernel = analysis.simd_kernel(table.forward().matrix().measured(), "tiled")
    if not len(bf16) or fp32_kernel is None:
        return []
    fp32 = table.matrix().where(pass_=pass_).measured().where(kernel=fp32_kernel)
    out = []
    for b in sorted(bf16.where(strategy="tiled", backend="simd-bf16"), key=lambda r: (r.causal, r.d, r.threads, r.n)):
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
    found = pairs(table)
    if not found:
        return ""
    speedups = [_speedup(f, b) for f, b in found]
    kernel = found[0][1].kernel
    text = (f"bf16 products ({fmt.code(kernel)}): {fmt.ratio(min(speedups))} to {fmt.ratio(max(speedups))} the speed "
            f"of fp32 (median {fmt.ratio(statistics.median(speedups))} over {len(found)} points)")
    backward = [_speedup(f, b) for f, b in pairs(table, "backward")]
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
    kernel, fp32_kernel = found[0][1].kernel, found[0][0].kernel
    rows, shares = [], []
    for f, b in found:
        fma, bf = run.fma_peak_gflops(f.threads), _bf16_peak(run, b.threads)
        speed_f, speed_b = fastest_gflops(f) or f.gflops_median, fastest_gflops(b) or b.gflops_median
        share_b = 100 * speed_b / bf if bf else math.nan
        shares.append((share_b, b))
        rows.append([fmt.count(f.n), str(f.d), fmt.threads(f.threads, all_threads), "yes" if f.causal else "no",
                     fmt.ms(f.time_ms_median), fmt.ms(b.time_ms_median), fmt.ratio(_speedup(f, b)),
                     fmt.pct(100 * speed_f / fma if fma else math.nan, 0), fmt.pct(share_b, 0)])
    peaks = []
    for t in sorted({f.threads for f, _ in found}):
        fma, bf = run.fma_peak_gflops(t), _bf16_peak(run, t)
        if fma and bf:
            peaks.append(f"{fmt.sig(bf)} against {fmt.sig(fma)} GFLOP/s on {fmt.threads(t, all_threads)} "
                         f"({fmt.ratio(bf / fma)})")
    speedups = [_speedup(f, b) for f, b in found]
    best_share = max((x for x in shares if math.isfinite(x[0])), key=lambda x: x[0], default=None)
    s.add(Paragraph(
        f"{fmt.code(kernel)} computes Q Kᵀ and P V as bfloat16 products accumulated in float32 (`vdpbf16ps`: 16 "
        "pairs of products added to 16 float32 lanes, twice the FLOPs of an fp32 FMA instruction), Q, K and V "
        "rounded to bfloat16 once, the weights P rounded once before P V; the scores, the online softmax and the "
        f"accumulator stay float32. Beside it, {fmt.code(fp32_kernel)} at the same points, their repetitions "
        "interleaved in one window. The measured product peaks, bf16 against fp32: "
        + ("; ".join(peaks) if peaks else "not measured in this run") + "."))
    s.add(Table(["n", "d", "threads", "causal", "fp32 time", "bf16 time", "bf16 speed over fp32",
                 "fp32 % of FMA peak", "bf16 % of bf16 peak"], rows,
                caption="Median times; the speed ratio and the shares read each side's fastest repetition "
                        "(compute-bound points: noise only adds time)."))
    text = (f"bf16 runs {fmt.ratio(min(speedups))} to {fmt.ratio(max(speedups))} the speed of fp32 "
            f"(median {fmt.ratio(statistics.median(speedups))})")
    if best_share is not None:
        text += (f"; at best {fmt.pct(best_share[0], 0)} of the bf16 peak (n = {fmt.count(best_share[1].n)}, "
                 f"d = {best_share[1].d}, {fmt.threads(best_share[1].threads, all_threads)})")
    small = [(f, b) for f, b in found if f.d == min(x.d for x, _ in found)]
    large = [(f, b) for f, b in found if f.d == max(x.d for x, _ in found)]
    ratios = [bf / fma for t in sorted({f.threads for f, _ in found})
              for fma, bf in [(run.fma_peak_gflops(t), _bf16_peak(run, t))] if fma and bf]
    if ratios and max(ratios) < 1:
        # vdpbf16ps slower than the FMAs it replaces: the products cannot gain, the softmax is the same
        text += (f". Here `vdpbf16ps` delivers {fmt.ratio(min(ratios))} to {fmt.ratio(max(ratios))} of the fp32 FMA "
                 "rate (the measured peaks), so bf16 products take longer than fp32 ones on this CPU and the bf16 "
                 "kernel can only be slower; it runs above that ratio because the softmax between the products "
                 "(exp, max, sum, in float32 either way) takes the same time in both. What bf16 buys here is half "
                 "the bytes of K and V (the decode section's types)")
    elif small and large and small[0][0].d != large[0][0].d:
        text += (f". The gain grows with d (median {fmt.ratio(statistics.median(_speedup(f, b) for f, b in small))} "
                 f"at d = {small[0][0].d}, {fmt.ratio(statistics.median(_speedup(f, b) for f, b in large))} at "
                 f"d = {large[0][0].d}): the products halve their instructions, the softmax between them (exp, max, "
                 "sum and the rounding of P, per score whatever d) does not, so its share of the time grows as d "
                 "shrinks")
    s.add(Paragraph(text + "."))
    timed_phases = _phases(s, run, phases or [], fp32_kernel, kernel)
    _backward(s, table, all_threads)
    s.add(Bullets([
        "Accuracy: the kernels are tested against the float64 oracle on the bfloat16-rounded inputs, within the "
        "float32 bound plus one bfloat16 rounding of the weights (docs/testing.md).",
        "Not measured here: AMX tiles (no kernel of this build uses them)"
        + ("." if timed_phases else ", and the bf16 kernel's phases (the phases window timed float32 kernels "
                                    "only).")]))


def _phases(s, run, phases: list, fp32_kernel: str, kernel: str) -> bool:
    """Each kernel's phases timed alone (the phases window, one thread), at the points where the
    window timed both: each product against its own peak, and the softmax's share of the call.
    Whether it had any."""
    by_point = {(m.kernel, m.n, m.d): m for m in phases}
    both = sorted((n, d) for k, n, d in by_point if k == kernel and (fp32_kernel, n, d) in by_point)
    if not both:
        return False
    fma, bf = run.fma_peak_gflops(1), _bf16_peak(run, 1)
    rows, shares = [], []
    for n, d in both:
        each = 2.0 * n * n * d  # FLOPs of one product
        for name, peak in ((fp32_kernel, fma), (kernel, bf)):
            m = by_point[(name, n, d)]

            def of_peak(ms: float) -> str:
                return fmt.pct(100 * each / (ms * 1e6) / peak, 0) if peak and ms > 0 else "–"

            rows.append([fmt.code(name), fmt.count(n), str(d), fmt.ms(m.ms["all"]),
                         f"{fmt.ms(m.ms['score'])} ({of_peak(m.ms['score'])})",
                         f"{fmt.ms(m.ms['softmax'])} ({fmt.pct(100 * m.share['softmax'], 0)})",
                         f"{fmt.ms(m.ms['blend'])} ({of_peak(m.ms['blend'])})"])
            shares.append((name, m.share["softmax"]))
    s.add(Table(["kernel", "n", "d", "whole kernel", "Q Kᵀ (of its peak)", "softmax (of the kernel)",
                 "P V (of its peak)"], rows,
                caption="Phases alone, one thread (the phases window, `phases.json`: the kernel's own loops with one "
                        "phase at a time, in rotating rounds; the bf16 kernel's softmax includes rounding P to "
                        "bfloat16). Each product's share is of its own peak, the FMA peak for fp32 and the "
                        "vdpbf16ps peak for bf16:"))
    fp32_share = statistics.median(x for k, x in shares if k == fp32_kernel)
    bf16_share = statistics.median(x for k, x in shares if k == kernel)
    products = statistics.median(
        (by_point[(kernel, n, d)].ms["score"] + by_point[(kernel, n, d)].ms["blend"])
        / (by_point[(fp32_kernel, n, d)].ms["score"] + by_point[(fp32_kernel, n, d)].ms["blend"]) for n, d in both)
    s.add(Paragraph(
        f"The softmax takes {fmt.pct(100 * bf16_share, 0)} of the bf16 kernel's time against "
        f"{fmt.pct(100 * fp32_share, 0)} of the fp32 kernel's (medians over these points), its float32 work per "
        f"score the same in both (the rounding of P aside); the bf16 products take {fmt.ratio(products)} the fp32 "
        "products' time here, so the softmax weighs " + ("more" if products < 1 else "less") +
        " in the bf16 kernel" + (", and becomes its limit first as d shrinks." if products < 1 else ".")))
    return True


def _backward(s, table: Points, all_threads: int) -> None:
    """The bf16 backward beside the fp32 one, at the matrix's backward points."""
    found = pairs(table, "backward")
    if not found:
        return
    run = table.runs[0]
    rows = []
    for f, b in found:
        fma, bf = run.fma_peak_gflops(f.threads), _bf16_peak(run, b.threads)
        speed_f, speed_b = fastest_gflops(f) or f.gflops_median, fastest_gflops(b) or b.gflops_median
        rows.append([fmt.count(f.n), str(f.d), fmt.threads(f.threads, all_threads), fmt.ms(f.time_ms_median),
                     fmt.ms(b.time_ms_median), fmt.ratio(_speedup(f, b)),
                     fmt.pct(100 * speed_f / fma if fma else math.nan, 0),
                     fmt.pct(100 * speed_b / bf if bf else math.nan, 0)])
    s.add(Table(["n", "d", "threads", "fp32 backward", "bf16 backward", "bf16 speed over fp32",
                 "fp32 % of FMA peak", "bf16 % of bf16 peak"], rows,
                caption="The backward pass (dQ, dK, dV from the forward's O and LSE: five products of the "
                        "forward's size), median times; ratio and shares from the fastest repetitions."))
    speedups = [_speedup(f, b) for f, b in found]
    s.add(Paragraph(
        f"The bf16 backward runs {fmt.ratio(min(speedups))} to {fmt.ratio(max(speedups))} the speed of the fp32 one "
        f"(median {fmt.ratio(statistics.median(speedups))} over {len(found)} points): its five products are bf16 "
        "products too (P and dS rounded once each), its recomputed softmax and the gradients' accumulators float32."))
