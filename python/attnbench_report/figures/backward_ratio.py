"""Figure 10: where the backward's time goes against the forward's: backward time over forward time
at the same kernel, n, d and thread count, against n, with the 2.5 its FLOP count predicts."""
from __future__ import annotations

from .. import analysis
from ..analysis import backward as analysis_backward
from .. import plotting
from ..load.results import Table

STEM = "fig10_backward_over_forward"
TITLE = "Backward time over forward time"


def draw(table: Table, out_dir) -> plotting.FigureFile:
    plt = plotting.plt
    ratios = analysis_backward.time_ratios(table)
    points = Table([r.backward for r in ratios], table.runs)
    dims, threads = points.values("d") or [0], analysis.thread_counts(points) or [1]
    all_threads = analysis.threads_all(table)
    kernels = points.values("kernel")
    fig, axes = plt.subplots(len(threads), len(dims), figsize=(5.0 * len(dims), 3.8 * len(threads)),
                             squeeze=False, sharey=True)
    for row, t in enumerate(threads):
        for col, d in enumerate(dims):
            ax = axes[row][col]
            ns_here = []
            for kernel in kernels:
                mine = sorted((r for r in ratios if r.backward.kernel == kernel and r.backward.d == d
                               and r.backward.threads == t), key=lambda r: r.backward.n)
                if mine:
                    ax.plot([r.backward.n for r in mine], [r.ratio for r in mine], **plotting.kernel_style(kernel),
                            markersize=4, linewidth=1.3)
                    ns_here.extend(r.backward.n for r in mine)
            if not ns_here:
                plotting.no_data(ax, "no backward point with a forward twin")
                continue
            ax.axhline(analysis_backward.BACKWARD_FLOP_FACTOR, color="black", linewidth=1.1, linestyle=":")
            ax.text(min(ns_here), analysis_backward.BACKWARD_FLOP_FACTOR, " 2.5x: the FLOP count", va="bottom",
                    fontsize=7.5)
            ax.set_yscale("log")
            plotting.log_speedup_axis(ax.yaxis)
            plotting.log_n_axis(ax, ns_here)
            ax.set_title(f"d = {d}, {plotting.threads_label(t, all_threads)}")
            ax.set_xlabel("sequence length n (queries = keys)")
            ax.set_ylabel("backward time / forward time")
    fig.suptitle("Backward time over forward time at the same point, not causal; dotted: the 2.5x that the "
                 "FLOP count predicts")
    plotting.kernel_legend(fig, kernels)
    plotting.finish(fig)
    return plotting.save(fig, out_dir, STEM, TITLE)
