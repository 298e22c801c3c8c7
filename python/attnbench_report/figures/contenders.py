"""Figure 8: against the alternatives. GFLOP/s against n of every contender in each comparison
window (one row per window, one column per head dim and thread count), under the measured FMA peak."""
from __future__ import annotations

from ..analysis import contenders as ac
from .. import formatting as fmt
from .. import plotting

STEM = "fig8_contenders"
TITLE = "Against the alternatives"

_ROLE_STYLE = {ac.OURS: "-", ac.BASELINE: "--", ac.PEER: ":"}


def draw(windows: list, run, out_dir) -> plotting.FigureFile:
    plt = plotting.plt
    columns = sorted({(r.d, r.threads) for w in windows for r in w.table if not r.causal})
    fig, axes = plt.subplots(len(windows), max(1, len(columns)), figsize=(4.6 * max(1, len(columns)), 3.9 * len(windows)),
                             squeeze=False, sharey=True)
    names = []
    for row, w in enumerate(windows):
        for col, (d, t) in enumerate(columns):
            ax = axes[row][col]
            ns_here = []
            for name in ac.contender_names(w):
                rows = w.table.where(kernel=name, d=d, threads=t, causal=False).measured().sorted("n")
                if not len(rows):
                    continue
                n, g = rows.column("n").astype(float), rows.column("gflops_median").astype(float)
                ax.plot(n, g, linestyle=_ROLE_STYLE.get(w.role(name), "-."), marker="o", markersize=3.5,
                        linewidth=1.3, color=plotting.implementation_color(name),
                        label=f"{name} ({w.role(name)})")
                ns_here.extend(n)
            if not ns_here:
                plotting.no_data(ax)
                continue
            peak = run.fma_peak_gflops(t) if run else None
            plotting.gflops_panel(ax, ns_here, peak, f"FMA peak {fmt.sig(peak)}" if peak else "", 7)
            ax.set_title(f"{w.name} window: d = {d}, {t} thread{'s' if t > 1 else ''}")
            ax.set_xlabel("sequence length n (queries = keys)")
            ax.set_ylabel("GFLOP/s (4·n²·d / time)")
            ax.legend(fontsize=6.5, loc="lower right")
        names.extend(ac.contender_names(w))
    cpu = run.context.get("cpu_model", "") if run else ""
    fig.suptitle(f"Against the alternatives ({cpu}): one head, fp32, not causal; each row one interleaved window; "
                 "solid ours, dashed our baseline, dotted peers")
    plotting.finish(fig)
    return plotting.save(fig, out_dir, STEM, TITLE)
