"""Figure 7: thread scaling. Speedup of all threads over one against n per kernel at each head dim
(ideal: the thread count), and GFLOP/s against the thread count at the largest common length."""
from __future__ import annotations

import math

from .. import analysis
from .. import plotting
from ..load.results import Table

STEM = "fig7_thread_scaling"
TITLE = "Thread scaling"


def draw(table: Table, out_dir) -> plotting.FigureFile:
    plt = plotting.plt
    data = table.measured().where(causal=False)
    dims, threads = data.values("d"), analysis.thread_counts(data)
    all_threads = analysis.threads_all(data)
    kernels = data.values("kernel")
    panels = len(dims) + 1
    columns = min(3, panels)
    rows = math.ceil(panels / columns)
    fig, grid = plt.subplots(rows, columns, figsize=(4.8 * columns, 3.9 * rows), squeeze=False)
    axes = grid.ravel()
    for ax in axes[panels:]:
        ax.set_visible(False)
    for col, d in enumerate(dims):
        ax = axes[col]
        ns_here = []
        for kernel in kernels:
            c = analysis.Comparison("threads", kernel, kernel, kernel, threads_vs_one=True)
            n, speedup = analysis.speedup_series(data, c, d, all_threads)
            if len(n):
                ax.plot(n, speedup, **plotting.kernel_style(kernel), markersize=4)
                ns_here.extend(n)
        if not ns_here or all_threads == 1:
            plotting.no_data(ax, "one thread count measured")
            continue
        ax.axhline(all_threads, color="black", linewidth=1, linestyle=":")
        ax.text(min(ns_here), all_threads, f" ideal: {all_threads}x", va="bottom", fontsize=7.5)
        ax.axhline(1, color="black", linewidth=0.8)
        plotting.log_n_axis(ax, ns_here)
        ax.set_title(f"d = {d}: {all_threads} threads over 1")
        ax.set_xlabel("sequence length n")
        ax.set_ylabel("speedup (time on 1 thread / time)")
    # GFLOP/s against threads at the largest length every kernel has at every thread count
    ax = axes[panels - 1]
    d_ref = max(dims, key=lambda d: len(data.where(d=d))) if dims else None
    drawn, labels = False, []
    for kernel in kernels:
        rows = data.where(kernel=kernel, d=d_ref)
        common = set.intersection(*[set(rows.where(threads=t).column("n")) for t in threads]) if threads else set()
        if not common:
            continue
        n = max(common)
        ts = sorted(threads)
        gflops = [rows.one(n=n, threads=t).gflops_median for t in ts]
        ax.plot(ts, gflops, **plotting.kernel_style(kernel), markersize=4)
        labels.append((ts[-1], gflops[-1], f"n={int(n)}", plotting.kernel_style(kernel)["color"]))
        drawn = True
    if drawn:
        ax.set_xticks(sorted(threads))
        ax.set_yscale("log")
        ax.set_xlim(min(threads) - 0.1, max(threads) * 1.25)
        plotting.spread_labels(ax, labels)
        ax.set_title(f"d = {d_ref}: GFLOP/s by threads, at each kernel's largest n")
        ax.set_xlabel("threads")
        ax.set_ylabel("GFLOP/s (median)")
    else:
        plotting.no_data(ax)
    fig.suptitle(f"Thread scaling, not causal ({table.runs[0].tasks_phrase()} under tbb::parallel_for)")
    plotting.kernel_legend(fig, kernels)
    plotting.finish(fig)
    return plotting.save(fig, out_dir, STEM, TITLE)
