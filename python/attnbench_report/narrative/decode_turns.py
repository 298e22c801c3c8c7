"""The decode section's tables of the storage types called by turns (`types/` points: decode, and
prefill), and what quantising the query bought the quantised caches; decode.py places them. Also the
storage types' names in the text, and the range helper both modules phrase figures with."""
from __future__ import annotations

import math

import numpy as np

from ..analysis import decode as ad
from .. import formatting as fmt
from ..document import Paragraph, Table
from ..load.results import kernel_sort_key
from ..load.decode import HEAD_DIM, QUERY_QUANTISED, TYPES

TYPE_NAMES = {"f32": "fp32", "f16": "fp16", "bf16": "bf16", "q8_0": "q8_0", "q4_0": "q4_0",
              "q8_0_q8": "q8_0 (query q8_0)", "q4_0_q8": "q4_0 (query q8_0)"}


def value_range(values, form) -> str:
    low, high = min(values), max(values)
    return form(low) if form(low) == form(high) else f"{form(low)} to {form(high)}"


def _by_turns(s, points: list, what: str, title: str, shape: dict, cell, unit: str, caption: str) -> None:
    """A table of types points (the storage types called by turns), or the failures alone: `shape` maps
    each column naming the point's shape to its cell, `cell(p, t)` is type t's median call and rate
    (headed `unit`); `caption` follows `title`."""
    measured = sorted((p for p in points if not p.error),
                      key=lambda p: (kernel_sort_key(p.kernel), p.layout, p.rows, p.kv, p.threads))
    failed = [p for p in points if p.error]
    failures = (f" {len(failed)} {what} point(s) measured nothing: " + "; ".join(f"{p.name}: {p.error}" for p in failed)
                if failed else "")
    if not measured:
        if failed:
            s.add(Paragraph(title + ":" + failures))
        return
    several = len({p.kernel for p in measured}) > 1
    # the types the points called (a run from before the quantised types has three)
    types = [t for t in TYPES + QUERY_QUANTISED
             if any(math.isfinite(p.median.get(f"us_{t}", math.nan)) for p in measured)]
    narrow = [t for t in ad.NARROW + QUERY_QUANTISED if t in types]
    body = []
    for p in measured:
        cells = ([fmt.code(p.kernel)] if several else []) + [f(p) for f in shape.values()]
        cells += [cell(p, t) for t in types]
        cells += [f"{fmt.ratio(p.speedup(t))} (CV {fmt.pct(100 * p.noise(t), 1)})" for t in narrow]
        rounds = p.median.get("rounds", math.nan)
        cells.append(fmt.count(rounds) if math.isfinite(rounds) else "n/a")
        body.append(cells)
    header = (["kernel"] if several else []) + list(shape)
    header += [f"{TYPE_NAMES[t]}: {unit}" for t in types] + [f"{TYPE_NAMES[t]} over fp32" for t in narrow]
    header.append("rounds")
    align = ("l" if several else "") + "".join("l" if column == "layout" else "r" for column in shape)
    s.add(Table(header, body, align=align + "r" * (len(header) - len(align)), caption=title + caption + failures))


def call_by_call(s, window) -> None:
    """The decode types points: each 16-bit type's speed over fp32 with both sides called in one round."""
    _by_turns(s, window.types, "types", "The storage types called by turns (`types/` points)",
              {"layout": lambda p: p.layout, "rows": lambda p: str(p.rows), "kv": lambda p: fmt.count(p.kv),
               "threads": lambda p: str(p.threads)},
              lambda p, t: f"{fmt.us(p.median.get(f'us_{t}', math.nan))} · "
                           f"{fmt.sig(p.median.get(f'gbs_{t}', math.nan))} GB/s", "µs · GB/s",
              ": each round calls every storage type once on the same shape (and q8_0 and q4_0 again with the query "
              "quantised to q8_0, ggml's way: integer Q Kᵀ where the CPU has AVX-512 VNNI), and a speedup is the median "
              "over rounds of fp32's time over the type's within a round, so both sides share the host's minute; CV "
              "over the repetitions. Where the window has one, the target below reads it instead of the decode points' "
              "medians above.")
    _quantised_query(s, window.types)


def _quantised_query(s, points) -> None:
    """What quantising the query bought the quantised caches: each one's time over its time with a float32
    query, and against fp16, from the same rounds."""
    parts = []
    for plain, quantised in zip(("q8_0", "q4_0"), QUERY_QUANTISED):
        pairs = [(p.median.get(f"us_{plain}", math.nan) / p.median.get(f"us_{quantised}", math.nan),
                  p.median.get(f"us_f16", math.nan) / p.median.get(f"us_{quantised}", math.nan))
                 for p in points if not p.error and p.family == "decode"]
        pairs = [(a, b) for a, b in pairs if math.isfinite(a) and math.isfinite(b)]
        if pairs:
            gain, over = [a for a, _ in pairs], [b for _, b in pairs]
            parts.append(f"{plain} {fmt.ratio(float(np.median(gain)))} ({value_range(gain, fmt.ratio)}) faster, "
                         f"{fmt.ratio(float(np.median(over)))} fp16's speed ({value_range(over, fmt.ratio)})")
    if parts:
        s.add(Paragraph("With the query quantised too, over the decode types points (medians, ranges): "
                        + "; ".join(parts) + ". The scores then cost integer dot products, 64 products an "
                        "instruction where the CPU has AVX-512 VNNI; what remains is V's dequantisation to "
                        "float32 before its FMAs, as many conversions per value as before."))


def prefill_by_turns(s, window) -> None:
    """The prefill types points: each 16-bit type's prefill speed over fp32's, both called in one round."""
    _by_turns(s, window.prefill_types, "prefill types",
              f"Prefill, the storage types called by turns (`types/.../prefill:N` points, d = {HEAD_DIM})",
              {"n": lambda p: fmt.count(p.rows), "threads": lambda p: str(p.threads)},
              lambda p, t: f"{fmt.ms(p.median.get(f'us_{t}', math.nan) / 1e3)} · "
                           f"{fmt.sig(p.median.get(f'gflops_{t}', math.nan))}", "time · GFLOP/s",
              ": each round fills each type's own empty cache and runs the causal prefill once, fp32, fp16 and "
              "bf16 by turns, and a ratio is the median over rounds of fp32's time over the type's within a round; "
              "CV over the repetitions. Where the window has one, the prefill target below reads it instead of the "
              "prefill points' medians.")
