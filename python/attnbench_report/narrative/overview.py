"""The report's opening: the summary (the headline numbers of every section below) and the machine
and build the run was measured on."""
from __future__ import annotations

from .. import analysis
from ..analysis import memory as analysis_memory
from ..analysis import throughput as analysis_throughput
from .. import formatting as fmt
from ..document import Bullets, Document, Paragraph, Table
from ..load.results import Table as Points


# --- summary ------------------------------------------------------------------------------------

def summary(doc: Document, table: Points, everything: Points, all_threads: int, more: tuple = ()) -> None:
    """`table`: the forward's n × d matrix; `everything`: every point (for the noise); `more`: other
    sections' headline bullets, listed before the noise."""
    s = doc.section("Summary")
    run = table.runs[0]
    items = []
    warning = analysis.load_warning(run)
    if warning:
        items.append(f"**Caution**: {warning}.")
    tiled, naive = analysis.simd_kernel(table, "tiled"), analysis.simd_kernel(table, "naive")
    for kernel in (tiled, naive):
        if not kernel:
            continue
        fits = analysis.time_fits(table, 1)
        parts = [f"{fits[(kernel, d)].slope:.2f} at d = {d}" for d in table.values("d") if (kernel, d) in fits]
        if parts:
            items.append(f"Time of {fmt.code(kernel)} grows as n^b with b = {', '.join(parts)} (one thread; "
                         f"attention's n² scores predict 2).")
    if tiled and naive:
        sentences = [f"d = {d}: {analysis.crossover(table, tiled, naive, d, 1).sentence()}"
                     for d in table.values("d") if analysis.largest_common_n(table, [tiled, naive], d, 1)]
        if sentences:
            items.append(f"Tiled ({fmt.code(tiled)}) against naive ({fmt.code(naive)}), one thread: " + "; ".join(sentences) + ".")
    d_mem = analysis_memory.memory_d(table)
    if d_mem is not None:
        curves = analysis_memory.memory_curves(table, d_mem)
        by = analysis_memory.curves_by_strategy(curves)
        naive_c, tiled_c = by.get(("naive", "scratch_bytes")), by.get(("tiled", "scratch_bytes"))
        if naive_c and tiled_c and naive_c.fit and tiled_c.fit:
            long_context = analysis_memory.long_context(run, curves)
            items.append(
                f"Scratch memory grows with slope {naive_c.fit.slope:.2f} (naive, the n × n score matrix) against "
                f"{tiled_c.fit.slope:.2f} (tiled, packed K and V); at n = {fmt.count(long_context.n)} one head's fp32 score matrix "
                f"is {fmt.bytes_(long_context.score_matrix_bytes)}"
                + (f", {fmt.ratio(long_context.ram_share)} this machine's RAM" if long_context.ram_share is not None else "")
                + (f", while the tiled scratch extrapolates to {fmt.bytes_(long_context.tiled_scratch_bytes)}."
                   if long_context.tiled_scratch_bytes is not None else "."))
    for t in analysis.thread_counts(table):
        best = analysis_throughput.best_share_of_peak(table, t)
        if best is not None:
            items.append(f"Highest share of the measured FMA peak on {fmt.threads(t, all_threads)}: "
                         f"{fmt.pct(best.pct_peak_median)} ({fmt.sig(best.gflops_median)} GFLOP/s), {fmt.code(best.kernel)} at "
                         f"n = {best.n}, d = {best.d}{', causal' if best.causal else ''}.")
    baseline = analysis.baseline_kernel(table)
    if tiled and analysis.present(table, baseline):
        parts = []
        over_blas = analysis.Comparison("", "", tiled, baseline)
        for d in table.values("d"):
            speedup = analysis.speedup_range(table, over_blas, d, 1)
            if speedup is not None:
                parts.append(f"{fmt.ratio(speedup.at_largest)} at n = {speedup.n_largest}, d = {d}")
        if parts:
            items.append(f"{fmt.code(tiled)} over the baseline {fmt.code(baseline)}, one thread: "
                         + "; ".join(parts) + ".")
    items.extend(more)
    noisy = analysis.noisy(everything)
    items.append(f"Noise: {len(noisy)} of {len(everything.measured())} measured points vary more than "
                 f"{fmt.pct(100 * analysis.CV_FLAG, 0)} across repetitions (coefficient of variation of the real time); "
                 f"{len(everything.skipped())} points were skipped, each with its reason.")
    s.add(Bullets(items))


# --- machine ------------------------------------------------------------------------------------

def machine(doc: Document, table: Points) -> None:
    s = doc.section("Machine and build")
    run = table.runs[0]
    ctx = run.context
    rows = [
        ["CPU", ctx.get("cpu_model", "?")],
        ["CPUs (Google Benchmark)", f"{ctx.get('num_cpus', '?')} at {ctx.get('mhz_per_cpu', '?')} MHz"
                                    + (", frequency scaling on" if ctx.get("cpu_scaling_enabled") else "")],
        ["threads used for 'all'", str(analysis.threads_all(table))],
    ]
    caches = ", ".join(f"L{c['level']} {c['type'].lower()} {fmt.bytes_(c['size'])}"
                       + (f" (shared by {c['num_sharing']})" if c.get("num_sharing", 1) > 1 else "")
                       for c in run.caches)
    if caches:
        sysconf = run.caches_source == "sysconf"
        rows.append(["caches (sysconf: this guest lists none in sysfs; its L3 taken as shared)" if sysconf else "caches", caches])
    if run.memory_bytes:
        rows.append(["RAM", fmt.bytes_(run.memory_bytes)])
    if run.naive_memory_budget_bytes:
        rows.append(["naive memory budget", fmt.bytes_(run.naive_memory_budget_bytes)])
    for t in analysis.thread_counts(table):
        peak, triad = run.fma_peak_gflops(t), run.triad_gbs(t)
        isa = run.fma_peak_isa(t)
        if peak:
            rows.append([f"measured fp32 FMA peak, {t} thread(s)", f"{fmt.sig(peak)} GFLOP/s ({isa})"])
        if triad:
            rows.append([f"measured triad bandwidth, {t} thread(s)", f"{fmt.sig(triad)} GB/s"])
    for key in sorted(k for k in ctx if k.startswith("dispatch ")):
        rows.append([f"{key.split(' ', 1)[1]} dispatched to", fmt.code(ctx[key])])
    for key, label in (("compiler", "compiler"), ("cxx_flags", "C++ flags"), ("xsimd_version", "xsimd"),
                       ("onetbb_version", "oneTBB"), ("openblas_config", "OpenBLAS"),
                       ("openblas_corename", "OpenBLAS core"), ("google_benchmark_version", "Google Benchmark"),
                       ("library_build_type", "Google Benchmark library build"), ("attnbench_preset", "preset"),
                       ("host_name", "host"), ("date", "date"), ("executable", "executable")):
        if key in ctx:
            rows.append([label, str(ctx[key])])
    load = ctx.get("load_avg")
    if load:
        rows.append(["load average at start (1, 5, 15 min)", ", ".join(f"{float(v):.2f}" for v in load)])
    s.add(Table(["what", "value"], rows, align="ll"))
    if ctx.get("library_build_type") == "debug":
        s.add(Paragraph("Google Benchmark's own library reports a debug build (`library_build_type`); that is "
                        "Debian's packaged harness, not attnbench, whose kernels are built as the C++ flags above say."))
