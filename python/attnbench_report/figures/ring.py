"""Figure 15: the ring window. Left, each (n, mask)'s median time for one rank of one thread, two
ranks of one thread (the ring over MPI) and one rank of two oneTBB threads; right, the network model:
a million-token causal head's step compute and step transfer against the node count, on each
network, where the transfer stops hiding behind the compute."""
from __future__ import annotations

import numpy as np

from .. import plotting
from ..analysis import ring as analysis_ring
from ..narrative.ring import FIGURE

TITLE = "Ring attention: two ranks against one, and the network model"
# One colour per configuration (one implementation, the tiled SIMD kernel, in each).
COLORS = {"one rank": "#7f7f7f", "two ranks": "#1f77b4", "two threads": "#ff7f0e"}
LABELS = {"one rank": "one rank, 1 thread", "two ranks": "two ranks × 1 thread (ring)",
          "two threads": "one rank, 2 oneTBB threads"}
NETWORK_COLORS = {"25 Gb/s Ethernet": "#d62728", "200 Gb/s InfiniBand": "#2ca02c"}


def draw(window, out_dir) -> plotting.FigureFile:
    import matplotlib.pyplot as plt

    fig, (bars, net) = plt.subplots(1, 2, figsize=(11.0, 4.2))
    x = np.arange(len(window.rows))
    width = 0.26
    for i, config in enumerate(analysis_ring.CONFIGS):
        bars.bar(x + (i - 1) * width, [r.median_seconds[config] * 1e3 for r in window.rows], width,
                 color=COLORS[config], label=LABELS[config])
    bars.set_xticks(x, [f"n {r.n:,}\n{'causal' if r.causal else 'full'}" for r in window.rows], fontsize=8)
    bars.set_ylabel("median time per call (ms)")
    bars.set_title(f"{window.rows[0].kernel}, d = {window.d}, one head", fontsize=10)
    bars.legend(fontsize=7.5)

    nodes = np.unique(np.geomspace(8, 1 << 16, 40).astype(int))
    predictions = window.model_at(nodes)
    compute = [p.step_compute for p in predictions if p.network == next(iter(analysis_ring.NETWORKS))]
    net.plot(nodes, np.array(compute) * 1e3, color="#1f77b4", label="step compute (all networks)")
    for network in analysis_ring.NETWORKS:
        net.plot(nodes, [p.step_transfer * 1e3 for p in predictions if p.network == network], linestyle="--",
                 color=NETWORK_COLORS[network], label=f"step transfer, {network}")
        rows = analysis_ring.crossover_rows(window.core_flops, window.cores, network)
        net.axvline(analysis_ring.MODEL_TOKENS / rows, color=NETWORK_COLORS[network], alpha=0.4, linewidth=1)
    net.set_xscale("log")
    net.set_yscale("log")
    net.set_xlabel("nodes")
    net.set_ylabel("per ring step (ms)")
    net.set_title(f"Model: {analysis_ring.MODEL_TOKENS:,}-token causal head, nodes of {window.cores} such cores",
                  fontsize=10)
    net.legend(fontsize=7.5)
    fig.suptitle("Ring attention over MPI" + (f"; {window.cpu}" if window.cpu else ""))
    plotting.finish(fig)
    return plotting.save(fig, out_dir, FIGURE, TITLE)
