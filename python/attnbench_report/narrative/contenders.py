"""The section "Against the alternatives" and the summary's headline lead over the strongest peer,
phrased from analysis_contenders; every number is computed there from the windows' JSON."""
from __future__ import annotations

import statistics

from ..analysis import contenders as ac
from .. import formatting as fmt
from ..document import Bullets, Document, Paragraph, Table

_HOW_WINDOW = {
    "contenders": "`attnbench_bench --contenders` with Google Benchmark's "
                  "`--benchmark_enable_random_interleaving=true`: the repetitions of every contender at every point "
                  "run in one shuffled order, so drift of the machine falls on all of them alike",
    "python": "`scripts/contenders.py`, one Python process: at each point, rounds that run every contender once in a "
              "shuffled order (attnbench's kernel through its C helper, on the same arrays and clock)",
    "python bf16": "`scripts/contenders.py --dtype bf16`, as the python window, on bfloat16 values: attnbench's "
                   "bf16-products kernel against the peers' bf16 attention",
    "python q8_0": "`scripts/contenders.py --dtype q8_0`, as the python window: one query row per head of a "
                   "Llama-style layer (32 query heads over 8 key/value heads, d = 128) against n keys stored as "
                   "ggml's q8_0 blocks, attnbench through a q8_0 KvCache with the query rounded to q8_0 for Q K^T "
                   "(the arithmetic of ggml's q8_0 decode) against ggml's flash_attn_ext on q8_0 K/V; Q, K and V "
                   "are q8_0 values to begin with, so both hold them exactly and the float32 oracle check applies",
}
# What a window of one further pass times (the loader names it "<window>, <pass>").
_HOW_PASS = {
    "training step": "each call a training step, the forward (with its log-sum-exp) then the backward of dO (dQ, dK "
                     "and dV); every gradient element checked against the float64 backward oracle before timing, on "
                     "a problem of the point's head dim, mask and threads with at most 256 rows; GFLOP/s count 3.5 "
                     "times the forward's FLOPs",
    "prefill": "each call the causal prefill of a prompt of n tokens through a Llama-style layer (32 query heads over "
               "8 key/value heads, d = 128): attnbench's attention() on the grouped-query shape, PyTorch with "
               "enable_gqa and is_causal, ONNX Runtime's GroupQueryAttention on the whole prompt (writing K and V "
               "into its cache buffer), ggml's flash_attn_ext with its causal mask",
    "decode": "each call one query row per head of a Llama-style layer (32 query heads over 8 key/value heads, d = "
              "128) against a cache of n keys, each side's cache as a decode loop keeps it: attnbench through a "
              "KvCache filled once per point, PyTorch on its K and V tensors with enable_gqa, ONNX Runtime's "
              "GroupQueryAttention appending the new token into a past K/V buffer its present output shares, ggml's "
              "flash_attn_ext on K/V tensors set once per point",
}


def _how(window_name: str) -> str:
    base, _, pass_ = window_name.partition(", ")
    how = _HOW_WINDOW.get(base, "interleaved")
    own_pass = base == "python q8_0"  # its text says what its decode points are
    return f"{how}; {_HOW_PASS[pass_]}" if pass_ in _HOW_PASS and not own_pass else how


def _point(lead) -> str:
    return f"n = {lead.n}, d = {lead.d}, {lead.threads} thread{'s' if lead.threads > 1 else ''}" + (
        ", causal" if lead.causal else "")


def headline(windows: list) -> str | None:
    """One summary sentence per window: attnbench's best over the strongest peer, range and median."""
    parts = []
    for w in windows:
        leads = ac.leads(w)
        if not leads:
            continue
        lo, hi = min(leads, key=lambda l: l.ratio), max(leads, key=lambda l: l.ratio)
        wins = sum(1 for l in leads if l.ratio > 1)
        parts.append(f"{w.name} window: attnbench's best over the strongest peer {fmt.ratio(lo.ratio)} "
                     f"({fmt.code(lo.peer.kernel)}, {_point(lo)}) to {fmt.ratio(hi.ratio)} ({fmt.code(hi.peer.kernel)}, "
                     f"{_point(hi)}), median {fmt.ratio(statistics.median(l.ratio for l in leads))}; ahead at {wins} of "
                     f"{len(leads)} points")
    return ("Against the alternatives (ratios within one interleaved window): " + "; ".join(parts) + ".") if parts else None


def section(doc: Document, windows: list, figures: dict, run=None) -> None:
    if not windows:
        return
    s = doc.section("Against the alternatives")
    s.add(Paragraph(
        "What a user would run instead, each the way its users call it: same shape, same threads, prepared outside "
        "the timed call, and checked against the float64 oracle (16 sampled rows, the tests' error bound) before it "
        "is timed; a contender that fails is recorded as failed, one that is absent or cannot express a point as "
        "missing or unsupported. GFLOP/s count 4 · scored pairs · d for every contender (a causal point counts the "
        "visible pairs only, whether or not the contender skips the others). Ratios are taken only within a window."))
    if "fig8_contenders" in figures:
        s.add(doc.figure(figures["fig8_contenders"], "Every contender's GFLOP/s against n per window, head dim and "
                         "thread count, under the measured FMA peak."))
    for w in windows:
        names = ac.contender_names(w)
        s.add(Paragraph(f"**{w.name} window** ({fmt.code(w.path.name)}): {_how(w.name)}."))
        items = []
        for name in names:
            c = w.contenders.get(name)
            if c is None:
                continue
            items.append(f"{fmt.code(name)} ({c.role}): {c.library} {c.version}; "
                         f"{'fused, no score matrix' if c.fused else 'materialises the n × n score matrix'}; "
                         f"threads: {c.threading}; {c.how}.")
        s.add(Bullets(items))
        rows = []
        for point in ac.points(w):
            records = {r.kernel: r for r in ac.at(w, point)}
            cells = []
            for name in names:
                r = records.get(name)
                cells.append("" if r is None else (r.status if r.skipped else fmt.sig(r.gflops_median)))
            lead = next((l for l in ac.leads(w) if (l.n, l.d, l.threads, l.causal) == point), None)
            n, d, t, causal = point
            rows.append([str(n), str(d), str(t), "yes" if causal else "no"] + cells + (
                [f"{fmt.ratio(lead.ratio)} over {fmt.code(lead.peer.kernel)}"] if lead else ["—"]))
        s.add(Table(["n", "d", "threads", "causal"] + [fmt.code(n) for n in names] + ["attnbench / strongest peer"],
                    rows, align="rrrl" + "r" * len(names) + "l",
                    caption=f"GFLOP/s (median of the repetitions) in the {w.name} window. " + _basis(w)))
        s.add(Paragraph(_why(w, run)))
        missing = ac.not_measured(w)
        if missing:
            reasons = sorted({f"{fmt.code(r.kernel)}: {r.skip_reason}" for r in missing})
            s.add(Paragraph(f"Not timed in the {w.name} window ({len(missing)} points):"), Bullets(reasons[:12] + (
                [f"... and {len(reasons) - 12} more"] if len(reasons) > 12 else [])))


def _basis(w) -> str:
    """How the window's last column was taken."""
    bases = {lead.basis for lead in ac.leads(w)}
    if bases == {"median"}:
        return "The last column divides the medians."
    text = ("The last column divides each side's fastest repetition (the points are compute-bound: noise on a "
            "shared host only adds time)")
    return text + ("; the medians at decode points." if "median" in bases else ".")


def _fused_why(w, leads: list, fused: list) -> str:
    """Against fused peers neither side writes the score matrix: what separates them is the work per
    score (the exp, the register tile, the rescale) and how each spreads over the threads, which the
    window measures as each one's speedup from one thread to all at the same point."""
    text = (f"Where the strongest peer is fused too ({', '.join(fmt.code(k) for k in fused)}), both stream K and V "
            "block by block and neither writes the score matrix: the lead is each kernel's work per score (its exp, "
            "register tile and rescale) and its threading.")
    threads = sorted({l.threads for l in leads})
    if len(threads) < 2:
        return text
    one, all_ = threads[0], threads[-1]
    scaling = []
    for l in leads:
        if l.threads != all_ or l.peer.kernel not in fused:
            continue
        def speedup(kernel):
            rows = {r.threads: r for r in w.table.where(kernel=kernel, n=l.n, d=l.d, causal=l.causal) if not r.skipped}
            return rows[all_].gflops_median / rows[one].gflops_median if one in rows and all_ in rows else None

        ours, peer = speedup(l.ours.kernel), speedup(l.peer.kernel)
        if ours and peer:
            scaling.append(f"n = {l.n}, d = {l.d}{', causal' if l.causal else ''}: attnbench {fmt.ratio(ours)}, "
                           f"{fmt.code(l.peer.kernel)} {fmt.ratio(peer)}")
    if scaling:
        text += (f" Speedup from {one} to {all_} threads at the same point (" + "; ".join(scaling[:6]) +
                 (f"; {len(scaling) - 6} more" if len(scaling) > 6 else "") + ").")
    return text


# Bytes a stored K or V value takes in a window of this dtype (ggml's q8_0: 34 bytes per 32 values).
_KV_BYTES = {"q8_0": 34 / 32}


def _decode_why(w, leads: list, run) -> str:
    """One query row per head reads the whole cache once a call, so the cache's bytes over the memory's
    speed bound the call: each side's K/V read rate at the longest cache, against the run's triad."""
    if not leads or any(l.ours.q_len >= l.ours.kv_len for l in leads):
        return ""
    value_bytes = _KV_BYTES.get(str(w.context.get("dtype", "")), 4.0)

    def rate(r):  # GB/s of stored K and V
        return 2 * value_bytes * r.kv_heads * r.kv_len * r.d / (r.time_ms_median * 1e6)

    longest = max(l.n for l in leads)
    group = max(1, leads[0].ours.heads // leads[0].ours.kv_heads)
    parts = []
    for l in sorted((l for l in leads if l.n == longest), key=lambda l: l.threads):
        triad = run.triad_gbs(l.threads) if run is not None else None
        share = f" ({100 * rate(l.ours) / triad:.0f} % of the run's triad, {triad:.1f} GB/s)" if triad else ""
        parts.append(f"on {l.threads} thread{'s' if l.threads > 1 else ''} attnbench read K and V at "
                     f"{rate(l.ours):.1f} GB/s{share}, {fmt.code(l.peer.kernel)} at {rate(l.peer):.1f} GB/s")
    return (f"A decode call reads the whole cache once, so its bytes over the memory's speed bound the call's time. At "
            f"{longest:,} keys ({fmt.bytes_(2 * value_bytes * leads[0].ours.kv_heads * longest * leads[0].ours.d)} of "
            f"K and V): " + "; ".join(parts) + ". A contender far below the triad is computing, not waiting on memory: "
            f"with {group} query heads per K/V head, attnbench attends each K/V head once for its {group} query rows.")


def _why(w, run=None) -> str:
    leads = ac.leads(w)
    if not leads:
        return "No point of this window has both attnbench and a peer measured."
    wins = [l for l in leads if l.ratio > 1]
    sentences = [f"attnbench's best leads the strongest peer at {len(wins)} of {len(leads)} points."]
    by_threads = {}
    for l in leads:
        by_threads.setdefault(l.threads, []).append(l.ratio)
    if len(by_threads) > 1:
        sentences.append("Median lead by thread count: " + ", ".join(
            f"{fmt.ratio(statistics.median(v))} on {t} thread{'s' if t > 1 else ''}" for t, v in sorted(by_threads.items()))
            + " (each contender's own threading runtime; see the list above).")
    by_n = sorted(leads, key=lambda l: l.n)
    small, large = by_n[0].n, by_n[-1].n
    if small != large:
        at_small = statistics.median(l.ratio for l in leads if l.n == small)
        at_large = statistics.median(l.ratio for l in leads if l.n == large)
        sentences.append(f"Median lead at n = {small}: {fmt.ratio(at_small)}; at n = {large}: {fmt.ratio(at_large)}.")
    peers_fused = {l.peer.kernel: w.contenders[l.peer.kernel].fused for l in leads if l.peer.kernel in w.contenders}
    if peers_fused and not any(peers_fused.values()):
        sentences.append("Every peer here writes the n × n score matrix and reads it back, where attnbench's tiled kernel keeps each key block's scores in "
                         "registers and L1/L2: the gap is that traffic plus the softmax's separate passes and the exp "
                         "each uses (see the list above).")
    fused = sorted({k for k, f in peers_fused.items() if f})
    if fused:
        sentences.append(_fused_why(w, leads, fused))
    decode = _decode_why(w, leads, run)
    if decode:
        sentences.append(decode)
    baseline = [l.baseline_over_peer for l in leads if l.baseline_over_peer is not None]
    if baseline:
        sentences.append(f"attnbench's own baseline reaches {fmt.ratio(min(baseline))} to {fmt.ratio(max(baseline))} "
                         "of the strongest peer.")
    core = w.context.get("openblas_corename")
    if core and any(r.kernel.startswith(("numpy/", "naive/openblas")) for r in w.table):
        sentences.append(f"OpenBLAS ran its {fmt.code(core)} kernels here (its core detection for this CPU).")
    return " ".join(sentences)
