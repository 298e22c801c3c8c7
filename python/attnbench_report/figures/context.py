"""Figure 14: the long-context window's time against n, log-log: the sliding window (linear in n) and
the full causal mask (quadratic), one panel per thread count; the full causal time predicted from its
time per pair, dashed, past the lengths it measured."""
from __future__ import annotations

import numpy as np

from ..analysis import context as analysis_context
from .. import plotting
from ..narrative.context import FIGURE

TITLE = "Sliding window against full causal attention"
# One colour per mask (one implementation: the tiled SIMD kernel).
COLORS = {"window": "#1b9e77", "full": "#d95f02"}


def draw(points: list, all_threads: int, cpu: str, out_dir) -> plotting.FigureFile:
    import matplotlib.pyplot as plt

    found = analysis_context.curves(points)
    fig, axes = plt.subplots(1, max(1, len(found)), figsize=(5.2 * max(1, len(found)), 4.0), squeeze=False)
    for ax, c in zip(axes[0], found):
        ns = sorted(c.windowed)
        ax.plot(ns, [analysis_context._time_s(c.windowed[n]) * 1e3 for n in ns], marker="o",
                color=COLORS["window"], label=f"window {c.window:,} keys")
        if c.full:
            fn = sorted(c.full)
            ax.plot(fn, [analysis_context._time_s(c.full[n]) * 1e3 for n in fn], marker="s",
                    color=COLORS["full"], label="full causal")
            beyond = [n for n in ns if n >= fn[-1]]
            if len(beyond) > 1:
                x = np.array(beyond, dtype=float)
                ax.plot(x, [c.predicted_full_ms(int(n)) for n in x], linestyle="--", color=COLORS["full"],
                        label="full causal, predicted")
        ax.set_yscale("log")
        plotting.log_n_axis(ax, ns)
        ax.set_xlabel("n (query rows = keys)")
        ax.set_ylabel("time per call (ms)")
        ax.set_title(plotting.threads_label(c.threads, all_threads), fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("One causal head: a sliding window against the full mask (fastest repetitions)"
                 + (f"; {cpu}" if cpu else ""))
    plotting.finish(fig)
    return plotting.save(fig, out_dir, FIGURE, TITLE)
