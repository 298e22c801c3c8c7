"""Figure 11: decoding's time per token against the K/V bytes one call reads, log-log: one panel per
thread count and (layout, query rows), one series per storage type, the bandwidth line time = bytes /
triad (per token: divided by the query rows), the L2 and L3 sizes, and in the llama rows:1 panels the
generation loop's median step at the cache length of its middle step."""
from __future__ import annotations

import numpy as np

from ..analysis import decode as analysis_decode
from .. import formatting
from .. import plotting

STEM = "fig11_decode_time_per_token"
TITLE = "Decode time per token against K/V bytes"


def draw(window, out_dir) -> plotting.FigureFile:
    from matplotlib.lines import Line2D

    steps = analysis_decode.steps(window)
    kernels = analysis_decode.decode(window).values("kernel")

    def panel(ax, series, threads, layout, rows):
        for rank, dtype, points in series:
            ax.plot([p.value("kv_bytes") for p in points], [p.value("token_us") for p in points],
                    **plotting.decode_style(rank, dtype), markersize=4, linewidth=1.3)
        triad = window.run.triad_gbs(threads)
        if triad:  # bytes / (GB/s) is ns; per token, over the query rows that share the call's bytes
            x = np.geomspace(*ax.get_xlim(), 2)
            ax.plot(x, x / (triad * 1e3) / rows, color="black", linewidth=1.1)
            ax.text(x[0] * 1.1, x[0] / (triad * 1e3) / rows, f"bytes / triad ({formatting.sig(triad)} GB/s)"
                    + (f" / {rows} rows" if rows > 1 else ""), fontsize=7, va="bottom", rotation=0)
        if (layout, rows) == ("llama", 1):
            for s in steps:
                p = s.point
                if p.threads == threads and p.kernel in kernels:
                    style = plotting.decode_style(kernels.index(p.kernel), p.dtype)
                    ax.plot([s.median_bytes], [p.value("token_us")], marker="*", color=style["color"],
                            linestyle="none", markersize=10, markeredgecolor="black", markeredgewidth=0.5)

    star = Line2D([], [], marker="*", color="0.5", linestyle="none", markersize=10, markeredgecolor="black",
                  markeredgewidth=0.5)
    fig = plotting.decode_grid(
        window, "time per token (µs): call / query rows",
        "Decoding against a KV cache: time per token against the K/V bytes a call reads; black: the bytes at "
        "the measured triad bandwidth",
        panel, [(star, "generation loop, median step")] if steps else [])
    plotting.finish(fig)
    return plotting.save(fig, out_dir, STEM, TITLE)
