"""Figure 9: the backward pass's GFLOP/s against n per kernel (FLOPs = 2.5 × the forward's 4·n²·d),
one panel per head dim and thread count, under the machine's measured FMA peak."""
from __future__ import annotations

from .. import analysis
from ..analysis import backward as analysis_backward
from .. import plotting
from ..load.results import Table

STEM = "fig9_backward_gflops"
TITLE = "Backward throughput vs sequence length"


def draw(table: Table, out_dir) -> plotting.FigureFile:
    fig = plotting.gflops_grid(table.runs[0], analysis_backward.backward(table),
                               analysis.threads_all(table), "backward, d = {d}, {threads}",
                               "GFLOP/s (2.5·4·n²·d FLOPs per call / time)",
                               "Backward pass throughput vs n: one head, fp32, not causal; the black "
                               "line is the measured fp32 FMA peak")
    plotting.finish(fig)
    return plotting.save(fig, out_dir, STEM, TITLE)
