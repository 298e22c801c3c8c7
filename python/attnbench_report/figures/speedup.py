"""Figure 5: speedups against n at each head dim: SIMD over scalar, explicit SIMD over
auto-vectorised, all threads over one, tiled over naive, and every kernel over the OpenBLAS
baseline. A speedup is the baseline's median time over the kernel's at the same point."""
from __future__ import annotations

from .. import analysis
from .. import plotting
from ..load.results import Table

STEM = "fig5_speedups"
TITLE = "Speedups"

_LINESTYLES = ["-", "--", "-.", ":"]


def draw(table: Table, out_dir) -> plotting.FigureFile:
    plt = plotting.plt
    data = table.where(causal=False)
    dims = data.values("d")
    all_threads = analysis.threads_all(data)
    comparisons = analysis.comparisons(data)
    groups = list(dict.fromkeys(c.group for c in comparisons))
    fig, axes = plt.subplots(max(1, len(groups)), len(dims), figsize=(4.3 * len(dims) + 3.2, 3.1 * max(1, len(groups))),
                             squeeze=False)
    if not groups:
        plotting.no_data(axes[0][0], "no kernel pairs to compare")
    for row, group in enumerate(groups):
        members = [c for c in comparisons if c.group == group]
        threads = all_threads if members[0].threads_vs_one else 1
        for col, d in enumerate(dims):
            ax = axes[row][col]
            ns_here = []
            for index, c in enumerate(members):
                n, speedup = analysis.speedup_series(data, c, d, threads)
                if not len(n):
                    continue
                style = plotting.kernel_style(c.kernel)
                if group == "over the baseline" or group == "threads (all over 1)":
                    linestyle = style["linestyle"]
                else:
                    linestyle = _LINESTYLES[index % len(_LINESTYLES)]
                ax.plot(n, speedup, color=style["color"], linestyle=linestyle, marker=style["marker"], markersize=4,
                        label=c.label)
                ns_here.extend(n)
            if not ns_here:
                plotting.no_data(ax)
                continue
            ax.axhline(1.0, color="black", linewidth=0.8)
            if members[0].threads_vs_one:
                ax.axhline(all_threads, color="black", linewidth=0.8, linestyle=":")
                ax.text(min(ns_here), all_threads, f" ideal {all_threads}x", va="bottom", fontsize=7)
            ax.set_yscale("log")
            plotting.log_speedup_axis(ax.yaxis)
            plotting.log_n_axis(ax, ns_here)
            ax.set_title(f"{group}, d = {d}" + ("" if members[0].threads_vs_one else ", 1 thread"), fontsize=9)
            ax.set_xlabel("sequence length n")
            ax.set_ylabel("speedup (baseline time / time)")
        handles, labels = [], []
        for ax in axes[row]:
            for h, label in zip(*ax.get_legend_handles_labels()):
                if label not in labels:
                    handles.append(h)
                    labels.append(label)
        if handles:
            axes[row][-1].legend(handles, labels, loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=7, frameon=False)
    fig.suptitle("Speedups (above 1x: the first-named kernel is faster), not causal")
    plotting.finish(fig)
    return plotting.save(fig, out_dir, STEM, TITLE)
