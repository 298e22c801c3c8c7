"""The README's results table, generated from a committed run folder.

    python -m attnbench_report.readme_table reports/runs/<run>               # print the table
    python -m attnbench_report.readme_table reports/runs/<run> --write README.md   # replace it there

Reads the run's Python contenders' windows (python_contenders.json and its bf16 twin; the Llama
layer's prefill and decode points, of it and of the q8_0 window, in one table whose rows each keep to
their window): the libraries a user would pick instead,
the front page's question; the benchmark matrix and the C++ window
(OpenBLAS, oneDNN 2.6's primitives) stay in the report, and the matrix stands in only for a run without
the Python windows. Each through the one loader (load/results.py). For a few
forward points (one head, not causal, n = 1024 and 16384 where measured, d = 64 and 128, one
thread and all) each source gets a table: attnbench's fastest kernel at the point against the
strongest other contender of that source (every contender is in the report), GFLOP/s (median over repetitions) and its share of the FMA peak the
run measured at that thread count; the lead over the strongest other from each side's fastest
repetition (analysis/contenders.py). A ratio counts only within one source (docs/benchmarks.md), so
the sources are never mixed in a row. A missing window, or a source without the points, is said in
the text, not an error. The table sits in the README between the two MARKERS; docs_test checks that
it equals this script's output for the committed run.
"""
from __future__ import annotations

import argparse
import math
import subprocess
import sys
from pathlib import Path

from .load import results as loader
from .analysis.contenders import comparable, speed
from .load import windows as load_windows

MARKERS = ("<!-- results-table: begin (python -m attnbench_report.readme_table; do not edit by hand) -->",
           "<!-- results-table: end -->")
PREFERRED_N = (1024, 16384)  # short and long; every n is in the report
PREFERRED_D = (64, 128)
SOURCES = (("python", "the Python contenders' window (`python_contenders.json`)"),
           ("python bf16", "the Python bf16 window (`python_contenders_bf16.json`: bf16 products on "
                           "bfloat16 values; the share is of the measured peak of the products attnbench's bf16 "
                           "kernel runs on: AMX tiles where it runs on them, else `vdpbf16ps`)"))
MATRIX = ("matrix", "the benchmark matrix (`results.json`)")  # for a run without the Python windows
# The Llama-style layer (32 query heads over 8 key/value heads, d = 128): one table, each row's lead
# within its own window (`comparable`: fastest repetitions at prefill, medians at decode).
LAYER_SOURCES = (("python, prefill", "prefill, f32"), ("python, decode", "decode, K/V f32"),
                 ("python q8_0, decode", "decode, K/V q8_0"))
# Context keys a run may record its commit under (the first present wins).
COMMIT_KEYS = ("attnbench_commit", "git_commit", "commit")


def _role(kernel: str, roles: dict) -> str:
    """attnbench, baseline or peer: the window's or run's context says; older runs name no roles,
    and there naive/openblas is the baseline and every other kernel of the matrix is attnbench's."""
    role = roles.get(kernel)
    if role:
        return role
    return "baseline" if kernel == "naive/openblas" else "attnbench"


def _pct_peak(record, peak: float | None) -> float:
    if not math.isnan(record.pct_peak_median):
        return record.pct_peak_median
    if peak and not math.isnan(record.gflops_median):
        return 100.0 * record.gflops_median / peak
    return math.nan


def _cell(gflops: float, pct: float) -> str:
    if math.isnan(gflops):
        return "–"
    return f"{gflops:.0f} ({pct:.0f}%)" if not math.isnan(pct) else f"{gflops:.0f}"


def _points(table, threads_all: int | None) -> list:
    """The (n, d, threads) points shown: forward, one head, not causal; the preferred n where the
    source has them (else every n it has), the preferred d, one thread and all."""
    rows = table.where(family=("matrix", "bf16"), pass_="forward", causal=False).measured()
    ns = [n for n in PREFERRED_N if n in rows.values("n")] or rows.values("n")
    threads = sorted({1, threads_all or max(rows.values("threads") or [1])})
    return [(n, d, t) for d in PREFERRED_D for n in ns for t in threads
            if rows.where(n=n, d=d, threads=t).records]


def _strongest(ours, theirs: list) -> tuple:
    """(lead, basis, record): attnbench's record `ours` over the other it leads least, each pair read as
    `comparable` reads it (fastest repetitions where both record one, else medians)."""
    (a, b, basis), strongest = min(((comparable(ours, r), r) for r in theirs), key=lambda x: x[0][0] / x[0][1])
    return a / b, basis, strongest


def _source_table(table, run, roles: dict, peak_context: dict) -> tuple:
    """Markdown lines of one source's table ([] when it has none of the points) and how its last
    column was taken ({"fastest"}, {"median"}, both, or empty)."""
    points = _points(table, run.threads_all)
    bases = set()
    if not points:
        return [], bases
    others = [k for k in table.values("kernel") if _role(k, roles) != "attnbench"]
    head = ["n", "d", "threads", "attnbench's fastest", "GFLOP/s (% of peak)", "strongest other", "its GFLOP/s",
            "fastest over the strongest other"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for n, d, t in points:
        at = table.where(family=("matrix", "bf16"), pass_="forward", causal=False, n=n, d=d, threads=t).measured()
        peak = peak_context.get(t)
        ours = [r for r in at if _role(r.kernel, roles) == "attnbench" and not math.isnan(r.gflops_median)]
        theirs = [r for k in others for r in [at.one(kernel=k)] if r and not math.isnan(r.gflops_median)]
        if not ours:
            continue
        best = max(ours, key=lambda r: r.gflops_median)
        cells = [str(n), str(d), str(t), f"`{best.kernel}`", _cell(best.gflops_median, _pct_peak(best, peak))]
        if theirs:
            lead, basis, strongest = _strongest(max(ours, key=speed), theirs)
            bases.add(basis)
            cells += [f"`{strongest.kernel}`", _cell(strongest.gflops_median, _pct_peak(strongest, peak)),
                      f"{lead:.2f}x"]
        else:
            cells += ["–", "–", "–"]
        lines.append("| " + " | ".join(cells) + " |")
    return (lines if len(lines) > 2 else []), bases


def _layer_rows(table, roles: dict, what: str) -> list:
    """Rows of the layer table for one window: per length and thread count, attnbench's median ms per
    call, the strongest other's and attnbench's lead over it (`comparable`: the fastest repetitions at
    a compute-bound prefill point, the medians at a memory-bound decode one)."""
    others = [k for k in table.values("kernel") if _role(k, roles) != "attnbench"]
    rows = []
    for n, t in sorted({(r.kv_len, r.threads) for r in table}):
        at = table.where(kv_len=n, threads=t)
        ours = [r for r in at if _role(r.kernel, roles) == "attnbench" and not r.skipped]
        theirs = [r for k in others for r in [at.one(kernel=k)] if r and not r.skipped]
        if not ours or not theirs:
            continue
        best = max(ours, key=speed)
        lead, _, strongest = _strongest(best, theirs)
        rows.append(f"| {what} | {n:,} | {t} | {best.time_ms_median:.3g} | `{strongest.kernel}` | "
                    f"{strongest.time_ms_median:.3g} | {lead:.2f}x |")
    return rows


def _commit(run) -> str:
    for key in COMMIT_KEYS:
        if run.context.get(key):
            dirty = str(run.context.get("git_dirty", "")).lower() in ("1", "true", "yes")
            return f"`{run.context[key]}`" + (" with uncommitted changes" if dirty else "")
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%h", "--", run.path.name], cwd=run.path.parent,
                             capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ""
    if out:
        return f"not recorded in the run; its results were committed in `{out}`"
    return "not recorded in the run"


def _machine(run) -> str:
    c = run.context
    parts = [str(c.get("cpu_model", "unknown CPU"))]
    if c.get("num_cpus"):
        parts.append(f"{c['num_cpus']} CPUs")
    if c.get("host_name"):
        parts.append(f"host `{c['host_name']}`")
    if c.get("dispatch tiled/simd"):
        parts.append(f"`tiled/simd` runs as `{c['dispatch tiled/simd']}`")
    return ", ".join(parts)


def _peaks(run) -> dict:
    threads = sorted({1, run.threads_all or 1})
    return {t: run.fma_peak_gflops(t) for t in threads}


def table_markdown(run_dir: str | Path) -> str:
    """The README's results section body for one run folder (without the markers)."""
    run_dir = Path(run_dir)
    table = loader.load([run_dir])
    run = table.runs[0]
    windows = {w.name: w for w in load_windows.load_windows(run)}
    label = run_dir.name
    date = str(run.context.get("date", ""))[:10] or "undated"
    peaks = _peaks(run)
    peak_text = ", ".join(f"{p:.0f} GFLOP/s ({run.fma_peak_isa(t) or 'ISA not recorded'}) on {t} "
                          f"thread{'s' if t > 1 else ''}" for t, p in peaks.items() if p)
    where = f"[`{label}`](reports/runs/{label}/report.md)" if run_dir.resolve().parent.name == "runs" else f"`{label}`"
    out = [f"Run {where} (preset "
           f"`{run.context.get('attnbench_preset', '?')}`), {date}, {_machine(run)}; commit: {_commit(run)}. "
           f"GFLOP/s are medians over repetitions, forward pass, one head, not causal; the share is of "
           f"the FMA peak the run measured ({peak_text or 'not recorded'}). The last column divides each "
           f"side's fastest repetition where the source records one (these points are compute-bound: noise "
           f"on a shared host only adds time), else the medians. A ratio is read within one source, never "
           f"across. The benchmark matrix and the C++ window (OpenBLAS, oneDNN 2.6's primitives): the report."]
    absent = []
    sources = SOURCES if any(name in windows for name, _ in SOURCES) else (MATRIX,)
    for name, title in sources:
        if name == "matrix":
            # (the float32 kernels: a bf16 kernel's points are the bf16 window's comparison)
            source_table, roles, context = table.matrix(), {k[len("role "):]: v for k, v in run.context.items()
                                                   if k.startswith("role ")}, run.context
        elif name in windows:
            w = windows[name]
            source_table, roles, context = w.table, {k: c.role for k, c in w.contenders.items()}, w.context
        else:
            absent.append(title)
            continue
        window_run = loader.Run(index=0, label=label, path=run.path, context=context)
        peak_context = {t: window_run.fma_peak_gflops(t) or peaks.get(t) for t in peaks}
        if name == "python bf16":  # the bf16 products' own ceiling, from the run's context
            amx = (run.dispatch("tiled/simd-bf16") or "").endswith("/amxbf16")
            peak_context = {t: run._number(f"{'amx' if amx else 'bf16'}_peak_gflops_threads_{t}") for t in peaks}
        lines, bases = _source_table(source_table, run, roles, peak_context)
        if not lines:
            absent.append(f"{title} (none of the points)")
            continue
        basis = "" if bases == {"fastest"} else " (its last column: medians, as it records no fastest repetition)" \
            if bases == {"median"} else " (its last column: fastest repetitions where recorded, else medians)"
        out += ["", f"From {title}{basis}:", ""] + lines
    rows = [row for name, what in LAYER_SOURCES if name in windows
            for row in _layer_rows(windows[name].table, {k: c.role for k, c in windows[name].contenders.items()}, what)]
    if rows:
        out += ["", "A Llama-style layer (32 query heads over 8 key/value heads, d = 128): causal prefill of a prompt, "
                    "and one-row decode through a cache (the q8_0 rows from `python_contenders_q8_0.json`, the query "
                    "rounded to q8_0 for Q K^T on both sides); ms per call (medians); the lead divides each side's "
                    "fastest repetition at prefill and the medians at decode, each within its own window:", "",
                "| pass | tokens | threads | attnbench (ms) | strongest other | its ms | attnbench over it |",
                "|---|---|---|---|---|---|---|"] + rows
    if absent:
        out += ["", "Not in this run: " + "; ".join(absent) + "."]
    return "\n".join(out) + "\n"


def replace_between_markers(text: str, body: str) -> str:
    begin, end = MARKERS
    i, j = text.find(begin), text.find(end)
    if i < 0 or j < i:
        raise ValueError(f"the markers {begin!r} and {end!r} are not in the file")
    return text[: i + len(begin)] + "\n" + body + text[j:]


def between_markers(text: str) -> str:
    begin, end = MARKERS
    i, j = text.find(begin), text.find(end)
    if i < 0 or j < i:
        raise ValueError(f"the markers {begin!r} and {end!r} are not in the file")
    return text[i + len(begin) + 1: j]


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnbench_report.readme_table", description=__doc__.split("\n\n")[0])
    parser.add_argument("run", help="a run folder (reports/runs/<run>) with results.json")
    parser.add_argument("--write", metavar="README", help="replace the table between the markers in this file")
    args = parser.parse_args(argv)
    body = table_markdown(args.run)
    if args.write:
        path = Path(args.write)
        path.write_text(replace_between_markers(path.read_text(encoding="utf-8"), body), encoding="utf-8")
    else:
        sys.stdout.write(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
