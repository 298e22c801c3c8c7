"""Figure 13: the cost model's predicted time against the measured time (analysis.best_ms), log-log, every forward
point the model prices (model.py), one panel per thread count, with y = x and the SIMD kernels'
band (model.SIMD_BAND); hollow markers are points with n < model.MIN_N, which the targets leave
out."""
from __future__ import annotations

import numpy as np

from .. import analysis
from .. import model as cost_model
from .. import plotting

STEM = "fig13_model"
TITLE = "Cost model: predicted against measured time"


def draw(model: cost_model.Model, table, out_dir) -> plotting.FigureFile:
    plt = plotting.plt
    threads = sorted({p.record.threads for p in model.predictions})
    all_threads = analysis.threads_all(table)
    fig, axes = plt.subplots(1, max(1, len(threads)), figsize=(5.6 * max(1, len(threads)), 5.2), squeeze=False)
    kernels = model.kernels()
    for col, t in enumerate(threads):
        ax = axes[0][col]
        mine = [p for p in model.predictions if p.record.threads == t]
        if not mine:
            plotting.no_data(ax)
            continue
        values = np.array([[p.measured_s, p.predicted_s] for p in mine]) * 1e3
        low, high = float(values.min()) / 1.6, float(values.max()) * 1.6
        grid = np.geomspace(low, high, 50)
        band = cost_model.SIMD_BAND
        ax.fill_between(grid, grid * (1 - band), grid * (1 + band), color="0.85", linewidth=0,
                        label=f"±{100 * band:.0f}%")
        ax.plot(grid, grid, color="black", linewidth=1.0)
        for kernel in kernels:
            points = [p for p in mine if p.record.kernel == kernel]
            if not points:
                continue
            style = plotting.kernel_style(kernel)
            for targeted in (True, False):
                chosen = [p for p in points if (p.record.n >= cost_model.MIN_N) == targeted]
                if chosen:
                    ax.scatter([p.measured_s * 1e3 for p in chosen], [p.predicted_s * 1e3 for p in chosen],
                               s=16, marker=style["marker"], alpha=0.8, linewidths=0.8,
                               color=style["color"] if targeted else "none", edgecolors=style["color"])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(low, high)
        ax.set_ylim(low, high)
        ax.set_aspect("equal")
        ax.set_title(plotting.threads_label(t, all_threads))
        ax.set_xlabel(f"measured time per call (ms, {analysis.statistic(table)})")
        ax.set_ylabel("predicted time per call (ms)")
    fig.suptitle("Cost model: every forward point's time predicted from the machine's constants "
                 f"(black: y = x; grey: ±{100 * cost_model.SIMD_BAND:.0f}%; hollow: n < {cost_model.MIN_N})")
    plotting.kernel_legend(fig, kernels)
    plotting.finish(fig)
    return plotting.save(fig, out_dir, STEM, TITLE)
