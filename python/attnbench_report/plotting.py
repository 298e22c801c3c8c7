"""What every figure shares: the Agg backend, one style per kernel, log axes over n, saving PNG + SVG."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, never a window: CI has no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator  # noqa: E402

from . import analysis
from . import formatting

plt.rcParams.update({
    "figure.dpi": 100,
    "savefig.dpi": 110,
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.fontsize": 7.5,
    "svg.fonttype": "none",  # text stays text in the SVG: smaller, selectable, searchable
})

# One colour per backend (and ISA), one line style per strategy: tiled solid, naive dashed.
_BACKEND_COLORS = {
    "simd/avx512f": "#1f77b4",
    "simd-bf16/avx512bf16": "#00441b",
    "simd-bf16/amxbf16": "#66c2a4",
    "scalar-bf16": "#4d4d4d",
    "simd/avx2": "#17becf",
    "simd/sse4.2": "#9467bd",
    "openblas": "#d62728",
    "autovec": "#2ca02c",
    "scalar": "#7f7f7f",
}
_EXTRA_COLORS = ["#ff7f0e", "#8c564b", "#e377c2", "#bcbd22"]
# The contenders' own colours, apart from the backends': a library keeps its colour in every figure.
_CONTENDER_COLORS = {
    "numpy/textbook": "#bcbd22",
    "numpy/inplace": "#8c8c00",
    "torch/matmul": "#f4a582",
    "torch/sdpa": "#ff7f0e",
    "onednn/primitives": "#8c564b",
    "onednn/graph": "#543005",
    "openvino/sdpa": "#e377c2",
    "onnxruntime/mha": "#000075",
    "ggml/flash_attn_ext": "#3cb44b",
}
RUN_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"]


@dataclass(frozen=True)
class FigureFile:
    """A figure written to disk: its PNG (for Markdown) and SVG (for the HTML page)."""

    stem: str
    title: str
    png: Path
    svg: Path


def kernel_style(kernel: str) -> dict:
    parts = kernel.split("/")
    backend = "/".join(parts[1:])
    color = _BACKEND_COLORS.get(backend)
    if color is None:
        color = _EXTRA_COLORS[sum(map(ord, backend)) % len(_EXTRA_COLORS)]
    tiled = parts[0] == "tiled"
    return {"color": color, "linestyle": "-" if tiled else "--", "marker": "o" if tiled else "s"}


def implementation_color(name: str) -> str:
    """The one colour of an implementation in every figure: a contender's own, else its backend's
    (attnbench's kernels)."""
    return _CONTENDER_COLORS.get(name) or kernel_style(name)["color"]


def log_n_axis(ax, ns) -> None:
    """Log x axis with a tick at each measured n, labelled plainly (128, 4096, 65536)."""
    ax.set_xscale("log", base=2)
    ns = sorted({int(n) for n in ns})
    if ns:
        ax.xaxis.set_major_locator(FixedLocator(ns))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{int(round(v)):,}" if v >= 1 else f"{v:g}"))
        for label in ax.get_xticklabels():
            label.set_rotation(0)


def bytes_axis(axis) -> None:
    axis.set_major_formatter(FuncFormatter(lambda v, _: formatting.bytes_(v)))


def save(fig, out_dir: Path, stem: str, title: str) -> FigureFile:
    """Write `stem`.png and `stem`.svg into out_dir (deterministic: no dates, fixed SVG ids)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    png, svg = out_dir / f"{stem}.png", out_dir / f"{stem}.svg"
    fig.savefig(png, metadata={"Software": None}, bbox_inches="tight")
    # The salt makes clip-path ids unique per figure, so several SVGs can share one HTML page.
    with plt.rc_context({"svg.hashsalt": stem}):
        fig.savefig(svg, metadata={"Date": None, "Creator": None}, bbox_inches="tight")
    plt.close(fig)
    return FigureFile(stem=stem, title=title, png=png, svg=svg)


def finish(fig) -> None:
    """tight_layout leaving room at the top for the suptitle (about 0.45 inch, whatever the height)."""
    height = fig.get_size_inches()[1]
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / height))


def log_speedup_axis(axis) -> None:
    """Log axis labelled 0.5x, 1x, 2x, 5x ... with no minor labels."""
    from matplotlib.ticker import LogLocator

    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_minor_locator(NullLocator())
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))


def gflops_panel(ax, ns, peak: float | None, peak_label: str, fontsize: float) -> None:
    """A GFLOP/s-against-n panel's frame: the measured FMA peak as a black line labelled at the
    smallest n, a log y axis and the n axis of `ns`."""
    if peak:
        ax.axhline(peak, color="black", linewidth=1.3)
        ax.text(min(ns), peak, f" {peak_label}", va="bottom", fontsize=fontsize)
    ax.set_yscale("log")
    log_n_axis(ax, ns)


def gflops_grid(run, data, all_threads: int, panel_title: str, ylabel: str, suptitle: str):
    """GFLOP/s against n of every kernel in `data`, one panel per thread count (rows) and head dim
    (columns), each under the run's measured FMA peak; `panel_title` is formatted with d and the
    threads' label. The figure, its legend drawn; the caller saves it."""
    dims, threads = data.values("d"), analysis.thread_counts(data)
    kernels = data.measured().values("kernel")
    fig, axes = plt.subplots(len(threads), len(dims), figsize=(5.0 * len(dims), 4.0 * len(threads)),
                             squeeze=False, sharey=True)
    for row, t in enumerate(threads):
        peak = run.fma_peak_gflops(t)
        for col, d in enumerate(dims):
            ax = axes[row][col]
            ns_here = []
            for kernel in kernels:
                n, gflops = data.series("gflops_median", kernel=kernel, d=d, threads=t)
                if len(n):
                    ax.plot(n, gflops, **kernel_style(kernel), markersize=4, linewidth=1.3)
                    ns_here.extend(n)
            if not ns_here:
                no_data(ax)
                continue
            label = f"measured FMA peak {formatting.sig(peak)} GFLOP/s ({run.fma_peak_isa(t)})" if peak else ""
            gflops_panel(ax, ns_here, peak, label, 7.5)
            ax.set_title(panel_title.format(d=d, threads=threads_label(t, all_threads)))
            ax.set_xlabel("sequence length n (queries = keys)")
            ax.set_ylabel(ylabel)
    fig.suptitle(suptitle)
    kernel_legend(fig, kernels)
    return fig


def no_data(ax, message: str = "no measured points") -> None:
    ax.text(0.5, 0.5, message, transform=ax.transAxes, ha="center", va="center", color="0.4")
    ax.set_xticks([])
    ax.set_yticks([])


def threads_label(threads: int, all_threads: int) -> str:
    if threads == 1:
        return "1 thread"
    return f"{threads} threads" + (" (all)" if threads == all_threads else "")


def kernel_legend(fig, kernels: list, extra: list = ()) -> None:
    """One legend for the whole figure, under the axes: a line per kernel in its style."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], **kernel_style(k), markersize=5) for k in kernels]
    labels = list(kernels)
    for handle, label in extra:
        handles.append(handle)
        labels.append(label)
    columns = min(4, max(1, len(labels)))
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=columns, frameon=False)


def spread_labels(ax, items: list, min_gap_fraction: float = 0.055) -> None:
    """Write text labels at the right end of curves on a log y axis, nudged apart so none overlap.
    items: (x, y, text, color)."""
    import math

    low, high = ax.get_ylim()
    gap = min_gap_fraction * (math.log10(high) - math.log10(low))
    by_x = {}
    for item in items:  # labels at the same x compete for room; others do not
        by_x.setdefault(item[0], []).append(item)
    for group in by_x.values():
        _spread(ax, group, gap, math.log10(high))


def _spread(ax, items: list, gap: float, log_high: float) -> None:
    import math

    items = sorted(items, key=lambda item: item[1])
    ys = [math.log10(item[1]) for item in items]
    for i in range(1, len(ys)):  # push up to keep the gap ...
        ys[i] = max(ys[i], ys[i - 1] + gap)
    top = log_high - gap / 2
    if ys[-1] > top:  # ... then back down from the top of the axes
        ys[-1] = top
        for i in range(len(ys) - 2, -1, -1):
            ys[i] = min(ys[i], ys[i + 1] - gap)
    for (x, y, text, color), ly in zip(items, ys):
        ax.annotate(text, xy=(x, y), xytext=(x * 1.12, 10 ** ly), color=color, fontsize=8,
                    va="center", ha="left")


# --- the decode window ----------------------------------------------------------------------------

TYPE_COLORS = {"f32": "#1f77b4", "f16": "#d62728", "bf16": "#2ca02c"}  # K/V storage types
_KERNEL_LINES = ("-", "--", ":")


def decode_style(kernel_rank: int, dtype: str) -> dict:
    """A decode series: its storage type's colour; the window's kernel solid with circles, others dashed."""
    return {"color": TYPE_COLORS.get(dtype, "black"), "linestyle": _KERNEL_LINES[kernel_rank % len(_KERNEL_LINES)],
            "marker": "os^"[kernel_rank % 3]}


def decode_grid(window, ylabel: str, suptitle: str, panel, extra_legend: list = (), log_y: bool = True):
    """One panel per thread count (rows) and (layout, query rows) (columns) of the window's decode
    points against the K/V bytes one call reads (log; y log too unless `log_y` is False), with the L2
    and L3 sizes (what the threads' cores hold) as vertical lines. `panel(ax, series, threads, layout,
    rows)` draws the rest on the axes, their x limits set, where `series` is [(kernel rank, dtype,
    points by bytes)]. The figure, its legend drawn; the caller saves it."""
    from .analysis import decode as ad

    points = ad.decode(window)
    threads = points.values("threads")
    shapes = sorted({(p.layout, p.rows) for p in points}, key=lambda s: (s[0] != "head", s[1]))
    kernels, types = points.values("kernel"), [t for t in ad.TYPES if t in points.values("dtype")]
    all_threads, run = ad.threads_all(window), window.run
    fig, axes = plt.subplots(len(threads), len(shapes), figsize=(4.0 * len(shapes), 3.5 * len(threads)),
                             squeeze=False, sharex=True)
    have = ad.caches(run)
    limits = [min(p.value("kv_bytes") for p in points) / 1.6,
              1.6 * max([p.value("kv_bytes") for p in points] + [c.capacity(max(threads)) for c in have.values()
                                                                   if c.level >= 2])]
    for row, t in enumerate(threads):
        for col, (layout, rows) in enumerate(shapes):
            ax = axes[row][col]
            series = []
            for rank, kernel in enumerate(kernels):
                for dtype in types:
                    mine = sorted(points.where(kernel=kernel, layout=layout, rows=rows, dtype=dtype, threads=t),
                                  key=lambda p: p.value("kv_bytes"))
                    if mine:
                        series.append((rank, dtype, mine))
            ax.set_xscale("log")
            ax.set_yscale("log" if log_y else "linear")
            ax.set_xlim(*limits)
            panel(ax, series, t, layout, rows)
            for level in (2, 3):
                if level in have:
                    size = have[level].capacity(t)
                    ax.axvline(size, color="0.35", linewidth=0.9, linestyle="-.")
                    ax.text(size, 0.98, f" L{level} {formatting.bytes_(size)}", transform=ax.get_xaxis_transform(),
                            rotation=90, va="top", ha="right", fontsize=7, color="0.3")
            bytes_axis(ax.xaxis)
            ax.set_title(f"{layout}, rows:{rows}, {threads_label(t, all_threads)}")
            ax.set_xlabel("K/V bytes one call reads")
            ax.set_ylabel(ylabel)
    fig.suptitle(suptitle)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], **decode_style(rank, dtype), markersize=5)
               for rank in range(len(kernels)) for dtype in types]
    labels = [f"{kernel}, {dtype}" if len(kernels) > 1 else dtype for kernel in kernels for dtype in types]
    for handle, label in extra_legend:
        handles.append(handle)
        labels.append(label)
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(6, len(labels)),
               frameon=False)
    return fig
