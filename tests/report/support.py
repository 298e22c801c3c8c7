"""Shared by the report tests: paths, synthetic JSON, and one report built from the fixture per test
process (building takes a few seconds). The tests import the package attnbench_report: run them with
PYTHONPATH=python (ctest sets it) or with the package installed."""
from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "quick_results.json"  # a real quick run from before the backward
BACKWARD_FIXTURE = ROOT / "tests" / "fixtures" / "quick_backward_results.json"  # its scalar kernels, with it

FIGURE_STEMS = ("fig1_time_vs_n", "fig2_memory_vs_n", "fig3_gflops_vs_n", "fig4_heatmap", "fig5_speedups",
                "fig6_roofline", "fig7_thread_scaling")


_built = {}


def output_root() -> Path:
    """Where tests write: $ATTNBENCH_REPORT_TEST_OUT, kept afterwards (ctest sets it, so the report
    and the browser screenshot stay in the build tree to be looked at); else one temporary folder
    per test process, removed at exit."""
    if "root" not in _built:
        configured = os.environ.get("ATTNBENCH_REPORT_TEST_OUT")
        if configured:
            path = Path(configured)
            path.mkdir(parents=True, exist_ok=True)
        else:
            path = Path(tempfile.mkdtemp(prefix="attnbench-report-test-"))
            atexit.register(shutil.rmtree, path, True)
        _built["root"] = path
    return _built["root"]


def fixture_report() -> Path:
    """The fixture copied to <out>/fixture-run/results.json and reported next to itself (the default
    output folder), once per process. Returns the run folder."""
    if "single" not in _built:
        from attnbench_report import cli

        run_dir = output_root() / "fixture-run"
        if run_dir.exists():
            shutil.rmtree(run_dir)
        run_dir.mkdir(parents=True)
        shutil.copy(FIXTURE, run_dir / "results.json")
        with contextlib.redirect_stdout(io.StringIO()):
            status = cli.main([str(run_dir)])
        if status != 0:
            raise RuntimeError(f"the report exited with {status}")
        _built["single"] = run_dir
    return _built["single"]


def benchmark_entries(name: str, times_ms, gflops=None, counters=None, aggregates=True, time_unit="ms") -> list:
    """Google Benchmark JSON entries for one point: its repetitions' aggregates (mean, median,
    stddev, cv, and the matrix's min) as attnbench_bench writes them with
    --benchmark_report_aggregates_only, or the plain repetitions."""
    import numpy as np

    scale = {"ns": 1e6, "us": 1e3, "ms": 1.0, "s": 1e-3}[time_unit]
    times = np.array(times_ms, dtype=float)
    gflops = np.array(gflops if gflops is not None else 1.0 / times, dtype=float)
    counters = counters or {}
    run_name = name + f"/repeats:{len(times)}/real_time"
    if not aggregates:
        return [dict({"name": run_name, "run_name": run_name, "run_type": "iteration", "repetitions": len(times),
                      "repetition_index": i, "threads": 1, "iterations": 10, "real_time": t * scale,
                      "cpu_time": t * scale, "time_unit": time_unit, "GFLOP/s": g}, **counters)
                for i, (t, g) in enumerate(zip(times, gflops))]
    out = []
    for stat, f in (("mean", np.mean), ("median", np.median),
                    ("stddev", lambda v: np.std(v, ddof=1)), ("cv", lambda v: np.std(v, ddof=1) / np.mean(v)),
                    ("min", np.min)):
        entry = {"name": f"{run_name}_{stat}", "run_name": run_name, "run_type": "aggregate",
                 "repetitions": len(times), "threads": 1, "aggregate_name": stat,
                 "aggregate_unit": "percentage" if stat == "cv" else "time", "iterations": len(times),
                 "real_time": float(f(times)) * (1 if stat == "cv" else scale), "cpu_time": 0.0,
                 "time_unit": time_unit, "GFLOP/s": float(f(gflops))}
        for key, value in counters.items():
            entry[key] = 0.0 if stat in ("stddev", "cv") else value
        out.append(entry)
    return out


def skipped_entries(name: str, reason: str, repetitions: int = 3) -> list:
    run_name = name + f"/iterations:1/repeats:{repetitions}/real_time"
    return [{"name": run_name, "run_name": run_name, "run_type": "iteration", "repetitions": repetitions,
             "repetition_index": i, "threads": 1, "error_occurred": True, "error_message": f"skipped: {reason}",
             "iterations": 1, "real_time": 0.0, "cpu_time": 0.0, "time_unit": "ms"} for i in range(repetitions)]


def document_text(doc) -> str:
    """A Document's first section as text: its paragraphs, bullets, and each table's caption and rows
    (cells joined by " | "), one per line: what a test of a section's wording reads."""
    out = []
    for block in doc.sections[0].blocks:
        out += [block.text] if block.kind == "paragraph" else block.items if block.kind == "bullets" else \
            [block.caption] + [" | ".join(row) for row in block.rows]
    return "\n".join(out)


def write_results(folder: Path, benchmarks: list, context: dict | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "results.json"
    path.write_text(json.dumps({"context": context or {"host_name": "synthetic", "num_cpus": 2},
                                "benchmarks": benchmarks}), encoding="utf-8")
    return path


def load_points(points, context: dict | None = None, cv: float = 0.01):
    """A loaded table of hand-made points: [(benchmark name, median ms, {counter: value})], each as
    three repetitions whose real time has the given coefficient of variation (or [(name, ms,
    counters, cv)] for a CV per point)."""
    from attnbench_report.load import results as loader

    benchmarks = []
    for point in points:
        name, ms, counters = point[:3]
        spread = point[3] if len(point) > 3 else cv
        benchmarks += benchmark_entries(name, [ms * (1 - spread), ms, ms * (1 + spread)], counters=counters)
    folder = Path(tempfile.mkdtemp(prefix="attnbench-points-", dir=output_root()))
    return loader.load([write_results(folder, benchmarks, context)])
