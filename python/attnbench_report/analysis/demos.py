"""Numbers derived from the demos (demos.load's dicts, one per demo of `attnbench demo all`) that the
Concepts figures (figures/concepts.py) and text (narrative/concepts.py) share, so they agree. The
demos' own measurements are read as they are; what is computed from them is computed here."""
from __future__ import annotations

import math


def finite(values) -> bool:
    return all(isinstance(v, (int, float)) and math.isfinite(v) for v in values)


def max_abs_difference(a, b) -> float:
    return max(abs(x - y) for x, y in zip(a, b))


# --- softmax ------------------------------------------------------------------------------------

def naive_overflowed(softmax: dict) -> bool:
    """True when exp / sum as written gave a non-finite weight on the large logits (exp(1000) is inf
    in float32, and inf / inf is NaN)."""
    return not finite(softmax["naive_weights"])


def shift_invariance_error(softmax: dict) -> float:
    """max |stable weights of the large logits - stable weights of the small ones|: 0 when the
    kernel's subtract-the-max makes softmax depend only on the differences of the scores."""
    return max_abs_difference(softmax["stable_weights"], softmax["stable_small_weights"])


def logit_shift(softmax: dict) -> float | None:
    """The one constant c with large_logits = small_logits + c, or None when they differ otherwise."""
    shifts = {a - b for a, b in zip(softmax["large_logits"], softmax["small_logits"])}
    return next(iter(shifts)) if len(shifts) == 1 else None


def sharpening(softmax: dict) -> tuple:
    """The worked example's first and third logits (2.1, 1.3) and exp of their difference, which the
    weight ratio equals: (score_hi, score_lo, exp(score_hi - score_lo))."""
    hi, lo = softmax["worked_logits"][0], softmax["worked_logits"][2]
    return hi, lo, math.exp(hi - lo)


# --- bottleneck ---------------------------------------------------------------------------------

def attention_wins(bottleneck: dict) -> int:
    """At how many lengths attention retrieves v_p with a smaller error than the mean-pooled summary."""
    return sum(row["attention_error"] < row["mean_pooled_error"] for row in bottleneck["rows"])


def pooled_over_attention(row: dict) -> float:
    """How many times smaller attention's retrieval error is than the summary's, at one length."""
    return row["mean_pooled_error"] / row["attention_error"]


# --- alignment ----------------------------------------------------------------------------------

def row_sums(alignment: dict) -> list:
    return [math.fsum(row) for row in alignment["weights"]]


def row_sum_error(alignment: dict) -> float:
    """max |row sum - 1| over the weight rows: each is a softmax, so only rounding is left."""
    return max(abs(total - 1) for total in row_sums(alignment))


def first_crossing(alignment: dict) -> tuple | None:
    """The first pair of target words (i, k), i < k, where word k reads an earlier source word than
    word i does (the alignment crosses), or None when it is monotone."""
    aligned = alignment["aligned"]
    for i in range(len(aligned)):
        for k in range(i + 1, len(aligned)):
            if aligned[k] < aligned[i]:
                return i, k
    return None


def crossing(alignment: dict) -> bool:
    """True when the alignment is not monotone (a target word further on reads an earlier source word)."""
    return first_crossing(alignment) is not None


# --- quadratic ----------------------------------------------------------------------------------

def quadratic_rows(quadratic: dict) -> tuple:
    """(measured rows, extrapolated rows)."""
    rows = quadratic["rows"]
    return [r for r in rows if r["measured"]], [r for r in rows if not r["measured"]]


def quadratic_time_ms(quadratic: dict, n) -> float:
    """The demo's fit of the naive kernel's time: ln ms = a + b ln n."""
    return math.exp(quadratic["time_log_intercept"] + quadratic["time_exponent"] * math.log(n))


def quadratic_tiled_bytes(quadratic: dict, n) -> float:
    """The demo's line through the tiled kernel's measured scratch: fixed + per key * n."""
    return quadratic["tiled_bytes_fixed"] + quadratic["tiled_bytes_per_key"] * n


def per_key_is_packed_kv(quadratic: dict) -> bool:
    """True when the tiled scratch's bytes per key are exactly one packed key row and one value row:
    2 * d floats of 4 bytes."""
    return quadratic["tiled_bytes_per_key"] == 2 * quadratic["head_dim"] * 4


def tiled_time_share(row: dict) -> float:
    """The tiled kernel's time as a multiple of the naive kernel's at one measured length."""
    return row["tiled_ms"] / row["naive_ms"]


def budget_share(quadratic: dict, row: dict) -> float | None:
    """One head's score matrix at this length as a multiple of the naive kernels' memory budget
    (None when the run recorded no budget)."""
    budget = quadratic["memory_budget_bytes"]
    return row["score_matrix_bytes"] / budget if budget else None


def over_budget(quadratic: dict, row: dict) -> bool:
    """True when the naive kernels would refuse this length: its score matrix exceeds their budget."""
    budget = quadratic["memory_budget_bytes"]
    return bool(budget) and row["score_matrix_bytes"] > budget


def tiled_saving(row: dict) -> float:
    """How many times smaller the tiled kernel's scratch is than the score matrix alone."""
    return row["score_matrix_bytes"] / row["tiled_scratch_bytes"]


# --- uniform ------------------------------------------------------------------------------------

def uniform_weight(uniform: dict) -> float:
    """The weight every key gets when all scores of a row are equal: 1/n."""
    return 1.0 / uniform["n"]


def uniform_weight_error(uniform: dict) -> float:
    """max |weight - 1/n| over every case."""
    expected = uniform_weight(uniform)
    return max(abs(w - expected) for case in uniform["cases"] for w in case["weights"])


def uniform_output_error(uniform: dict) -> float:
    """max |output - mean of the values| over every case (the demo's max_difference per case)."""
    return max(case["max_difference"] for case in uniform["cases"])


# --- copy ---------------------------------------------------------------------------------------

# Accuracy a model must reach at a length to count as accurate there: 19 test outputs in 20 nearest
# the right vector (a model that had not learned to address a position would sit near chance, 1/n).
ACCURATE = 0.95
# Within this many times chance (1/n), an accuracy is "near chance": the model's answer is hardly
# better than a position picked at random.
NEAR_CHANCE = 2.0
# A test MSE within this of the linear-code floor counts as "at the floor".
AT_FLOOR = 0.05


def copy_sequence_numbers(copy: dict, row: dict) -> int:
    """How many numbers one sequence of this length holds: n x dim."""
    return row["n"] * copy["dim"]


def copy_share_held(copy: dict, row: dict) -> float:
    """The share of a sequence's numbers the bottleneck's one vector has room for: width / (n x dim),
    at most 1."""
    return min(1.0, copy["bottleneck_width"] / copy_sequence_numbers(copy, row))


def copy_mse_floor(copy: dict, row: dict) -> float:
    """The least test MSE per component the bottleneck can reach: its encoder is linear, and a linear
    map to `width` numbers keeps at most `width` of the n x dim independent unit-variance directions,
    so on average 1 - width / (n x dim) of a vector's variance is lost (0 when the sequence fits)."""
    return 1.0 - copy_share_held(copy, row)


def copy_fitting_rows(copy: dict) -> list:
    """The rows whose whole sequence fits the bottleneck's vector (n x dim <= width)."""
    return [row for row in copy["rows"] if copy_share_held(copy, row) == 1.0]


def copy_accurate(row: dict, model: str) -> bool:
    """Does `model` ("attention" or "bottleneck") reach ACCURATE at this row's length?"""
    return row[f"{model}_accuracy"] >= ACCURATE


def copy_near_chance(row: dict, model: str) -> bool:
    """Is `model`'s accuracy below NEAR_CHANCE times chance at this length?"""
    return row[f"{model}_accuracy"] < NEAR_CHANCE * row["chance"]


def copy_rises(copy: dict, model: str) -> list:
    """The pairs of consecutive lengths (n, next n) at which `model`'s accuracy did not fall."""
    rows = copy["rows"]
    return [(a["n"], b["n"]) for a, b in zip(rows, rows[1:]) if b[f"{model}_accuracy"] >= a[f"{model}_accuracy"]]


def copy_at_floor(copy: dict, row: dict) -> bool:
    """Is the bottleneck's test MSE within AT_FLOOR of the linear-code floor at this length?"""
    return row["bottleneck_mse"] - copy_mse_floor(copy, row) <= AT_FLOOR


def copy_gap(row: dict) -> float:
    """Attention's accuracy minus the bottleneck's at one length."""
    return row["attention_accuracy"] - row["bottleneck_accuracy"]
