"""Figure 12: decoding's K/V bandwidth (bytes one call reads over its time) against those bytes: one
panel per thread count and (layout, query rows), one series per storage type, under the measured
triad and the 75 % of it that the decode goals want beyond the L3, with the L2 and L3 sizes."""
from __future__ import annotations

from ..analysis import decode as analysis_decode
from .. import formatting
from .. import plotting

STEM = "fig12_decode_bandwidth"
TITLE = "Decode K/V bandwidth against K/V bytes"


def draw(window, out_dir) -> plotting.FigureFile:
    def panel(ax, series, threads, layout, rows):
        for rank, dtype, points in series:
            ax.plot([p.value("kv_bytes") for p in points], [p.value("GB/s") for p in points],
                    **plotting.decode_style(rank, dtype), markersize=4, linewidth=1.3)
        triad = window.run.triad_gbs(threads)
        if triad:
            share = analysis_decode.TARGET_PCT_TRIAD / 100
            ax.axhline(triad, color="black", linewidth=1.1)
            ax.axhline(share * triad, color="black", linewidth=0.9, linestyle=":")
            low = ax.get_xlim()[0] * 1.1
            ax.text(low, triad, f"triad {formatting.sig(triad)} GB/s", fontsize=7, va="bottom")
            ax.text(low, share * triad, f"{share:.0%} of the triad", fontsize=7, va="top")
        ax.set_ylim(bottom=0)

    fig = plotting.decode_grid(
        window, "GB/s of K/V read (bytes / call time)",
        "Decoding against a KV cache: K/V bytes per second against the bytes a call reads, under the measured "
        "triad (solid) and 75% of it (dotted)", panel, log_y=False)
    plotting.finish(fig)
    return plotting.save(fig, out_dir, STEM, TITLE)
