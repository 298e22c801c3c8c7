"""Figure 3: GFLOP/s against n per kernel, under the machine's measured FMA peak as a ceiling."""
from __future__ import annotations

from .. import analysis
from .. import plotting
from ..load.results import Table

STEM = "fig3_gflops_vs_n"
TITLE = "Throughput vs sequence length"


def draw(table: Table, out_dir) -> plotting.FigureFile:
    data = table.where(causal=False)
    fig = plotting.gflops_grid(table.runs[0], data, analysis.threads_all(data), "d = {d}, {threads}",
                               "GFLOP/s (4·n²·d FLOPs per call / time)",
                               "Throughput vs n: one head, fp32, not causal; the black line is the "
                               "measured fp32 FMA peak")
    plotting.finish(fig)
    return plotting.save(fig, out_dir, STEM, TITLE)
