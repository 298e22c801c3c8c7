"""How long context is bought: the sliding window against the full causal mask over long heads, from
the long-context window (context.json, bench/context_window.hpp). Every number comes from its JSON."""
from __future__ import annotations

import math

from .. import formatting as fmt
from ..analysis import context as analysis_context
from ..document import Bullets, Document, Paragraph, Table

TITLE = "How long context is bought"
FIGURE = "fig14_context"


def summary_item(points: list | None) -> str:
    found = analysis_context.curves(points or [])
    if not found:
        return ""
    c = found[-1]
    longest = max(c.windowed)
    per_pair = c.pair_spread()
    text = (f"A sliding window of {fmt.count(c.window)} keys makes attention linear in n: "
            f"{fmt.ms(analysis_context._time_s(c.windowed[longest]) * 1e3)} at n = {fmt.count(longest)}")
    if c.full and math.isfinite(c.full_s_per_pair):
        text += f", where the full causal mask would take ≈ {fmt.ms(c.predicted_full_ms(longest))}"
    if math.isfinite(per_pair):
        text += (f"; its time per visible pair varies by {fmt.pct(100 * per_pair, 0)} from n = "
                 f"{fmt.count(min(c.flat_ns()))} on")
    return text + "."


def section(doc: Document, points: list | None, figures: dict, all_threads: int) -> None:
    found = analysis_context.curves(points or [])
    if not found:
        return
    s = doc.section(TITLE)
    kernel = next(iter(found[0].windowed.values())).kernel
    d = next(iter(found[0].windowed.values())).d
    w = found[0].window
    s.add(Paragraph(
        f"Every model with a long context beats the quadratic curve somehow. The simplest way, Mistral's and "
        f"Gemma's, is a sliding window: each query row sees only the {fmt.count(w)} keys ending at its own "
        f"position, so a head of n rows costs n × w pairs, linear in n, where the causal mask costs n² / 2. "
        f"The tiled kernel skips every key block wholly outside a row block's window and masks only the blocks "
        f"on its two edges. Below, {fmt.code(kernel)} at d = {d} on one causal head, windowed and full, the "
        f"repetitions of every point interleaved at random in one window; times are each point's fastest "
        f"repetition, and a full causal time past the lengths measured is predicted from the measured ones' "
        f"time per visible pair (marked ≈)."))
    rows = []
    for c in found:
        for n, p in c.windowed.items():
            full = c.full.get(n)
            t_w = analysis_context._time_s(p) * 1e3
            t_f = analysis_context._time_s(full) * 1e3 if full else c.predicted_full_ms(n)
            rows.append([fmt.count(n), fmt.threads(c.threads, all_threads), fmt.ms(t_w),
                         fmt.sig(p.value("us_per_row")), ("" if full else "≈ ") + fmt.ms(t_f)
                         if math.isfinite(t_f) else "–",
                         fmt.ratio(t_f / t_w) if math.isfinite(t_f) else "–",
                         fmt.sig(analysis_context.gflops(p)),
                         fmt.sig(analysis_context.gflops(full)) if full else "–",
                         fmt.bytes_(p.value("scratch_bytes"))])
    s.add(Table(["n", "threads", f"window {fmt.count(w)}", "µs per row", "full causal", "full / window",
                 "window GFLOP/s", "full GFLOP/s", "scratch"], rows,
                caption="GFLOP/s count 4 d FLOPs per visible pair (the pairs each mask leaves); scratch is the "
                        "call's workspace peak, packed K and V included."))
    if FIGURE in figures:
        s.add(doc.figure(figures[FIGURE], "Time against n, log-log: the windowed calls grow as n, the full causal "
                                          "ones as n²; dashed, the full causal time predicted from its time per "
                                          "pair."))
    items = []
    for c in found:
        t = fmt.threads(c.threads, all_threads)
        spread, per_pair = c.row_spread(), c.pair_spread()
        if math.isfinite(spread):
            lo, hi = min(c.flat_ns()), max(c.windowed)
            verdict = "within 10 %, the project's goal" if spread <= 0.10 else "more than the project's 10 %"
            text = (f"{t}: the time per row varies by {fmt.pct(100 * spread, 1)} from n = {fmt.count(lo)} to "
                    f"{fmt.count(hi)} ({verdict})")
            if spread > 0.10:
                text += (f", as the work per row does: a row sees {fmt.sig(c.keys_per_row(lo))} keys on average at "
                         f"n = {fmt.count(lo)} (the first {fmt.count(c.window)} rows fewer than w) and "
                         f"{fmt.sig(c.keys_per_row(hi))} at n = {fmt.count(hi)}")
            if math.isfinite(per_pair):
                text += (f"; per visible pair the time varies by {fmt.pct(100 * per_pair, 1)} ("
                         + ("flat within 10 %" if per_pair <= 0.10 else "not flat within 10 %") + ")")
            items.append(text + ".")
        shared = [n for n in c.windowed if n in c.full]
        if c.full:
            top = max(c.full)
            win = max(c.windowed)
            ratio = analysis_context.gflops(c.windowed[win]) / analysis_context.gflops(c.full[top])
            items.append(f"{t}: the windowed call at n = {fmt.count(win)} runs at {fmt.pct(100 * ratio, 1)} of the "
                         f"full causal call's GFLOP/s at n = {fmt.count(top)} "
                         + ("(within 10 %, the project's goal: the skipped blocks cost nothing, the edge blocks "
                            "little)" if ratio >= 0.9 else
                            "(short of the project's goal of 90 %: the edge blocks, scored and masked, cost it)")
                         + ".")
        for n, p in sorted(c.capped.items()):
            if n in c.full:
                ratio = analysis_context.gflops(p) / analysis_context.gflops(c.full[n])
                items.append(f"{t}: soft-capped at {fmt.sig(p.softcap)} (Gemma 2's logit cap: a tanh per score), the "
                             f"full causal call at n = {fmt.count(n)} runs at {fmt.pct(100 * ratio, 1)} of its "
                             "uncapped GFLOP/s " + ("(within 10 %, the project's goal)." if ratio >= 0.9 else
                                                    "(short of the project's goal of 90 %)."))
        for n, p in sorted((c.tensors or {}).items()):
            if n in c.windowed:
                ratio = analysis_context.gflops(p) / analysis_context.gflops(c.windowed[n])
                extra_ms = (analysis_context._time_s(p) - analysis_context._time_s(c.windowed[n])) * 1e3
                items.append(f"{t}: the same window given as a boolean mask tensor ({fmt.bytes_(p.value('mask_bytes'))}, "
                             f"n × n bytes, as a Hugging Face model passes its mask) runs at {fmt.pct(100 * ratio, 1)} "
                             f"of the computed window's GFLOP/s at n = {fmt.count(n)} "
                             + ("(within 15 %, the project's goal)" if ratio >= 0.85 else
                                "(short of the project's goal of 85 %)")
                             + f": {fmt.ms(extra_ms)} more a call, for scanning the tensor once for the band it "
                             "keeps (the kernel then skips the blocks outside it, as for the window; the scan "
                             f"alone takes one thread {fmt.ms(p.value('scan_ms'))}, a read of n² bytes that "
                             "no kernel can skip, since only reading them shows which keys are gone) and "
                             "reading the band's bytes beside every score.")
        half = c.half_time_n()
        if math.isfinite(half):
            items.append(f"{t}: from n ≈ {fmt.count(half)} on, the full causal mask costs twice the window's time "
                         f"(both times per pair fitted: {fmt.sig(c.window_s_per_pair * 1e9)} ns a pair "
                         f"windowed, {fmt.sig(c.full_s_per_pair * 1e9)} full); at n ≤ {fmt.count(c.window)} "
                         "the two are the same call." + (f" Measured side by side at n = "
                                                          f"{', '.join(fmt.count(n) for n in shared)}."
                                                          if shared else ""))
    if items:
        s.add(Bullets(items))
    s.add(Paragraph(
        "Memory grows as n under either mask, never as n²: the tiled kernel's scratch is its blocks plus its "
        "packed copy of K and V (8 d bytes a key in float32), the same whatever the mask. A window shrinks the "
        "work, not the keys: only a caller that keeps the last w keys alone (a KV cache of w tokens) bounds them."))
