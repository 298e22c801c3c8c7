"""Figure 6: the roofline. Each measured point's arithmetic intensity (FLOPs per byte of compulsory
memory traffic, flops_per_call / bytes_moved) against its GFLOP/s, under the machine's two roofs:
the measured triad bandwidth (GB/s x FLOP/byte) and the measured FMA peak."""
from __future__ import annotations

import math

import numpy as np

from .. import analysis
from ..analysis import throughput as analysis_throughput
from .. import formatting as fmt
from .. import plotting
from ..load.results import Table

STEM = "fig6_roofline"
TITLE = "Roofline"


def draw(table: Table, out_dir) -> plotting.FigureFile:
    plt = plotting.plt
    run = table.runs[0]
    data = table.measured().where(causal=False)
    threads = analysis.thread_counts(data)
    all_threads = analysis.threads_all(data)
    kernels = data.values("kernel")
    fig, axes = plt.subplots(1, max(1, len(threads)), figsize=(6.2 * max(1, len(threads)), 5.0), squeeze=False,
                             sharey=True)
    n_min = min(data.values("n")) if len(data) else 1
    for col, t in enumerate(threads):
        ax = axes[0][col]
        rows = data.where(threads=t)
        intensity = np.array([analysis_throughput.arithmetic_intensity(r) for r in rows])
        if not len(intensity):
            plotting.no_data(ax)
            continue
        for kernel in kernels:
            mine = rows.where(kernel=kernel)
            x = [analysis_throughput.arithmetic_intensity(r) for r in mine]
            y = [r.gflops_median for r in mine]
            sizes = [14 + 10 * math.log2(r.n / n_min) for r in mine]
            style = plotting.kernel_style(kernel)
            ax.scatter(x, y, s=sizes, color=style["color"], marker=style["marker"], alpha=0.8,
                       edgecolors="black" if kernel.startswith("naive") else "none", linewidths=0.4)
        peak, bandwidth, ridge = run.fma_peak_gflops(t), run.triad_gbs(t), analysis_throughput.ridge(run, t)
        x_low = min(float(np.nanmin(intensity)) / 2, ridge / 4 if ridge else math.inf)
        x_high = float(np.nanmax(intensity)) * 2
        grid = np.geomspace(x_low, x_high, 200)
        if ridge:
            ax.plot(grid, np.minimum(peak, bandwidth * grid), color="black", linewidth=1.6)
            ax.axvline(ridge, color="0.5", linewidth=0.7, linestyle=":")
            ax.text(x_low * 1.1, bandwidth * x_low * 1.15,
                    f"triad {fmt.sig(bandwidth)} GB/s", rotation=0, fontsize=7.5, va="bottom")
            ax.text(x_high / 1.1, peak * 1.04, f"FMA peak {fmt.sig(peak)} GFLOP/s", ha="right", va="bottom", fontsize=7.5)
            ax.text(ridge * 1.05, peak / 12, f"ridge {fmt.sig(ridge)} FLOP/B", fontsize=7, color="0.35", rotation=90)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(x_low, x_high)
        ax.set_title(f"{plotting.threads_label(t, all_threads)}: marker size grows with n")
        ax.set_xlabel("arithmetic intensity (FLOPs per byte of compulsory traffic)")
        ax.set_ylabel("GFLOP/s (median)")
    fig.suptitle("Roofline: naive's intensity is capped near d/4 by its score-matrix sweeps, tiled's grows as n/4")
    plotting.kernel_legend(fig, kernels)
    plotting.finish(fig)
    return plotting.save(fig, out_dir, STEM, TITLE)
