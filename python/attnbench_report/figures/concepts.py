"""The "Concepts" figures: one small figure per demo of `attnbench demo all --json demos.json`
(apps/demo/), each claim of the attention module drawn from the numbers this project's kernels gave:

  concepts_softmax     naive exp/sum gives NaN on (1000, 999, 998), the stable softmax the weights of
                       (2, 1, 0); the worked example's bars and its 1.6x -> 2.2x sharpening
  concepts_bottleneck  relative retrieval error against n: one mean-pooled summary against attention
  concepts_alignment   the 3 x 3 weights of "the black cat" over "le chat noir", rows summing to 1
  concepts_quadratic   score-matrix bytes and naive time against n, measured and extrapolated to
                       n = 128,000, beside the tiled kernel's scratch, log-log
  concepts_order       pooled outputs of "dog bites man" and "man bites dog", without and with
                       sinusoidal position encodings
  concepts_uniform     equal scores: every weight 1/n and the output the mean of the values
  concepts_copy        the copy challenge: test accuracy against n of the attention model and the
                       fixed-width bottleneck, and the bottleneck's test MSE against its width's floor
"""
from __future__ import annotations

import math

import numpy as np

from ..analysis import demos as analysis_demos
from ..analysis import memory as analysis_memory
from ..load import demos as demo_data
from .. import formatting as fmt
from .. import plotting

STEMS = {name: f"concepts_{name}" for name in demo_data.NAMES}
TITLES = {
    "softmax": "Softmax: overflow, stability and sharpening",
    "bottleneck": "The bottleneck: one summary against attention",
    "alignment": "Alignment weights across the crossing",
    "quadratic": "The quadratic score matrix against the tiled scratch",
    "order": "Order blindness without positions",
    "uniform": "Equal scores: uniform weights and the mean",
    "copy": "The copy challenge: attention against a bottleneck",
}
A, B = plotting.RUN_COLORS[0], plotting.RUN_COLORS[1]  # first / second series of each figure
NAIVE, TILED = "#ff7f0e", "#1f77b4"  # as in figure 2
LOG_FLOOR = 1e-9  # an error of exactly 0 drawn here on a log axis


def draw(demos: dict, out_dir) -> dict:
    """Every demo present in `demos` (demos.load) as a figure; returns {demo name: FigureFile}."""
    drawers = {"softmax": _softmax, "bottleneck": _bottleneck, "alignment": _alignment,
               "quadratic": _quadratic, "order": _order, "uniform": _uniform, "copy": _copy}
    return {name: drawers[name](demos[name], out_dir) for name in demo_data.NAMES if name in demos}


def _number(x: float) -> str:
    return f"{x:g}"


def _tuple(xs) -> str:
    return "(" + ", ".join(_number(x) for x in xs) + ")"


def _value_labels(ax, xs, ys, color="black", digits=2) -> None:
    for x, y in zip(xs, ys):
        if math.isfinite(y):
            ax.annotate(fmt.sig(y, digits), xy=(x, y), xytext=(0, 2), textcoords="offset points", ha="center",
                        va="bottom", fontsize=7, color=color)


def _save(fig, name: str, out_dir) -> plotting.FigureFile:
    return plotting.save(fig, out_dir, STEMS[name], TITLES[name])


# --- softmax ------------------------------------------------------------------------------------

def _softmax(r: dict, out_dir) -> plotting.FigureFile:
    plt = plotting.plt
    fig, axes = plt.subplots(1, 3, figsize=(11.5, 3.9), gridspec_kw={"width_ratios": [2.2, 1.3, 1.0]})
    ax = axes[0]
    series = [(f"naive exp(s) / Σ exp on {_tuple(r['large_logits'])}", r["naive_weights"], "#d62728", "//"),
              (f"kernel (max subtracted) on {_tuple(r['large_logits'])}", r["stable_weights"], TILED, None),
              (f"naive exp(s) / Σ exp on {_tuple(r['small_logits'])}", r["naive_small_weights"], "#ffbb78", "//"),
              (f"kernel on {_tuple(r['small_logits'])}", r["stable_small_weights"], "#aec7e8", None)]
    keys = np.arange(len(r["large_logits"]))
    width = 0.8 / len(series)
    for i, (label, weights, color, hatch) in enumerate(series):
        xs = keys - 0.4 + width * (i + 0.5)
        heights = [w if math.isfinite(w) else 0.0 for w in weights]
        ax.bar(xs, heights, width, color=color, hatch=hatch, edgecolor="white", label=label)
        for x, w in zip(xs, weights):
            if not math.isfinite(w):
                ax.text(x, 0.01, "NaN" if math.isnan(w) else f"{w:g}", rotation=90, ha="center", va="bottom",
                        fontsize=7.5, color=color, fontweight="bold")
        _value_labels(ax, xs, weights)
    ax.set_xticks(keys, [f"key {k + 1}\ns = {_number(a)} | {_number(b)}"
                         for k, a, b in zip(keys, r["large_logits"], r["small_logits"])])
    ax.set_ylim(0, 1.0)
    ax.set_ylabel("softmax weight (dimensionless)")
    ax.set_title("(a) large logits overflow exp(s): inf / inf = NaN", fontsize=9)
    ax.legend(loc="upper right", frameon=False, fontsize=6.8)

    ax = axes[1]
    worked = r["worked_weights"]
    xs = np.arange(len(worked))
    ax.bar(xs, worked, 0.6, color=TILED)
    _value_labels(ax, xs, worked)
    ax.set_xticks(xs, [f"key {i + 1}\ns = {_number(s)}" for i, s in enumerate(r["worked_logits"])])
    ax.set_ylim(0, 1.0)
    ax.set_ylabel("softmax weight (dimensionless)")
    ax.set_title(f"(b) worked example {_tuple(r['worked_logits'])}", fontsize=9)

    ax = axes[2]
    hi, lo, predicted = analysis_demos.sharpening(r)
    ratios = [r["score_ratio"], r["weight_ratio"]]
    ax.bar([0, 1], ratios, 0.6, color=["0.6", TILED])
    for x, y in zip([0, 1], ratios):
        ax.annotate(fmt.ratio(y), xy=(x, y), xytext=(0, 2), textcoords="offset points", ha="center", fontsize=8)
    ax.axhline(predicted, color="black", linestyle=":", linewidth=1,
               label=f"exp({_number(hi)} − {_number(lo)}) = {fmt.sig(predicted)}")
    ax.legend(loc="upper left", frameon=False, fontsize=7)
    ax.set_xticks([0, 1], [f"scores\n{_number(hi)} / {_number(lo)}", "weights\nw₁ / w₃"])
    ax.set_ylim(0, max(ratios + [predicted]) * 1.3)
    ax.set_ylabel("ratio of key 1 to key 3 (×)")
    ax.set_title("(c) softmax sharpens ratios", fontsize=9)
    for ax in axes:
        ax.grid(axis="x", visible=False)
    fig.suptitle(f"Softmax on {r['kernel']} (q = e₁, kⱼ = sⱼ·e₁, scale 1, V = identity: the output row is the weights)")
    plotting.finish(fig)
    return _save(fig, "softmax", out_dir)


# --- bottleneck ---------------------------------------------------------------------------------

def _bottleneck(r: dict, out_dir) -> plotting.FigureFile:
    plt = plotting.plt
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    rows = r["rows"]
    ns = [row["n"] for row in rows]
    curves = [("mean-pooled summary (scale 0: every weight 1/n)", "mean_pooled_error", NAIVE, "-", "s"),
              (f"attention, query = {_number(r['sharpness'])}·k_p (mean)", "attention_error", TILED, "-", "o"),
              ("attention (worst single retrieval)", "attention_worst_error", TILED, ":", "^")]
    floored = False
    for label, key, color, style, marker in curves:
        values = np.array([row[key] for row in rows], dtype=float)
        floored |= bool((values <= 0).any())
        shown = np.maximum(values, LOG_FLOOR)
        ax.plot(ns, shown, color=color, linestyle=style, marker=marker, markersize=5, label=label)
        for n, v, s in zip(ns, values, shown):
            ax.annotate(fmt.sig(v, 2) if v >= 1e-3 else f"{v:.1g}", xy=(n, s), xytext=(5, -2),
                        textcoords="offset points", fontsize=7, color=color)
    ax.set_yscale("log")
    plotting.log_n_axis(ax, ns)
    ax.set_xlim(min(ns) / 1.5, max(ns) * 2.2)
    ax.set_xlabel(f"n: keys and values to retrieve from ({r['dim']}-dim unit keys, normal values)")
    ax.set_ylabel("relative error |answer − v_p| / |v_p|" + (f" (0 drawn at {LOG_FLOOR:g})" if floored else ""))
    ax.set_title(f"Retrieving v_p: mean over every position of {r['seeds']} problems ({r['kernel']})", fontsize=9)
    ax.legend(loc="lower right", frameon=False)
    return _save(fig, "bottleneck", out_dir)


# --- alignment ----------------------------------------------------------------------------------

def _alignment(r: dict, out_dir) -> plotting.FigureFile:
    plt = plotting.plt
    weights = np.array(r["weights"], dtype=float)
    fig, ax = plt.subplots(figsize=(5.6, 4.0))
    image = ax.imshow(weights, cmap="Blues", vmin=0.0, vmax=1.0)
    for i in range(weights.shape[0]):
        for j in range(weights.shape[1]):
            aligned = r["aligned"][i] == j
            ax.text(j, i, f"{weights[i, j]:.2f}", ha="center", va="center", fontsize=9,
                    color="white" if weights[i, j] > 0.55 else "black", fontweight="bold" if aligned else "normal")
    for i, total in enumerate(analysis_demos.row_sums(r)):
        ax.text(weights.shape[1] - 0.4, i, f"Σ = {total:.3f}", va="center", ha="left", fontsize=8)
    ax.set_xticks(range(len(r["source"])), r["source"])
    ax.set_yticks(range(len(r["target"])), r["target"])
    ax.tick_params(axis="x", top=True, labeltop=True, bottom=False, labelbottom=False)
    ax.xaxis.set_label_position("top")
    ax.grid(False)
    ax.set_xlabel("key: source word (French)")
    ax.set_ylabel("query: target word (English)")
    bar = fig.colorbar(image, ax=ax, pad=0.2, shrink=0.9)
    bar.set_label("attention weight (dimensionless)")
    ax.set_title(f"Weights[target][source], {r['kernel']}; bold: each query's largest", fontsize=9, pad=28)
    return _save(fig, "alignment", out_dir)


# --- quadratic ----------------------------------------------------------------------------------

def _quadratic(r: dict, out_dir) -> plotting.FigureFile:
    plt = plotting.plt
    measured, extrapolated = analysis_demos.quadratic_rows(r)
    fig, axes = plt.subplots(1, 2, figsize=(11.5, 4.6))
    ns = [row["n"] for row in r["rows"]]
    n_meas = [row["n"] for row in measured]
    n_end = max(ns)
    grid = np.geomspace(min(ns), n_end, 50)
    naive_marker = plotting.kernel_style(r["naive_kernel"])["marker"]
    tiled_marker = plotting.kernel_style(r["tiled_kernel"])["marker"]

    ax = axes[0]
    ax.plot(grid, analysis_memory.score_matrix_bytes(grid), color="0.35", linewidth=1,
            label="score matrix of one head, 4·n² bytes")
    ax.plot(ns, [row["score_matrix_bytes"] for row in r["rows"]], "o", color="0.35", markersize=3)
    ax.plot(n_meas, [row["naive_scratch_bytes"] for row in measured], color=NAIVE, marker=naive_marker,
            markersize=5, label=f"{r['naive_kernel']} scratch, measured")
    ax.plot(n_meas, [row["tiled_scratch_bytes"] for row in measured], color=TILED, marker=tiled_marker,
            markersize=5, label=f"{r['tiled_kernel']} scratch, measured")
    tiled_line = [analysis_demos.quadratic_tiled_bytes(r, n) for n in grid]
    ax.plot(grid, tiled_line, color=TILED, linestyle=(0, (4, 3)), linewidth=1,
            label=f"tiled fit {fmt.bytes_(r['tiled_bytes_fixed'])} + {fmt.bytes_(r['tiled_bytes_per_key'])} per key")
    for row in extrapolated:
        ax.annotate(f"{fmt.bytes_(row['score_matrix_bytes'])}", xy=(row["n"], row["score_matrix_bytes"]),
                    xytext=(-6, 4), textcoords="offset points", ha="right", fontsize=8, color="0.2")
        ax.annotate(f"~{fmt.bytes_(row['tiled_scratch_bytes'])}", xy=(row["n"], row["tiled_scratch_bytes"]),
                    xytext=(-6, 6), textcoords="offset points", ha="right", fontsize=8, color=TILED)
        ax.plot([row["n"]], [row["tiled_scratch_bytes"]], "o", color=TILED, markerfacecolor="white", markersize=5)
    if r["memory_budget_bytes"]:
        ax.axhline(r["memory_budget_bytes"], color="black", linewidth=0.8, linestyle="-.")
        ax.text(min(ns), r["memory_budget_bytes"], f" naive memory budget (half of RAM): "
                f"{fmt.bytes_(r['memory_budget_bytes'])}", va="bottom", fontsize=7.5)
    ax.set_yscale("log")
    plotting.bytes_axis(ax.yaxis)
    ax.set_ylabel("bytes (decimal: 1 GB = 10⁹ B)")
    ax.set_title("(a) memory: n² scores against O(n·d) packed K and V", fontsize=9)

    ax = axes[1]
    ax.plot(n_meas, [row["naive_ms"] for row in measured], color=NAIVE, marker=naive_marker, markersize=5,
            label=f"{r['naive_kernel']}, median of {r['reps']} calls")
    ax.plot(n_meas, [row["tiled_ms"] for row in measured], color=TILED, marker=tiled_marker, markersize=5,
            label=f"{r['tiled_kernel']}, one call")
    ax.plot(grid, [analysis_demos.quadratic_time_ms(r, n) for n in grid], color=NAIVE, linestyle=(0, (4, 3)),
            linewidth=1, label=f"naive fit t ∝ n^{r['time_exponent']:.2f}, extrapolated")
    for row in extrapolated:
        ax.plot([row["n"]], [row["naive_ms"]], "o", color=NAIVE, markerfacecolor="white", markersize=5)
        ax.annotate(f"~{fmt.sig(row['naive_ms'] / 1000)} s", xy=(row["n"], row["naive_ms"]), xytext=(-8, 0),
                    textcoords="offset points", ha="right", va="center", fontsize=8, color=NAIVE)
    ax.set_yscale("log")
    ax.set_ylabel("time per call (ms)")
    ax.set_title("(b) time: the n² scores cost both kernels", fontsize=9)
    for ax in axes:
        plotting.log_n_axis(ax, ns)
        ax.set_xlim(min(ns) / 1.4, n_end * 1.6)
        for x in {row["n"] for row in extrapolated}:
            ax.axvline(x, color="0.6", linewidth=0.8, linestyle="--")
        ax.set_xlabel("sequence length n (queries = keys); open markers: extrapolated")
        ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.16), frameon=False, fontsize=7.5)
    fig.suptitle(f"One head, d = {r['head_dim']}, one thread: measured at n = "
                 f"{', '.join(fmt.count(n) for n in n_meas)}, extrapolated to "
                 f"{', '.join(fmt.count(row['n']) for row in extrapolated) or '-'}")
    plotting.finish(fig)
    return _save(fig, "quadratic", out_dir)


# --- order --------------------------------------------------------------------------------------

def _order(r: dict, out_dir) -> plotting.FigureFile:
    plt = plotting.plt
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 3.8), sharey=True)
    a, b = " ".join(r["sentence_a"]), " ".join(r["sentence_b"])
    for ax, key, title in ((axes[0], "without_positions", "(a) word vectors only"),
                           (axes[1], "with_positions", "(b) word vectors + sinusoidal position encodings")):
        case = r[key]
        xs = np.arange(len(case["pooled_a"]))
        ax.bar(xs - 0.19, case["pooled_a"], 0.38, color=A, label=f"“{a}”")
        ax.bar(xs + 0.19, case["pooled_b"], 0.38, color=B, label=f"“{b}”")
        ax.axhline(0, color="black", linewidth=0.6)
        ax.set_xticks(xs, [f"component {i + 1}" for i in xs])
        ax.grid(axis="x", visible=False)
        ax.set_title(f"{title}: max |difference| = {case['max_difference']:.2g}", fontsize=9)
        ax.legend(loc="upper left", frameon=False)
    axes[0].set_ylabel("pooled output: mean of the\noutput rows (embedding units)")
    fig.suptitle(f"Self-attention (Q = K = V = X, {r['dim']}-dim), output rows averaged, {r['kernel']}")
    plotting.finish(fig)
    return _save(fig, "order", out_dir)


# --- uniform ------------------------------------------------------------------------------------

def _uniform(r: dict, out_dir) -> plotting.FigureFile:
    plt = plotting.plt
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 3.8))
    cases = r["cases"]
    colors = plotting.RUN_COLORS
    width = 0.8 / (len(cases) + 1)
    ax = axes[0]
    keys = np.arange(r["n"])
    key_width = 0.8 / len(cases)
    for i, case in enumerate(cases):
        ax.bar(keys - 0.4 + key_width * (i + 0.5), case["weights"], key_width, color=colors[i],
               label=f"equal scores by {case['how']}")
    weight = analysis_demos.uniform_weight(r)
    ax.axhline(weight, color="black", linestyle=":", linewidth=1)
    ax.text(keys[-1] + 0.45, weight, f"1/n = {fmt.sig(weight)}", va="bottom", fontsize=8)
    ax.set_xticks(keys, [f"key {k + 1}" for k in keys])
    ax.set_xlim(-0.6, keys[-1] + 1.3)
    ax.set_ylim(0, 2.2 / r["n"])
    ax.set_ylabel("weight (dimensionless)")
    ax.set_title(f"(a) the weights over n = {r['n']} keys", fontsize=9)
    ax.legend(loc="upper left", frameon=False)

    ax = axes[1]
    dims = np.arange(r["dim"])
    for i, case in enumerate(cases):
        ax.bar(dims - 0.4 + width * (i + 0.5), case["output"], width, color=colors[i], label=f"output, {case['how']}")
    ax.bar(dims - 0.4 + width * (len(cases) + 0.5), cases[0]["mean"], width, color="0.55",
           label="plain mean of the values")
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xticks(dims, [f"component {d + 1}" for d in dims])
    ax.set_ylabel("output component (units of V)")
    ax.set_title(f"(b) output against the mean: max |difference| = {analysis_demos.uniform_output_error(r):.2g}",
                 fontsize=9)
    ax.legend(loc="best", frameon=False)
    for ax in axes:
        ax.grid(axis="x", visible=False)
    fig.suptitle(f"Equal scores, one query, {r['n']} random keys and values of dim {r['dim']}, {r['kernel']}")
    plotting.finish(fig)
    return _save(fig, "uniform", out_dir)


# --- copy ---------------------------------------------------------------------------------------

def _copy(r: dict, out_dir) -> plotting.FigureFile:
    plt = plotting.plt
    rows = r["rows"]
    ns = [row["n"] for row in rows]
    width, dim = r["bottleneck_width"], r["dim"]
    fig, axes = plt.subplots(1, 2, figsize=(11.5, 4.3))

    ax = axes[0]
    # attention's labels above its points, the bottleneck's to their right (both start at the top)
    for label, key, color, marker, offset, align in (
            ("attention (query from the index)", "attention_accuracy", TILED, "o", (0, 5), "center"),
            (f"bottleneck (one {width}-wide vector)", "bottleneck_accuracy", NAIVE, "s", (6, 2), "left")):
        values = [row[key] for row in rows]
        ax.plot(ns, values, color=color, marker=marker, markersize=5, label=label)
        for n, v in zip(ns, values):
            ax.annotate(f"{v:.2f}", xy=(n, v), xytext=offset, textcoords="offset points", ha=align, fontsize=7,
                        color=color)
    grid = np.geomspace(min(ns), max(ns), 50)
    ax.plot(grid, 1 / grid, color="0.45", linestyle=":", linewidth=1, label="chance, 1/n")
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("test accuracy: output nearest x_p (share)")
    ax.set_title(f"(a) accuracy on {fmt.count(r['test_examples'])} held-out examples per n", fontsize=9)
    ax.legend(loc="center left", frameon=False, fontsize=8)

    ax = axes[1]
    ax.plot(ns, [row["bottleneck_mse"] for row in rows], color=NAIVE, marker="s", markersize=5,
            label="bottleneck, measured")
    floor = [analysis_demos.copy_mse_floor(r, {"n": n}) for n in grid]
    ax.plot(grid, floor, color=NAIVE, linestyle=(0, (4, 3)), linewidth=1,
            label=f"floor of a linear {width}-wide code, 1 − {width} / ({dim}·n)")
    ax.plot(ns, [row["attention_mse"] for row in rows], color=TILED, marker="o", markersize=5,
            label="attention, measured")
    ax.axhline(1.0, color="0.45", linestyle=":", linewidth=1, label="answering 0 (the vectors' variance)")
    fits = width / dim
    if min(ns) <= fits <= max(ns):
        ax.axvline(fits, color="0.6", linewidth=0.8, linestyle="--")
        ax.text(fits, 0.02, f" {dim}·n = {width}", fontsize=7.5, color="0.35", va="bottom")
    ax.set_ylim(0, 1.15)
    ax.set_ylabel("test MSE per component")
    ax.set_title(f"(b) what the {width}-wide vector cannot hold", fontsize=9)
    ax.legend(loc="lower right", bbox_to_anchor=(1.0, 0.06), frameon=False, fontsize=7.5)
    for ax in axes:
        plotting.log_n_axis(ax, ns)
        ax.set_xlim(min(ns) / 1.3, max(ns) * 1.3)
        ax.set_xlabel(f"n: vectors in the sequence ({dim}-dim, normal)")
    fig.suptitle(f"Copying the p-th of n vectors: {r['steps']} Adam steps per model and n; attention on {r['kernel']}")
    plotting.finish(fig)
    return _save(fig, "copy", out_dir)
