"""The section "Where the time goes: a cost model": the machine's constants, predicted against
measured time for every forward point, the residuals per kernel, the phase breakdown of the tiled
SIMD kernel and its headroom, and the crossover predicted against measured. Every number comes from
model.py, which reads the run's constants and counts."""
from __future__ import annotations

import re
import statistics

from .. import analysis
from .. import formatting as fmt
from .. import model as cost_model
from ..document import Bullets, Document, Paragraph, Table

TITLE = "Where the time goes: a cost model"
BREAKDOWN_N = 4096
BREAKDOWN_DIMS = (64, 128)
MAX_LISTED = 12


def _bands() -> str:
    return f"±{100 * cost_model.SIMD_BAND:.0f}% SIMD, ±{100 * cost_model.PLAIN_BAND:.0f}% the others"


def section(doc: Document, model: cost_model.Model, table, figures: dict, phases: list | None = None) -> None:
    """The section, when the run measured the constants and the counts; a note otherwise. phases: the
    phases window's points (model.load_phases), for the measured breakdown beside the predicted one."""
    if not model.machine.measured or not model.predictions:
        if model.machine.measured or any(r.counts for r in table):
            doc.section(TITLE).add(Paragraph(
                "This run lacks either the machine constants or the per-point counts the model needs "
                "(runs made before the benchmark measured them), so no time is predicted."))
        return
    s = doc.section(TITLE)
    s.add(Paragraph(
        "Every forward point's time is predicted from constants the benchmark measured alone, before any point "
        "(and, where the run measured them again among its points and after its last window, the fastest reading "
        "of each), "
        "and from counts of what the point does, taken from the kernel's own blocking (`src/forward_counts.hpp`); "
        "never from the point's own time, and checked against the point's measured time ("
        + analysis.statistic(table) + ", as the constants too are the machine undisturbed as nearly as the run "
        "saw it). A point's time is the sum of its phases: the two products (their FMAs "
        "over the FLOP/s of the kernel's micro-kernels run alone on one key block in L2), the softmax (scores over "
        "the rate of the kernel's scale-and-max and exp-and-sum sweeps alone on one tile, plus the rescale "
        "factors' scalar exps), the stream of packed K and V from beyond L2 (once per query block, at the read "
        "bandwidth this machine measured for a working set of one head's K and V, on as many threads as run the "
        "point's compute tasks at once), a naive kernel's "
        "score-matrix sweeps beyond L1, packing, Q and O, and on several threads the start of the call and its "
        "tasks (the compute phases shared by the threads, less the idle part of an unequal last round, each "
        "thread's products and softmax priced as measured with every thread running them at once). The "
        "sum and not the max for the blocked kernels' K/V stream: a key block comes from beyond L2 while its "
        "first row group alone computes on it, and sharing each key block among more query rows (fewer passes "
        "over K and V) made one thread faster once a head's K and V outgrew the L2 (measured call by call in "
        "the README's kernel section), which a stream overlapped with the FMAs could not. A naive kernel's "
        "passes, and a kernel that takes one query row at a time, stream in order while they compute: there "
        "only what the sweeps add beyond the pass's work counts. The scalar, auto-vectorised and OpenBLAS "
        "kernels have no measured phases of their own: their products are priced at the FMA rate of their "
        "arithmetic (for the auto-vectorised ones the blend at AVX2's and the score's dot products, which the "
        "compiler may not reorder, scalar; the plain loops' scalar exps only where they would exceed the products, "
        "as a fit of their measured times to the two weighed the exps at about nothing) and their compute phases "
        "(products and softmax) scaled by one factor "
        f"per kernel, the median over its points with n ≥ {cost_model.MIN_N} of the factor that would make the "
        "prediction exact (listed below); their bytes are priced by the measured sweeps like every kernel's. "
        f"Per point, measured and predicted seconds and each phase's share are in `{cost_model.FILE_NAME}` next "
        "to this report."))
    s.add(constants_table(model))
    if "fig13_model" in figures:
        s.add(doc.figure(figures["fig13_model"], "Predicted against measured time per call, every forward point "
                         f"the model prices; black y = x, grey ±{100 * cost_model.SIMD_BAND:.0f}% (the SIMD "
                         f"kernels' band); hollow markers n < {cost_model.MIN_N}."))
    s.add(residual_table(model))
    outside = [p for r in cost_model.residuals(model) for p in r.outside]
    if outside:
        items = [f"{fmt.code(p.record.kernel)} {p.record.shape}, d = {p.record.d}, "
                 f"{fmt.threads(p.record.threads, analysis.threads_all(table))}: predicted "
                 f"{fmt.ms(1e3 * p.predicted_s)}, measured {fmt.ms(1e3 * p.measured_s)} "
                 f"({_signed(p.error)}); {cost_model.miss_reason(p, model)}"
                 for p in sorted(outside, key=lambda p: -abs(p.error))[:MAX_LISTED]]
        if len(outside) > MAX_LISTED:
            items.append(f"and {len(outside) - MAX_LISTED} more (all in `{cost_model.FILE_NAME}`)")
        s.add(Paragraph(f"{len(outside)} of {len(model.targeted())} points with n ≥ {cost_model.MIN_N} fall "
                        f"outside their kernel's band ({_bands()}), largest misses first:"),
              Bullets(items))
    else:
        s.add(Paragraph(f"Every one of the {len(model.targeted())} points with n ≥ {cost_model.MIN_N} lies within "
                        f"its kernel's band ({_bands()})."))
    breakdown(s, model, table)
    measured_breakdown(s, model, phases or [])
    crossovers(s, model, table)
    leaving_the_caches(s, model)


def _signed(error: float) -> str:
    return f"{100 * error:+.0f}%"


def constants_table(model: cost_model.Model) -> Table:
    m = model.machine
    threads = int(m.number("threads_all") or 1)
    rows = []
    for isa in ("avx512f", "avx2", "sse4.2"):
        if m.number(f"exp_per_s_{isa}") is None:
            continue
        fma = m.fma_flops(isa)
        for d in cost_model.MODEL_DIMS:
            rate = m.number(f"products_flops_{isa}_d{d}")  # this d's own, not the nearest one's
            if rate is None:
                continue
            share = f" ({fmt.pct(100 * rate / fma, 0)} of the {isa} FMA rate)" if fma else ""
            many = m.number(f"products_flops_{isa}_d{d}_threads_{threads}") if threads > 1 else None
            at_once = f"; {fmt.sig(many / 1e9)} per thread with {threads} at once" if many else ""
            rows.append([f"products alone, {isa}, d = {d}", f"{fmt.sig(rate / 1e9)} GFLOP/s{share}{at_once}"])
        per_score = m.softmax_seconds(isa, 64)
        if per_score:
            rows.append([f"softmax sweeps alone, {isa}", f"{fmt.sig(per_score * 1e9)} ns per score"])
        rows.append([f"vector exp, {isa}", f"{fmt.sig(m.number(f'exp_per_s_{isa}') / 1e9)} G exp/s"])
    for isa, label in (("avx512f", "avx512f"), ("avx2", "avx2+fma"), ("scalar", "scalar multiply-add")):
        if m.fma_flops(isa):
            rows.append([f"FMA rate, {label}", f"{fmt.sig(m.fma_flops(isa) / 1e9)} GFLOP/s"])
    if m.number("exp_per_s_scalar"):
        rows.append(["scalar exp", f"{fmt.sig(m.number('exp_per_s_scalar') / 1e9)} G exp/s"])
    for level in ("l1", "l2", "l3", "dram"):
        gbs, size = m.number(f"read_gbs_{level}"), m.number(f"read_set_bytes_{level}")
        if gbs:
            rows.append([f"read bandwidth, {level.upper()} ({fmt.bytes_(size)} swept)", f"{fmt.sig(gbs)} GB/s"])
    curves = [("", "one thread")] + [(f"threads_{t}_", f"{t} threads") for t in sorted(
        {int(k.split("_")[3]) for k in m.run.context if re.fullmatch(r"read_gbs_threads_\d+_set_\d+", k)})]
    for stem, label in curves:
        curve = m.set_curve(f"read_gbs_{stem}set_")
        if curve:
            rows.append([f"read bandwidth beyond L2, {label}", ", ".join(
                f"{fmt.bytes_(size)} {fmt.sig(gbs)}" for size, gbs in curve) + " GB/s"])
    for key in sorted(m.run.context):
        value = m.number(key)
        if value is None:
            continue
        if key.startswith("read_gbs_dram_threads_"):
            rows.append([f"read bandwidth, DRAM, {key.rsplit('_', 1)[1]} threads", f"{fmt.sig(value)} GB/s"])
        elif key.startswith("task_s_threads_"):
            rows.append([f"one parallel task, {key.rsplit('_', 1)[1]} threads", fmt.us(value * 1e6)])
        elif key.startswith("call_start_s_threads_"):
            rows.append([f"starting a call on the pool, {key.rsplit('_', 1)[1]} threads", fmt.us(value * 1e6)])
    return Table(["constant (one thread unless said)", "measured"], rows,
                 caption="The machine constants this run measured (`bench/machine_constants.hpp`)"
                 + readings_phrase(m) + ":")


def readings_phrase(m) -> str:
    """Which readings of the constants the run took (before the points, among them, after the study's last
    window) and how the later ones moved them, or ", once, before the points"."""
    gains, later = m.gains(), m.later
    if not gains:
        return ", once, before the points"
    places = ["before the points"]
    if later.among_points:
        places.append(f"{later.among_points} among them (repetitions of `constants/` interleaved with theirs)")
    if later.after:
        places.append(f"after the study's last window (`{cost_model.SECOND_READING_FILE}`)")
    count = 1 + later.among_points + int(later.after)
    head = f", the fastest of {count} readings: " + ", ".join(places[:-1]) + " and " + places[-1]
    faster = {key: gain for key, gain in gains.items() if gain > 1}
    if not faster:
        return f"{head}; the first was the fastest for all {len(gains)}"
    top = max(faster, key=faster.get)
    return (f"{head}; a later one was faster for {len(faster)} of {len(gains)}, by a median "
            f"{fmt.pct(100 * (statistics.median(faster.values()) - 1), 1)}, at most "
            f"{fmt.pct(100 * (faster[top] - 1), 0)} (`{top}`)")


def residual_table(model: cost_model.Model) -> Table:
    rows = []
    for r in cost_model.residuals(model):
        w = r.worst.record
        band = r.worst.band
        factor = model.factors.get(r.kernel)
        rows.append([fmt.code(r.kernel), str(r.points), fmt.pct(100 * r.median_abs, 0),
                     f"{_signed(r.worst.error)} (n = {w.n}, d = {w.d}, {w.threads}t)",
                     f"{r.points - len(r.outside)} of {r.points} (±{100 * band:.0f}%)",
                     fmt.sig(factor) if factor else "none"])
    return Table(["kernel", "points", "median |error|", "worst error", "within band", "factor"], rows,
                 caption=f"Residuals per kernel over its forward points with n ≥ {cost_model.MIN_N} (error = "
                         "predicted / measured − 1):")


def breakdown(s, model: cost_model.Model, table) -> None:
    tiled = analysis.simd_kernel(table, "tiled")
    chosen = [p for d in BREAKDOWN_DIMS for t in analysis.thread_counts(table)
              for p in [model.find(tiled, BREAKDOWN_N, d, t)] if p is not None]
    if not chosen:
        return
    header = ["d", "threads", "measured", "predicted"] + list(cost_model.PHASES)
    rows = [[str(p.record.d), str(p.record.threads), fmt.ms(1e3 * p.measured_s), fmt.ms(1e3 * p.predicted_s)]
            + [fmt.pct(100 * p.share(phase), 0) for phase in cost_model.PHASES] for p in chosen]
    s.add(Table(header, rows, caption=f"Where {fmt.code(tiled)}'s time goes at n = {BREAKDOWN_N}, as the model "
                                      "prices it (each phase's share of the prediction):"))
    m = model.machine
    items = []
    for p in chosen:
        if p.record.threads != 1:
            continue
        r = p.record
        rate, fma = m.products_flops(r.isa, r.d), m.fma_flops(r.isa)
        if not (rate and fma):
            continue
        rest = 1 - p.share("products") - p.share("softmax")
        at_peak = p.phases["products"] * (rate / fma)
        best = at_peak + sum(v for k, v in p.phases.items() if k not in ("products", "softmax"))
        items.append(
            f"d = {r.d}: the softmax takes {fmt.pct(100 * p.share('softmax'), 0)} of the time; the products "
            f"{fmt.pct(100 * p.share('products'), 0)}, running at {fmt.pct(100 * rate / fma, 0)} of the FMA "
            f"rate even alone on a block in L2; the rest (stream, packing, Q and O) is {fmt.pct(100 * rest, 0)}. "
            f"With the products at the FMA rate and the softmax free the call would take "
            f"{fmt.ms(1e3 * best)}, {fmt.ratio(p.predicted_s / best)} less: the headroom, "
            f"{fmt.pct(100 * (1 - best / p.predicted_s), 0)} of the predicted time.")
    if items:
        s.add(Paragraph("The headroom, one thread:"), Bullets(items))


def crossovers(s, model: cost_model.Model, table) -> None:
    rows = []
    for name, tiled, naive in analysis.crossover_pairs(table):
        for d in table.values("d"):
            for t in analysis.thread_counts(table):
                measured = analysis.crossover(table.forward().matrix(), tiled, naive, d, t)
                if not len(measured.n):
                    continue
                predicted = cost_model.predicted_crossover(model, tiled, naive, d, t)
                said = ("never in the measured range" if predicted is None
                        else "tiled faster at every measured n" if predicted == 0 else f"n ≈ {fmt.count(predicted)}")
                rows.append([name, str(d), str(t), measured.sentence(), said])
    if rows:
        s.add(Table(["pair", "d", "threads", "measured", "predicted"], rows,
                    caption="Where tiled overtakes naive, measured and as the model predicts it:"))


def measured_breakdown(s, model: cost_model.Model, phases: list) -> None:
    """The phases window's measured phases beside the model's price of the same phases at the same
    kernel, n and d (one thread)."""
    rows = []
    for m in phases:
        p = model.find(m.kernel, m.n, m.d, 1)
        if p is None:
            continue
        kernel_alone = p.phases["products"] + p.phases["softmax"] + p.phases["K/V stream"]
        measured_sum = m.ms["score"] + m.ms["blend"] + m.ms["softmax"]

        def pair(measured_ms: float, predicted_s: float) -> str:
            return f"{fmt.ms(measured_ms)} / {fmt.ms(1e3 * predicted_s)}"

        rows.append([fmt.code(m.kernel), str(m.n), str(m.d),
                     pair(m.ms["score"] + m.ms["blend"], p.phases["products"]),
                     pair(m.ms["softmax"], p.phases["softmax"]), pair(m.ms["pack"], p.phases["packing"]),
                     pair(m.ms["all"], kernel_alone), fmt.ratio(measured_sum / m.ms["all"])])
    if not rows:
        return
    s.add(Table(["kernel", "n", "d", "products", "softmax", "packing", "kernel alone", "phases' sum / kernel"],
                rows, caption="Measured against predicted, phase by phase (the phases window, `phases.json`: the "
                              "kernel's own loops over one head on one thread with one phase alone, all phases "
                              "timed in rotating rounds; measured ms / predicted ms). \"Kernel alone\" is the "
                              "kernel's rows function without the driver, its packing or threads; the last column "
                              "is how far the phases timed alone add up to the whole kernel:"))


def leaving_the_caches(s, model: cost_model.Model) -> None:
    limit = cost_model.fast_set_bytes(model.machine)
    exits = cost_model.cache_exits(model)
    if limit is None or not exits:
        return
    rows = [[fmt.code(e.kernel), str(e.d),
             f"n = {fmt.count(e.predicted_n)}" if e.predicted_n else "not in the measured range",
             f"n = {fmt.count(e.fall_from)} → {fmt.count(e.fall_to)} ({fmt.ratio(e.fall)})"] for e in exits]
    s.add(Table(["kernel", "d", "predicted: score matrix beyond the fast sets", "measured: largest GFLOP/s fall"],
                rows, caption=f"Where a naive kernel's score matrix leaves the caches, one thread: the model puts it "
                              f"beyond {fmt.bytes_(limit)}, the largest set this machine's read sweeps still read "
                              f"{fmt.ratio(cost_model.FAST_SET_RATIO)} faster than DRAM; beside it, the consecutive "
                              "measured lengths between which the "
                              "kernel's GFLOP/s falls most:"))
