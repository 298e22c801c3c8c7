"""The demos' numbers: `attnbench demo all --json demos.json` (apps/demo/) -> one dict per demo.

Not benchmark JSON (load/results.py reads that): `{"demos": {NAME: {...}}}`, one object per demo that
ran, inf and NaN written as the strings "inf", "-inf" and "nan". The report draws the "Concepts"
section from it when a demos.json lies next to the run's results.json (scripts/study.sh writes
one). What the figures and the text compute from these numbers is in analysis/demos.py.
"""
from __future__ import annotations

import math
from pathlib import Path

from ..load.results import read_json

FILE_NAME = "demos.json"
NAMES = ("softmax", "bottleneck", "alignment", "quadratic", "order", "uniform", "copy")  # `demo all` order

# The fields each demo must have (docs/demos.md); rows and cases are checked one level down.
FIELDS = {
    "softmax": ("kernel", "large_logits", "naive_exp", "naive_sum", "naive_weights", "stable_weights",
                "small_logits", "naive_small_weights", "stable_small_weights", "worked_logits",
                "worked_weights", "score_ratio", "weight_ratio"),
    "bottleneck": ("kernel", "dim", "seeds", "sharpness", "rows"),
    "alignment": ("kernel", "source", "target", "source_embedding", "target_embedding", "weights", "aligned"),
    "quadratic": ("naive_kernel", "tiled_kernel", "head_dim", "reps", "time_exponent", "time_log_intercept",
                  "tiled_bytes_fixed", "tiled_bytes_per_key", "memory_budget_bytes", "rows"),
    "order": ("kernel", "sentence_a", "sentence_b", "dim", "without_positions", "with_positions"),
    "uniform": ("kernel", "n", "dim", "cases"),
    "copy": ("kernel", "dim", "encoding_dim", "head_dim", "bottleneck_width", "decoder_hidden", "steps", "batch",
             "test_examples", "learning_rate", "rows"),
}
ROW_FIELDS = {
    ("bottleneck", "rows"): ("n", "mean_pooled_error", "attention_error", "attention_worst_error"),
    ("quadratic", "rows"): ("n", "measured", "score_matrix_bytes", "naive_scratch_bytes", "naive_ms",
                            "tiled_scratch_bytes", "tiled_ms"),
    ("uniform", "cases"): ("how", "weights", "output", "mean", "max_difference"),
    ("copy", "rows"): ("n", "chance", "attention_accuracy", "bottleneck_accuracy", "attention_mse", "bottleneck_mse",
                       "attention_parameters", "bottleneck_parameters"),
}
_NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def path_next_to(results_json: Path) -> Path:
    return Path(results_json).parent / FILE_NAME


def load(path: Path) -> dict:
    """demos.json -> {name: demo} in `demo all` order, the non-finite strings as floats. Raises
    ValueError (naming the file, the demo and the field) for a file that is not the demos' JSON."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("demos"), dict):
        raise ValueError(f"{path}: not attnbench demo JSON (no 'demos' object)")
    demos = {}
    for name in NAMES:  # a demo that did not run (`attnbench demo softmax --json`) is simply absent
        demo = data["demos"].get(name)
        if demo is None:
            continue
        missing = [k for k in FIELDS[name] if k not in demo]
        for (owner, key), fields in ROW_FIELDS.items():
            if owner == name and key not in missing:
                missing += [f"{key}[{i}].{k}" for i, row in enumerate(demo[key]) for k in fields if k not in row]
        if missing:
            raise ValueError(f"{path}: demo {name}: missing {', '.join(missing)}")
        demos[name] = _numbers(demo)
    return demos


def load_next_to(results_json: Path) -> dict | None:
    """The demos next to a run's results.json, or None when there is no demos.json."""
    path = path_next_to(results_json)
    return load(path) if path.is_file() else None


def _numbers(value):
    if isinstance(value, str):
        return _NON_FINITE.get(value, value)
    if isinstance(value, list):
        return [_numbers(v) for v in value]
    if isinstance(value, dict):
        return {k: _numbers(v) for k, v in value.items()}
    return value

