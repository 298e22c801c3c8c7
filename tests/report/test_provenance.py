"""The report's header (machine, date, preset, attnbench's version, commit, compiler) and the method
section's provenance, from the fields every window's JSON context records (bench/run_context.cpp:
attnbench_version, git_commit, git_dirty): shown where recorded, said to be missing in older JSON
(tests/fixtures/), and the study's files from another build named."""
from __future__ import annotations

import io
import json
import re
import unittest
from contextlib import redirect_stderr, redirect_stdout

import support
from attnbench_report import cli as report
from attnbench_report.load import results as loader

COMMIT = "0123456789abcdef0123456789abcdef01234567"
OTHER_COMMIT = "fedcba9876543210fedcba9876543210fedcba98"
PROVENANCE = {"attnbench_version": "9.8.7", "git_commit": COMMIT, "git_dirty": "false",
              "attnbench_preset": "standard", "date": "2026-12-05T22:10:00+00:00", "host_name": "box",
              "cpu_model": "Some CPU", "num_cpus": 2, "compiler": "GNU 12.2.0", "cxx_flags": "Release: -O3"}


def decode_point() -> list:
    """One measured point that is no square head: the report builds without the matrix's figures."""
    return support.benchmark_entries(
        "tiled/simd/avx2/q:1/kv:8192/d:128/threads:1/causal:0", [0.5, 0.5, 0.5],
        counters={"flops_per_call": 4.0 * 8192 * 128, "bytes_moved": 8.4e6, "scratch_bytes": 1e6})


def build(name: str, context: dict, beside: dict | None = None) -> tuple:
    """Report a one-point run with this context (and {file name: context} of the study's other files
    next to it, each with no point); returns (report.md, report.html, the loaded run)."""
    folder = support.output_root() / "provenance" / name
    support.write_results(folder, decode_point(), context)
    for file, other in (beside or {}).items():
        (folder / file).write_text(json.dumps({"context": other, "benchmarks": []}), encoding="utf-8")
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        status = report.main([str(folder)])
    if status != 0:
        raise AssertionError(f"{name}: the report exited with {status}")
    run = loader.load([folder]).runs[0]
    return ((folder / "report.md").read_text(encoding="utf-8"), (folder / "report.html").read_text(encoding="utf-8"),
            run)


def header_cells(md: str) -> dict:
    """{label: value} of the Markdown header table (the first table, before the contents list)."""
    lines = md.split("\n1. [")[0].splitlines()
    rows = [line for line in lines if line.startswith("| ")]
    labels, values = ([cell.strip() for cell in row.strip("|").split(" | ")] for row in rows[:2])
    return dict(zip(labels, values))


def method_section(md: str) -> str:
    return md.split("## How the numbers are made")[1]


class RecordedProvenance(unittest.TestCase):
    def test_header_names_machine_date_preset_version_and_commit(self):
        md, html, run = build("clean", PROVENANCE)
        cells = header_cells(md)
        self.assertEqual(list(cells), ["machine", "date", "preset", "attnbench", "commit", "compiler"])
        self.assertEqual(cells["machine"], "Some CPU, 2 CPUs (box)")
        self.assertEqual(cells["date"], "2026-12-05 22:10:00+00:00")
        self.assertEqual(cells["preset"], "standard")
        self.assertEqual(cells["attnbench"], "9.8.7")
        self.assertEqual(cells["commit"], f"`{COMMIT[:12]}`")
        self.assertEqual(cells["compiler"], "GNU 12.2.0")
        # The HTML page: the same header, one table under the title, before the contents.
        head = html.split("<nav>")[0]
        self.assertIn('<table class="provenance">', head)
        self.assertIn(f"<code>{COMMIT[:12]}</code>", head)
        self.assertIn("<td>standard</td>", head)
        self.assertIn("<td>9.8.7</td>", head)
        # The method section: the whole hash, compiler and flags, the preset.
        method = method_section(md)
        self.assertIn(f"Measured by attnbench 9.8.7 built from commit `{COMMIT}`;", method)
        self.assertIn("compiler GNU 12.2.0 (`Release: -O3`), preset `standard`.", method)
        self.assertNotIn("modified", method)
        self.assertEqual((run.version, run.git_commit, run.git_dirty, run.preset), ("9.8.7", COMMIT, False, "standard"))

    def test_a_dirty_tree_is_said(self):
        md, _, run = build("dirty", dict(PROVENANCE, git_dirty="true"))
        self.assertTrue(run.git_dirty)
        self.assertEqual(header_cells(md)["commit"], f"`{COMMIT[:12]}`, tracked files modified")
        self.assertIn(f"`{COMMIT}` with tracked files modified (the numbers may not be that commit's)",
                      method_section(md))

    def test_windows_of_the_same_build_and_of_another(self):
        same = {k: PROVENANCE[k] for k in ("attnbench_version", "git_commit", "git_dirty")}
        md, _, _ = build("windows", PROVENANCE, {
            "scaling.json": dict(same, attnbench_window="scaling"),
            "phases.json": dict(same, git_commit=OTHER_COMMIT, attnbench_window="phases"),
            "python_contenders.json": {"attnbench_window": "python"}})
        self.assertEqual(header_cells(md)["commit"], f"`{COMMIT[:12]}`; 1 other file(s) from another build")
        method = method_section(md)
        self.assertIn("`scaling.json` next to it records the same build.", method)
        self.assertIn(f"Files next to it from another build: `phases.json` (`{OTHER_COMMIT[:12]}`)", method)
        self.assertIn("`python_contenders.json` records no build.", method)

    def test_a_build_outside_git(self):
        md, _, _ = build("no-git", dict(PROVENANCE, git_commit="unknown", git_dirty="unknown"))
        self.assertEqual(header_cells(md)["commit"], "unknown (built outside a git checkout)")


class OlderJson(unittest.TestCase):
    """JSON written before the provenance fields (every fixture) still makes a report, which says what
    it does not know instead of leaving it out."""

    def test_fixture_report_says_not_recorded(self):
        context = json.loads(support.FIXTURE.read_text())["context"]
        self.assertNotIn("git_commit", context)  # the fixture is older JSON
        md = (support.fixture_report() / "report.md").read_text(encoding="utf-8")
        cells = header_cells(md)
        self.assertEqual(cells["attnbench"], "not recorded")
        self.assertEqual(cells["commit"], "not recorded")
        self.assertEqual(cells["preset"], context["attnbench_preset"])
        self.assertEqual(cells["compiler"], context["compiler"])
        self.assertIn("predates the benchmark's provenance fields", method_section(md))

    def test_every_fixture_reads_as_unrecorded(self):
        for path in sorted((support.ROOT / "tests" / "fixtures").glob("*.json")):
            data = json.loads(path.read_text())
            if "benchmarks" not in data:
                continue
            run = loader.Run(index=0, label=path.stem, path=path, context=data.get("context", {}))
            self.assertIsNone(run.git_commit, path.name)
            self.assertIsNone(run.git_dirty, path.name)
            self.assertIsNone(run.version, path.name)

    def test_no_context_at_all(self):
        md, _, _ = build("no-context", {})
        cells = header_cells(md)
        self.assertEqual(cells["date"], "not recorded")
        self.assertEqual(cells["preset"], "not recorded")
        self.assertTrue(re.match(r"unknown CPU", cells["machine"]), cells["machine"])


if __name__ == "__main__":
    unittest.main()
