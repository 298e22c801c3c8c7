"""Comparison figures for several runs (machines or commits): GFLOP/s against n per kernel with the
runs overlaid, and each run's GFLOP/s over the first run's at every point they share."""
from __future__ import annotations

import math

import numpy as np
from matplotlib.lines import Line2D

from .. import plotting
from ..load.results import Table

_DIM_STYLES = ["-", "--", "-.", ":"]


def common_kernels(table: Table) -> list:
    kernels = None
    for run in table.runs:
        mine = set(table.measured().where(run=run.index).values("kernel"))
        kernels = mine if kernels is None else kernels & mine
    return [k for k in table.values("kernel") if k in (kernels or set())]


def draw_overlay(table: Table, out_dir, threads: int = 1) -> plotting.FigureFile:
    plt = plotting.plt
    kernels = common_kernels(table)
    data = table.forward().matrix().measured().where(causal=False, threads=threads)
    dims = data.values("d")
    columns = min(3, max(1, len(kernels)))
    rows = max(1, math.ceil(len(kernels) / columns))
    fig, axes = plt.subplots(rows, columns, figsize=(4.6 * columns, 3.5 * rows), squeeze=False, sharey=True)
    for index, kernel in enumerate(kernels):
        ax = axes[index // columns][index % columns]
        ns_here = []
        for run in table.runs:
            for j, d in enumerate(dims):
                n, gflops = data.series("gflops_median", run=run.index, kernel=kernel, d=d)
                if len(n):
                    ax.plot(n, gflops, color=plotting.RUN_COLORS[run.index % len(plotting.RUN_COLORS)],
                            linestyle=_DIM_STYLES[j % len(_DIM_STYLES)], marker="o", markersize=3.5)
                    ns_here.extend(n)
        ax.set_title(kernel, fontsize=9)
        if ns_here:
            ax.set_yscale("log")
            plotting.log_n_axis(ax, ns_here)
        ax.set_xlabel("sequence length n")
        ax.set_ylabel("GFLOP/s (median)")
    for index in range(len(kernels), rows * columns):
        axes[index // columns][index % columns].set_visible(False)
    if not kernels:
        axes[0][0].set_visible(True)
        plotting.no_data(axes[0][0], "no kernel measured in every run")
    handles = [Line2D([], [], color=plotting.RUN_COLORS[r.index % len(plotting.RUN_COLORS)], marker="o") for r in table.runs]
    labels = [r.label for r in table.runs]
    handles += [Line2D([], [], color="black", linestyle=_DIM_STYLES[j % len(_DIM_STYLES)]) for j in range(len(dims))]
    labels += [f"d = {d}" for d in dims]
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(4, len(labels)), frameon=False)
    fig.suptitle(f"Forward GFLOP/s vs n per kernel, runs overlaid ({threads} thread(s), not causal)")
    plotting.finish(fig)
    return plotting.save(fig, out_dir, "fig_compare_gflops", "GFLOP/s per kernel, runs overlaid")


def draw_ratios(table: Table, pairs: list, out_dir) -> plotting.FigureFile:
    """pairs: (kernel, threads, ratio, run index) for every shared point of every run after the first."""
    plt = plotting.plt
    kernels = common_kernels(table)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.75 * len(kernels) + 3), 4.6))
    rng = np.random.default_rng(0)  # fixed jitter: the same figure every time
    markers = {}
    for kernel, threads, ratio, run_index in pairs:
        if kernel not in kernels or not math.isfinite(ratio):
            continue
        x = kernels.index(kernel) + rng.uniform(-0.18, 0.18) + 0.12 * (run_index - 1)
        marker = "o" if threads == 1 else "^"
        markers[threads] = marker
        ax.scatter([x], [ratio], color=plotting.RUN_COLORS[run_index % len(plotting.RUN_COLORS)], marker=marker,
                   s=18, alpha=0.75)
    ax.axhline(1.0, color="black", linewidth=0.9)
    ax.set_yscale("log")
    plotting.log_speedup_axis(ax.yaxis)
    ax.set_xticks(range(len(kernels)), kernels, rotation=35, ha="right", fontsize=7.5)
    ax.set_ylabel(f"GFLOP/s over {table.runs[0].label}'s")
    ax.set_title("Each run against the first at every shared point (n, d, threads, causal)")
    handles = [Line2D([], [], color=plotting.RUN_COLORS[r.index % len(plotting.RUN_COLORS)], marker="o", linestyle="")
               for r in table.runs[1:]]
    labels = [r.label for r in table.runs[1:]]
    for threads, marker in sorted(markers.items()):
        handles.append(Line2D([], [], color="0.3", marker=marker, linestyle=""))
        labels.append(f"{threads} thread(s)")
    ax.legend(handles, labels, fontsize=7.5, loc="best")
    return plotting.save(fig, out_dir, "fig_compare_ratio", "Ratios to the first run")
