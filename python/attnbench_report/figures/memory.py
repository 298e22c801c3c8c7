"""Figure 2: memory against n, log-log: the naive kernel's measured scratch and RSS (slope 2, the
n x n score matrix) against the tiled kernel's (slope 1, packed K and V), the machine's RAM as a
line, and both fits extrapolated to n = 128,000, where one head's fp32 score matrix is 65.5 GB."""
from __future__ import annotations

import numpy as np

from ..analysis import memory as analysis_memory
from .. import formatting as fmt
from .. import plotting
from ..load.results import Table

STEM = "fig2_memory_vs_n"
TITLE = "Memory vs sequence length"


def draw(table: Table, out_dir) -> plotting.FigureFile:
    plt = plotting.plt
    run = table.runs[0]
    d = analysis_memory.memory_d(table)
    fig, ax = plt.subplots(figsize=(8.5, 5.6))
    curves = analysis_memory.memory_curves(table, d) if d is not None else []
    if not curves:
        plotting.no_data(ax)
        return plotting.save(fig, out_dir, STEM, TITLE)
    n_end = analysis_memory.EXTRAPOLATE_N
    n_min = min(float(c.n.min()) for c in curves)
    for c in curves:
        style = {"color": "#ff7f0e" if c.kernel.startswith("naive") else "#1f77b4",
                 "marker": plotting.kernel_style(c.kernel)["marker"]}
        what = "scratch (workspace peak)" if c.measure == "scratch_bytes" else "process RSS high-water"
        slope = f", slope {c.fit.slope:.2f}" if c.fit else ""
        line_style = "-" if c.measure == "scratch_bytes" else ":"
        marker = style["marker"] if c.measure == "scratch_bytes" else "x"
        ax.plot(c.n, c.bytes, color=style["color"], linestyle=line_style, marker=marker, markersize=5,
                label=f"{c.kernel} {what}{slope}")
        if c.model is not None:
            ext = np.geomspace(c.n.max(), n_end, 40)
            ax.plot(ext, c.model.predict(ext), color=style["color"], linestyle=(0, (4, 3)), linewidth=1, alpha=0.8,
                    label=f"{c.kernel.split('/')[0]} scratch model {c.model.describe('B')}, extrapolated")
            end = c.extrapolated(n_end)
            ax.annotate(f"{fmt.bytes_(end)}", xy=(n_end, end), xytext=(6, 0), textcoords="offset points",
                        color=style["color"], fontsize=8, va="center")
    # the analytic score matrix, what the naive kernel must hold: 4 n^2 bytes
    grid = np.geomspace(n_min, n_end, 60)
    ax.plot(grid, analysis_memory.score_matrix_bytes(grid), color="0.35", linewidth=1,
            label="one head's fp32 score matrix, 4·n² bytes")
    scores_end = analysis_memory.score_matrix_bytes(n_end)
    ax.plot([n_end], [scores_end], "o", color="0.35")
    ax.annotate(f"n = {fmt.count(n_end)}: {fmt.bytes_(scores_end)}", xy=(n_end, scores_end), xytext=(-8, 6),
                textcoords="offset points", ha="right", fontsize=8.5, color="0.2")
    if run.memory_bytes:
        ax.axhline(run.memory_bytes, color="black", linewidth=1.4)
        ax.text(n_min, run.memory_bytes, f" this machine's RAM: {fmt.bytes_(run.memory_bytes)}", va="bottom", fontsize=8)
    if run.naive_memory_budget_bytes:
        ax.axhline(run.naive_memory_budget_bytes, color="black", linewidth=0.8, linestyle="-.")
        ax.text(n_min, run.naive_memory_budget_bytes,
                f" naive memory budget (half of RAM): {fmt.bytes_(run.naive_memory_budget_bytes)}", va="top", fontsize=8)
    ax.axvline(n_end, color="0.6", linewidth=0.8, linestyle="--")
    ax.set_yscale("log")
    measured_n = analysis_memory.measured_lengths(curves)
    plotting.log_n_axis(ax, measured_n + [n_end])
    ax.set_xlim(n_min / 1.4, n_end * 4)
    plotting.bytes_axis(ax.yaxis)
    ax.set_xlabel("sequence length n (queries = keys); slopes: log-log least squares over the 3 largest measured n")
    ax.set_ylabel("bytes (decimal: 1 GB = 10⁹ B)")
    ax.set_title(f"Memory vs n at d = {d}, one thread: naive holds the n × n scores, tiled only packed K, V")
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.14), ncol=2, frameon=False)
    for label in ax.get_xticklabels():
        label.set_rotation(45)
        label.set_fontsize(7.5)
    return plotting.save(fig, out_dir, STEM, TITLE)
