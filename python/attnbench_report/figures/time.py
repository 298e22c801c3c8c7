"""Figure 1: time per call against n, log-log, per kernel at each head dim, with each curve's
least-squares exponent printed at its end and an n^2 guide line."""
from __future__ import annotations

import numpy as np

from .. import analysis
from .. import plotting
from ..load.results import Table

STEM = "fig1_time_vs_n"
TITLE = "Time per call vs sequence length"


def draw(table: Table, out_dir) -> plotting.FigureFile:
    plt = plotting.plt
    data = table.where(causal=False)
    dims, threads = data.values("d"), analysis.thread_counts(data)
    all_threads = analysis.threads_all(data)
    kernels = data.measured().values("kernel")
    fig, axes = plt.subplots(len(threads), len(dims), figsize=(5.0 * len(dims), 4.0 * len(threads)),
                             squeeze=False)
    for row, t in enumerate(threads):
        fits = analysis.time_fits(data, t)
        for col, d in enumerate(dims):
            ax = axes[row][col]
            ns_here, labels, guide_points = [], [], []
            for kernel in kernels:
                n, ms = data.series("time_ms_median", kernel=kernel, d=d, threads=t)
                if not len(n):
                    continue
                ax.plot(n, ms, **plotting.kernel_style(kernel), markersize=4, linewidth=1.3)
                ns_here.extend(n)
                guide_points.append((n[0], ms[0]))
                fit = fits.get((kernel, d))
                if fit is not None:
                    labels.append((n[-1], ms[-1], f"b={fit.slope:.2f}", plotting.kernel_style(kernel)["color"]))
            if not ns_here:
                plotting.no_data(ax)
                continue
            # n^2 guide through the geometric mean of the curves' first points
            n0 = min(p[0] for p in guide_points)
            t0 = float(np.exp(np.mean([np.log(p[1]) for p in guide_points if p[0] == n0])))
            guide_n = np.array([n0, max(ns_here)], dtype=float)
            ax.plot(guide_n, t0 * (guide_n / n0) ** 2, color="black", linestyle=":", linewidth=1.2)
            middle = float(np.sqrt(guide_n[0] * guide_n[-1]))
            ax.text(middle, t0 * (middle / n0) ** 2, "  n² guide", ha="left", va="top", fontsize=7.5)
            ax.set_yscale("log")
            plotting.log_n_axis(ax, ns_here)
            ax.set_xlim(min(ns_here) / 1.3, max(ns_here) * 2.6)
            plotting.spread_labels(ax, labels)
            ax.set_title(f"d = {d}, {plotting.threads_label(t, all_threads)}")
            ax.set_xlabel("sequence length n (queries = keys)")
            ax.set_ylabel("time per call (ms, median)")
    fig.suptitle("Time per call vs n: one head, fp32, not causal; b = least-squares exponent of t ∝ n^b, printed at each curve's end")
    from matplotlib.lines import Line2D

    plotting.kernel_legend(fig, kernels, [(Line2D([], [], color="black", linestyle=":"), "n² guide")])
    plotting.finish(fig)
    return plotting.save(fig, out_dir, STEM, TITLE)
