"""The Concepts section: the demos of `attnbench demo all --json demos.json` (apps/demo/) written up,
one paragraph and one figure per demo, every number read from demos.json (demos.load)."""
from __future__ import annotations

import math

from ..analysis import demos as analysis_demos
from ..load import demos as demo_data
from .. import formatting as fmt
from ..document import Document, Paragraph


# --- how the demos' numbers read ----------------------------------------------------------------

def _logits(xs) -> str:
    return "(" + ", ".join(f"{x:g}" for x in xs) + ")"


def _weights(xs, decimals: int = 3) -> str:
    return "(" + ", ".join(f"{x:.{decimals}f}" if math.isfinite(x) else ("NaN" if math.isnan(x) else f"{x:g}")
                           for x in xs) + ")"


def _tiny(x: float) -> str:
    """A rounding-sized difference: 3e-08, 0.087, 0."""
    return f"{x:.2g}" if x else "0"


def _words(words) -> str:
    return "“" + " ".join(words) + "”"


def concepts(doc: Document, demos: dict, figures: dict) -> None:
    s = doc.section("Concepts")
    kernels = sorted({d.get("kernel") for d in demos.values() if d.get("kernel")})
    s.add(Paragraph(
        "The attention module's experiments, each run on this machine by `attnbench demo all` (`apps/demo/`) with "
        "this project's kernels through `attention()`"
        + (f" ({', '.join(fmt.code(k) for k in kernels)} unless the figure says otherwise)" if kernels else "")
        + f", and drawn here from the numbers it wrote to `{demo_data.FILE_NAME}`. `demo_test` asserts each outcome "
          "on every registry kernel, so the claims below cannot drift from what the kernels do."))
    writers = {"softmax": _concept_softmax, "bottleneck": _concept_bottleneck, "alignment": _concept_alignment,
               "quadratic": _concept_quadratic, "order": _concept_order, "uniform": _concept_uniform,
               "copy": _concept_copy}
    for name in demo_data.NAMES:
        if name not in demos:
            continue
        text, caption = writers[name](demos[name])
        s.add(Paragraph(text))
        figure = figures.get(f"concepts_{name}")
        if figure is not None:
            s.add(doc.figure(figure, caption, series="C"))


def _concept_softmax(r: dict) -> tuple:
    large, small = r["large_logits"], r["small_logits"]
    hi, lo, predicted = analysis_demos.sharpening(r)
    worked = r["worked_weights"]
    if analysis_demos.naive_overflowed(r):
        naive = (f"exp(s) = {_weights(r['naive_exp'])}, their sum is {_weights([r['naive_sum']])[1:-1]}, and the "
                 f"weights exp(s) / sum are {_weights(r['naive_weights'])}")
    else:
        naive = f"the naive weights are {_weights(r['naive_weights'])}"
    difference = analysis_demos.shift_invariance_error(r)
    shift = analysis_demos.logit_shift(r)
    shifted = f" ({_logits(large)} is {_logits(small)} shifted by {shift:g})" if shift is not None else ""
    text = (
        f"**Softmax.** The weights of a row of scores s are exp(sⱼ) / Σₖ exp(sₖ). Computed as written in float32, the "
        f"logits {_logits(large)} overflow: {naive}. The kernels subtract the row's max m first, so every exp(sⱼ − m) "
        f"is at most 1 (the tiled kernel's running max does the same block by block): on {_logits(large)} they give "
        f"{_weights(r['stable_weights'])}, the weights of {_logits(small)} "
        + ("exactly" if difference == 0 else f"to within {_tiny(difference)}")
        + f", since softmax depends only on the differences of the scores{shifted}. The worked example "
        f"{_logits(r['worked_logits'])} gives {_weights(worked, 2)}. Softmax sharpens: the scores' ratio "
        f"{hi:g} / {lo:g} = {fmt.ratio(r['score_ratio'])} becomes the weights' ratio {worked[0]:.3f} / {worked[2]:.3f} = "
        f"{fmt.ratio(r['weight_ratio'])}, because a ratio of weights is exp of a difference of scores, "
        f"exp({hi:g} − {lo:g}) = {fmt.sig(predicted)}.")
    caption = (f"Softmax weights computed by {fmt.code(r['kernel'])} (the output row is the weights): (a) naive exp / sum "
               f"gives {_weights(r['naive_weights'])} on {_logits(large)}, the kernel the weights of {_logits(small)}; "
               f"(b) the worked "
               f"example; (c) a {fmt.ratio(r['score_ratio'])} score ratio becomes a {fmt.ratio(r['weight_ratio'])} "
               f"weight ratio.")
    return text, caption


def _concept_bottleneck(r: dict) -> tuple:
    rows = r["rows"]
    last = rows[-1]
    pooled = ", ".join(f"{fmt.sig(row['mean_pooled_error'])} at n = {row['n']}" for row in rows)
    attention = ", ".join(f"{fmt.sig(row['attention_error'], 2) if row['attention_error'] >= 1e-3 else _tiny(row['attention_error'])}"
                          f" at n = {row['n']}" for row in rows)
    text = (
        f"**The bottleneck.** One fixed-size summary of a sequence cannot answer every question about it. Each problem "
        f"has n random {r['dim']}-dim unit keys and normal values, and every position p is retrieved in turn "
        f"({r['seeds']} problems per n). The mean of the values (the kernel with scale 0, every weight 1/n) misses "
        f"v_p by a mean relative error of {pooled}: towards 1, since the mean of n independent values shrinks to 0 "
        f"while v_p does not. Attention with the query {r['sharpness']:g}·k_p scores the matching key highest (a unit "
        f"key's dot product with itself is 1, with any other key less) and the softmax of such large scores puts "
        f"almost all the weight there: mean relative error {attention}, below the summary's at {analysis_demos.attention_wins(r)} of "
        f"{len(rows)} lengths ({fmt.ratio(analysis_demos.pooled_over_attention(last))} smaller at n = "
        f"{last['n']}). Its worst retrieval at n = {last['n']} ({fmt.sig(last['attention_worst_error'], 2)}) is a "
        f"problem where another random key points almost the way k_p does: {last['n']} keys crowd "
        f"{r['dim']} dimensions.")
    caption = (f"Relative error of retrieving v_p against n, log scale: one mean-pooled summary against attention "
               f"with a matching query ({fmt.code(r['kernel'])}).")
    return text, caption


def _concept_alignment(r: dict) -> tuple:
    weights, aligned = r["weights"], r["aligned"]
    pairs = ", ".join(f"{t} → {r['source'][j]} ({weights[i][j]:.2f})" for i, (t, j) in enumerate(zip(r["target"], aligned)))
    crossed = analysis_demos.first_crossing(r)
    if crossed:
        i, k = crossed
        crossing = (f"The word order differs between the languages, so the alignment crosses: {r['target'][i]} "
                    f"(word {i + 1}) reads {r['source'][aligned[i]]} (word {aligned[i] + 1}) while {r['target'][k]} "
                    f"(word {k + 1}) reads {r['source'][aligned[k]]} (word {aligned[k] + 1}), which a fixed "
                    f"position-by-position mapping cannot do.")
    else:
        crossing = "Here the alignment does not cross."
    text = (
        f"**Alignment.** Attention as a soft alignment: the queries are the words of {_words(r['target'])}, the keys "
        f"those of {_words(r['source'])}, with hand-made {len(r['source_embedding'][0])}-dim embeddings. Each row of "
        f"weights is a softmax, so it sums to 1 (here to within {_tiny(analysis_demos.row_sum_error(r))}), and each "
        f"word attends most "
        f"to its translation: {pairs}. {crossing}")
    caption = (f"Attention weights of each word of {_words(r['target'])} (rows, queries) over "
               f"{_words(r['source'])} (columns, keys), {fmt.code(r['kernel'])}; every row sums to 1.")
    return text, caption


def _concept_quadratic(r: dict) -> tuple:
    measured, extrapolated = analysis_demos.quadratic_rows(r)
    top = measured[-1]
    d = r["head_dim"]
    per_key = r["tiled_bytes_per_key"]
    packed = f" (packed K and V: 2 · {d} floats · 4 bytes)" if analysis_demos.per_key_is_packed_kv(r) else ""
    text = (
        f"**The quadratic score matrix.** Measured at n = {', '.join(fmt.count(row['n']) for row in measured)} "
        f"(d = {d}, one head, one thread), {fmt.code(r['naive_kernel'])} holds the n × n scores, 4n² bytes: "
        f"{fmt.bytes_(top['score_matrix_bytes'])} at n = {fmt.count(top['n'])}, where its measured scratch is "
        f"{fmt.bytes_(top['naive_scratch_bytes'])}. Its time (median of {r['reps']} calls) grows as "
        f"n^{r['time_exponent']:.2f} (least squares of ln t on ln n). {fmt.code(r['tiled_kernel'])} holds one block of "
        f"scores whatever n is: its scratch fits {fmt.bytes_(r['tiled_bytes_fixed'])} + "
        f"{fmt.bytes_(per_key)} per key{packed}, {fmt.bytes_(top['tiled_scratch_bytes'])} at "
        f"n = {fmt.count(top['n'])}. Its time there is {fmt.ratio(analysis_demos.tiled_time_share(top))} the naive "
        f"kernel's ({fmt.ms(top['tiled_ms'])} in one call against {fmt.ms(top['naive_ms'])}): both compute the n² "
        f"scores, and tiling removes their n² bytes, not their FLOPs.")
    for row in extrapolated:
        share = analysis_demos.budget_share(r, row)
        refuse = ""
        if share is not None:
            refuse = (f", {fmt.ratio(share)} the naive kernels' memory budget of "
                      f"{fmt.bytes_(r['memory_budget_bytes'])} (half of RAM)"
                      + (", so they refuse it on this machine" if analysis_demos.over_budget(r, row) else ""))
        text += (f" Extrapolated to n = {fmt.count(row['n'])}: one head's score matrix is "
                 f"{fmt.bytes_(row['score_matrix_bytes'])}{refuse}; the time fit puts one naive call at "
                 f"~{fmt.sig(row['naive_ms'] / 1000)} s; the tiled scratch line gives "
                 f"~{fmt.bytes_(row['tiled_scratch_bytes'])}, "
                 f"{fmt.ratio(analysis_demos.tiled_saving(row))} less than the scores alone.")
    caption = ("Memory (a) and time (b) against n, log-log: the 4n² score matrix and the measured scratch of "
               f"{fmt.code(r['naive_kernel'])} and {fmt.code(r['tiled_kernel'])}, extrapolated (open markers) by the demo's "
               "fits: ln t on ln n for the naive time, a line in n for the tiled scratch.")
    return text, caption


def _concept_order(r: dict) -> tuple:
    a, b = _words(r["sentence_a"]), _words(r["sentence_b"])
    plain, positioned = r["without_positions"]["max_difference"], r["with_positions"]["max_difference"]
    text = (
        f"**Order.** Self-attention (Q = K = V = X) treats its input as a set: permuting the rows of X permutes "
        f"the output rows the same way, so their mean does not change. On the {r['dim']}-dim word vectors alone the "
        f"pooled outputs of {a} and {b} differ by at most {_tiny(plain)}, float rounding; with sinusoidal position "
        f"encodings added to the word vectors they differ by up to {_tiny(positioned)}. Only the positions tell "
        f"who bit whom.")
    caption = (f"Mean of the self-attention output rows for {a} and {b}, without (a) and with (b) sinusoidal "
               f"position encodings, {fmt.code(r['kernel'])}.")
    return text, caption


def _concept_uniform(r: dict) -> tuple:
    cases = r["cases"]
    hows = " or ".join(case["how"] for case in cases)
    text = (
        f"**Uniform weights.** When every score of a row is equal (here by {hows}), the softmax gives each of the "
        f"n = {r['n']} keys the weight 1/n = {fmt.sig(analysis_demos.uniform_weight(r))} (largest deviation "
        f"{_tiny(analysis_demos.uniform_weight_error(r))}) and the output is the plain mean of the values to within "
        f"{_tiny(analysis_demos.uniform_output_error(r))}: attention with equal scores is mean pooling, the bottleneck demo's summary.")
    caption = (f"Equal scores ({hows}): (a) the weights against 1/n, (b) the output against the mean of the values, "
               f"{fmt.code(r['kernel'])}.")
    return text, caption



def _at(rows, phrase) -> str:
    """phrase(row) "at n = N" for each row, joined: "1.000 at n = 5, 0.944 at n = 10"."""
    return ", ".join(f"{phrase(row)} at n = {fmt.count(row['n'])}" for row in rows)


def _accuracies(rows, model: str) -> str:
    """model's accuracy per row, "1.000 at n = 5, 0.944 at n = 10"; one value once when every row has it."""
    values = {f"{row[model + '_accuracy']:.3f}" for row in rows}
    if len(values) == 1:
        return f"{values.pop()} at n = {_lengths(rows)}"
    return _at(rows, lambda row: f"{row[model + '_accuracy']:.3f}")


def _lengths(rows) -> str:
    """n = 5, 10 and 20: the rows' lengths as a list."""
    ns = [fmt.count(row["n"]) for row in rows]
    return ns[0] if len(ns) == 1 else ", ".join(ns[:-1]) + " and " + ns[-1]


def _copy_attention(r: dict) -> str:
    rows = r["rows"]
    accurate = [row for row in rows if analysis_demos.copy_accurate(row, "attention")]
    if len(accurate) == len(rows):
        verdict = f"accurate (at least {analysis_demos.ACCURATE:g}) at every length"
    elif accurate:
        verdict = f"accurate (at least {analysis_demos.ACCURATE:g}) only at n = {_lengths(accurate)}"
    else:
        verdict = f"below {analysis_demos.ACCURATE:g} at every length"
    counts = sorted({row["attention_parameters"] for row in rows})
    params = (f"its {fmt.count(counts[0])} parameters are the same at every n" if len(counts) == 1
              else f"its parameters number {fmt.count(counts[0])} to {fmt.count(counts[-1])}")
    return (f"The attention model's query is a projection of the index's {r['encoding_dim']}-dim sinusoidal position "
            f"encoding pe(p), its keys and values projections of [x_j, pe(j)] (head dim {r['head_dim']}), through "
            f"`attention()` and `attention_backward()` ({fmt.code(r['kernel'])}). Its accuracy is "
            f"{_accuracies(rows, 'attention')}: {verdict}. The query addresses a position, not a summary: the learned "
            f"projections make q·k_j largest at j = p, and the softmax puts the weight there however many keys there "
            f"are; {params}.")


def _copy_floor(r: dict) -> str:
    """The bottleneck's test MSE against the floor its width sets, where the sequence does not fit."""
    width, dim = r["bottleneck_width"], r["dim"]
    lossy = [row for row in r["rows"] if analysis_demos.copy_mse_floor(r, row) > 0]
    if not lossy:
        return ""
    measured = _at(lossy, lambda row: f"{row['bottleneck_mse']:.3f} against {analysis_demos.copy_mse_floor(r, row):.3f}")
    text = (f" Its encoder is linear, and a linear map into {width} numbers keeps at most {width} of the sequence's "
            f"{dim}·n independent directions, so its test MSE per component cannot go below 1 − {width} / ({dim}·n): "
            f"measured {measured}.")
    at_floor = [row for row in lossy if analysis_demos.copy_at_floor(r, row)]
    above = [row for row in lossy if not analysis_demos.copy_at_floor(r, row)]
    if at_floor:
        text += (f" At n = {_lengths(at_floor)} it sits at that floor (within {analysis_demos.AT_FLOOR:g}): as good as "
                 f"its width allows.")
    if above:
        useless = [row for row in above if row["bottleneck_mse"] >= 1.0]
        text += f" At n = {_lengths(above)} it stays above it"
        if useless:
            where = "" if useless == above else f" at n = {_lengths(useless)}"
            text += (f",{where} no better than answering 0 (MSE 1, the vectors' variance): its "
                     f"decoder, which needs a different readout of the vector for each of the n indices, did not learn "
                     f"to recover even the share the vector holds.")
        else:
            text += "."
    return text


def _copy_bottleneck(r: dict) -> str:
    rows = r["rows"]
    width, dim = r["bottleneck_width"], r["dim"]
    rises = analysis_demos.copy_rises(r, "bottleneck")
    falls = ("falls at every longer n" if not rises else
             "does not fall everywhere (it rises from n = " + "; from n = ".join(f"{a} to {b}" for a, b in rises) + ")")
    shares = _at(rows, lambda row: f"{fmt.count(analysis_demos.copy_sequence_numbers(r, row))} numbers "
                                   f"({fmt.pct(100 * analysis_demos.copy_share_held(r, row), 0)} held)")
    text = (f" The bottleneck concatenates the sequence and maps it to one {width}-wide vector, the same width for "
            f"every n, before its decoder (two hidden layers of {r['decoder_hidden']}) sees the index: accuracy "
            f"{_accuracies(rows, 'bottleneck')}, which {falls}. The vector has room for {width} numbers; the sequence "
            f"has {dim}·n: {shares}.")
    fitting = analysis_demos.copy_fitting_rows(r)
    if fitting:
        text += (f" Where the whole sequence fits ({dim}·n ≤ {width}), it copies: accuracy "
                 f"{_accuracies(fitting, 'bottleneck')}.")
    text += _copy_floor(r)
    near = [row for row in rows if analysis_demos.copy_near_chance(row, "bottleneck")]
    if near:
        text += f" Its accuracy is within {analysis_demos.NEAR_CHANCE:g}x of chance at n = {_lengths(near)}."
    first, last = rows[0], rows[-1]
    text += (f" Its parameters grow with n ({fmt.count(first['bottleneck_parameters'])} to "
             f"{fmt.count(last['bottleneck_parameters'])}), its accuracy does not: at n = {fmt.count(last['n'])} "
             f"attention leads it by {analysis_demos.copy_gap(last):.3f}.")
    return text


def _concept_copy(r: dict) -> tuple:
    width, dim = r["bottleneck_width"], r["dim"]
    text = (
        f"**The challenge: copying.** Given n random {dim}-dim vectors and an index p, output the p-th. Two models "
        f"learn it, each by {fmt.count(r['steps'])} Adam steps (learning rate {r['learning_rate']:g}, cosine decay) of "
        f"{fmt.count(r['batch'])} fresh examples per length, on the mean squared error with hand-written gradients for "
        f"their dense layers, and are scored on {fmt.count(r['test_examples'])} held-out examples: the share whose "
        f"output lies nearer x_p than every other vector of its sequence (chance: 1/n). "
        + _copy_attention(r) + _copy_bottleneck(r))
    caption = (f"Copying the p-th of n vectors: (a) test accuracy against n of attention ({fmt.code(r['kernel'])}) and "
               f"of the {width}-wide bottleneck, chance 1/n dotted; (b) test MSE against n, the bottleneck's beside the "
               f"floor 1 − {width} / ({dim}·n) of a linear code of its width.")
    return text, caption
