"""Figure 9: the backward pass's GFLOP/s against n per kernel (FLOPs = 2.5 × the forward's 4·n²·d),
one panel per head dim and thread count, under the machine's measured FMA peak."""
from __future__ import annotations

import analysis
import analysis_backward
import formatting as fmt
import plotting
from loader import Table

STEM = "fig9_backward_gflops"
TITLE = "Backward throughput vs sequence length"


def draw(table: Table, out_dir) -> plotting.FigureFile:
    plt = plotting.plt
    run = table.runs[0]
    data = analysis_backward.backward(table)
    dims, threads = data.values("d"), analysis.thread_counts(data)
    all_threads = analysis.threads_all(table)
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
                    ax.plot(n, gflops, **plotting.kernel_style(kernel), markersize=4, linewidth=1.3)
                    ns_here.extend(n)
            if not ns_here:
                plotting.no_data(ax)
                continue
            label = f"measured FMA peak {fmt.sig(peak)} GFLOP/s ({run.fma_peak_isa(t)})" if peak else ""
            plotting.gflops_panel(ax, ns_here, peak, label, 7.5)
            ax.set_title(f"backward, d = {d}, {plotting.threads_label(t, all_threads)}")
            ax.set_xlabel("sequence length n (queries = keys)")
            ax.set_ylabel("GFLOP/s (2.5·4·n²·d FLOPs per call / time)")
    fig.suptitle("Backward pass throughput vs n: one head, fp32, not causal; the black line is the measured "
                 "fp32 FMA peak")
    plotting.kernel_legend(fig, kernels)
    plotting.finish(fig)
    return plotting.save(fig, out_dir, STEM, TITLE)
