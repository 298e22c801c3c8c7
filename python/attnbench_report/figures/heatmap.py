"""Figure 4: GFLOP/s over (n, d), one heatmap per kernel, one thread, on one shared colour scale."""
from __future__ import annotations

import math

import numpy as np
from matplotlib.colors import LogNorm

from .. import plotting
from ..load.results import Table

STEM = "fig4_heatmap"
TITLE = "GFLOP/s over (n, d) per kernel"


def draw(table: Table, out_dir, threads: int = 1) -> plotting.FigureFile:
    plt = plotting.plt
    data = table.where(causal=False, threads=threads)
    kernels = data.values("kernel")
    ns, dims = data.values("n"), data.values("d")
    columns = min(4 if len(ns) <= 6 else 3, max(1, len(kernels)))
    rows = max(1, math.ceil(len(kernels) / columns))
    panel_width = max(2.6, 0.48 * len(ns) + 0.6)
    fig, axes = plt.subplots(rows, columns, figsize=(panel_width * columns + 1.2, (0.5 * len(dims) + 1.5) * rows),
                             squeeze=False)
    measured = data.measured().column("gflops_median")
    if not len(measured):
        plotting.no_data(axes[0][0])
        return plotting.save(fig, out_dir, STEM, TITLE)
    norm = LogNorm(vmin=max(float(np.nanmin(measured)), 1e-3), vmax=float(np.nanmax(measured)))
    cmap = plt.get_cmap("viridis").with_extremes(bad="0.92")  # a copy; NaN cells (no point) in light grey
    image = None
    for index, kernel in enumerate(kernels):
        ax = axes[index // columns][index % columns]
        grid = np.full((len(dims), len(ns)), np.nan)
        notes = {}
        for r in data.where(kernel=kernel):
            i, j = dims.index(r.d), ns.index(r.n)
            if r.skipped:
                notes[(i, j)] = "skip"
            else:
                grid[i, j] = r.gflops_median
        image = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, norm=norm, aspect="auto", origin="lower")
        for i in range(len(dims)):
            for j in range(len(ns)):
                value = grid[i, j]
                if math.isfinite(value):
                    dark = norm(value) < 0.55
                    ax.text(j, i, f"{value:.3g}", ha="center", va="center", fontsize=7,
                            color="white" if dark else "black")
                elif (i, j) in notes:
                    ax.text(j, i, notes[(i, j)], ha="center", va="center", fontsize=6.5, color="0.45")
        ax.set_xticks(range(len(ns)), [str(n) for n in ns], fontsize=7, rotation=45)
        ax.set_yticks(range(len(dims)), [str(d) for d in dims], fontsize=7)
        ax.grid(False)
        ax.set_title(kernel, fontsize=9)
        ax.set_xlabel("sequence length n")
        if index % columns == 0:
            ax.set_ylabel("head dim d")
    for index in range(len(kernels), rows * columns):
        axes[index // columns][index % columns].set_visible(False)
    fig.suptitle(f"GFLOP/s (median) over sequence length n and head dim d, {threads} thread(s), not causal; "
                 "grey: not measured (skip: skipped, see the list)")
    plotting.finish(fig)
    if image is not None:
        bar = fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.8, pad=0.02)
        bar.set_label("GFLOP/s (log scale)")
        ticks = [v for v in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000) if norm.vmin <= v <= norm.vmax]
        bar.set_ticks(ticks, labels=[f"{v:g}" for v in ticks])
        bar.ax.minorticks_off()
    return plotting.save(fig, out_dir, STEM, TITLE)
