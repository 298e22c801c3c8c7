"""The attnbench report: figures and text generated from Google Benchmark JSON.

    python -m attnbench_report RUN_DIR_OR_JSON [RUN2 ...] [--out DIR]   (or: attnbench-report ...)

One run: report.md (GitHub Markdown, figures as PNG links), report.html (one self-contained page,
figures inlined as SVG) and the figures fig1..fig7 as PNG and SVG, written next to the JSON (or
into DIR), with fig9 and fig10 and the section "The backward pass" when the run has backward points; with the contenders' windows next to it (contenders.json, python_contenders.json), the
section "Against the alternatives" and its figure fig8_contenders; with the decode window next to it
(decode.json), the section "Decoding against a KV cache" and its figures fig11 and fig12; with the
scaling window next to it (scaling.json), the section "Thread scaling in rounds"; with the
long-context window (context.json), the section "How long context is bought" and fig14; with the
ring window (ring_window.json, bench/ring_window.py), the section "Beyond one machine: ring attention
over MPI" and fig15; when a demos.json (`attnbench demo all --json`) lies next to the JSON, a Concepts
section too, with its figures concepts_*. Several runs: a side-by-side comparison of machines or
commits (GFLOP/s at the points the runs share, with ratios, and figures overlaying the runs),
written to a compare-* folder in the first run's folder (or into DIR). Run with the project's Python
(.venv/, made by scripts/setup.sh: matplotlib, numpy, jinja2).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from . import compare, formatting, narrative, render, scaling
from . import model as cost_model
from .analysis import backward as analysis_backward
from .figures import backward_gflops as fig_backward_gflops
from .figures import backward_ratio as fig_backward_ratio
from .figures import concepts as fig_concepts
from .figures import context as fig_context
from .figures import contenders as fig_contenders
from .figures import decode_bandwidth as fig_decode_bandwidth
from .figures import decode_time as fig_decode_time
from .figures import gflops as fig_gflops
from .figures import heatmap as fig_heatmap
from .figures import memory as fig_memory
from .figures import model as fig_model
from .figures import ring as fig_ring
from .figures import roofline as fig_roofline
from .figures import speedup as fig_speedup
from .figures import threads as fig_threads
from .figures import time as fig_time
from .load import context as loader_context
from .load import decode as loader_decode
from .load import demos
from .load import results as loader
from .load import ring as loader_ring
from .load import windows as load_windows

PROG = "attnbench-report"
FIGURES = (fig_time, fig_memory, fig_gflops, fig_heatmap, fig_speedup, fig_roofline, fig_threads)
BACKWARD_FIGURES = (fig_backward_gflops, fig_backward_ratio)
DECODE_FIGURES = (fig_decode_time, fig_decode_bandwidth)


def single_report(table: loader.Table, out_dir: Path) -> list:
    """Every figure, then the text, for the one run in `table`; returns the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    figures = {}
    matrix = table.forward().matrix()
    if len(matrix.measured()):  # the figures read the forward's n x d matrix of square one-head points
        for module in FIGURES:
            written = module.draw(matrix, out_dir)
            figures[written.stem] = written
        if analysis_backward.measured(table):  # and the backward's, against the forward
            for module in BACKWARD_FIGURES:
                written = module.draw(table, out_dir)
                figures[written.stem] = written
    concepts = load_demos(table.runs[0].path)
    if concepts:  # the Concepts section: the demos' figures, when demos.json lies next to the JSON
        figures.update({f.stem: f for f in fig_concepts.draw(concepts, out_dir).values()})
    windows = load_windows.load_windows(table.runs[0])  # contenders.json, python_contenders.json next to it
    if any(len(w.table.measured()) for w in windows):
        written = fig_contenders.draw(windows, table.runs[0], out_dir)
        figures[written.stem] = written
    decode = load_decode(table.runs[0])
    if decode is not None and len(decode.table.where(family="decode").measured()):
        for module in DECODE_FIGURES:
            written = module.draw(decode, out_dir)
            figures[written.stem] = written
    context = load_beside(loader_context.load_next_to, table.runs[0].path, "its long-context section")
    if context and any(not p.skipped for p in context):
        from .analysis import threads_all
        written = fig_context.draw(context, threads_all(table), table.runs[0].context.get("cpu_model", ""),
                                   out_dir)
        figures[written.stem] = written
    ring = load_beside(loader_ring.load_next_to, table.runs[0].path, "its ring section")
    if ring is not None:
        written = fig_ring.draw(ring, out_dir)
        figures[written.stem] = written
    model = cost_model.build(table)
    extra = []
    if model.predictions:  # the cost model: its figure and model.json
        written = fig_model.draw(model, table, out_dir)
        figures[written.stem] = written
        extra.append(cost_model.write_json(model, out_dir))
    phases = load_beside(cost_model.load_phases, table.runs[0], "the measured phases") or []
    document = narrative.build(table, figures, concepts, windows, decode, load_scaling(table.runs[0].path), model,
                               phases, context, ring)
    md = render.write_markdown(document, out_dir)
    page = render.write_html(document, out_dir)
    return [md, page] + [f for fig in figures.values() for f in (fig.png, fig.svg)] + extra


def load_beside(load, source, what: str):
    """load(source), or None when it raises OSError or ValueError (said on stderr: the report is made
    without `what`)."""
    try:
        return load(source)
    except (OSError, ValueError) as error:
        print(f"{PROG}: {error}; the report leaves out {what}", file=sys.stderr)
        return None


def load_demos(results_json: Path) -> dict | None:
    """The demos' numbers next to the run (`attnbench demo all --json`), or None: no file, or one that
    cannot be read (the report is made without its Concepts section)."""
    return load_beside(demos.load_next_to, results_json, "its Concepts section")


def load_decode(run: loader.Run):
    """The decode window next to the run (decode.json), or None: no file, or one that cannot be read
    (the report is made without its section "Decoding against a KV cache")."""
    return load_beside(loader_decode.load_next_to, run, "its decode section")


def load_scaling(results_json: Path):
    """The scaling window next to the run (scaling.json), or None: no file, or one that cannot be read
    (the report is made without its section "Thread scaling in rounds")."""
    return load_beside(scaling.load_next_to, results_json, "its section on the scaling window")


def comparison_report(table: loader.Table, out_dir: Path) -> list:
    out_dir.mkdir(parents=True, exist_ok=True)
    document, figures = compare.build(table, out_dir)
    md = render.write_markdown(document, out_dir)
    page = render.write_html(document, out_dir)
    return [md, page] + [f for fig in figures for f in (fig.png, fig.svg)]


def default_out_dir(table: loader.Table) -> Path:
    first = table.runs[0].path.parent
    if len(table.runs) == 1:
        return first
    others = "-vs-".join(formatting.slug(run.label)[:40] for run in table.runs[1:])
    return first / f"compare-{others}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR_OR_JSON",
                        help="a run folder holding results.json, or a Google Benchmark JSON file")
    parser.add_argument("--out", type=Path, help="write here instead of next to the (first) JSON")
    args = parser.parse_args(argv)
    start = time.monotonic()
    try:
        table = loader.load(args.runs)
    except (OSError, ValueError) as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
    if not len(table.measured()):
        print(f"{PROG}: {', '.join(args.runs)}: no measured point to report", file=sys.stderr)
        return 2
    out_dir = args.out or default_out_dir(table)
    if len(table.runs) == 1:
        written = single_report(table, out_dir)
    else:
        written = comparison_report(table, out_dir)
    print(f"report: {len(table)} points from {len(table.runs)} run(s) -> {out_dir}/report.md, report.html "
          f"and {len(written) - 2} figure files ({time.monotonic() - start:.0f} s)")
    return 0

