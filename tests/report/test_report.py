"""The report builds from the fixture (a trimmed real quick run): files next to the JSON, every
figure, text whose numbers are the analysis's, and the comparison of several runs. Independent of
the fixture's exact values, so a quieter run can replace it."""
from __future__ import annotations

import io
import json
import re
import shutil
import unittest
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import support
from attnbench_report import analysis
from attnbench_report import formatting as fmt
from attnbench_report.load import results as loader
from attnbench_report import cli as report

SECTIONS = ("Summary", "Machine and build", "Time: the n² of the score matrix",
            "Tiled against naive: where the online softmax wins", "Memory: n² scores against packed K and V",
            "Throughput and share of the peak", "Which kernel wins each cell", "Speedups", "Roofline",
            "Thread scaling", "Noise", "Skipped points", "How the numbers are made")


class SingleRun(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.run_dir = support.fixture_report()
        cls.md = (cls.run_dir / "report.md").read_text(encoding="utf-8")
        cls.html = (cls.run_dir / "report.html").read_text(encoding="utf-8")
        cls.table = loader.load([cls.run_dir])

    def test_figures_written_next_to_the_json(self):
        for stem in support.FIGURE_STEMS:
            png, svg = self.run_dir / f"{stem}.png", self.run_dir / f"{stem}.svg"
            self.assertEqual(png.read_bytes()[:8], b"\x89PNG\r\n\x1a\n", stem)
            self.assertGreater(png.stat().st_size, 10_000, stem)
            self.assertIn("<svg", svg.read_text(encoding="utf-8")[:2000], stem)

    def test_markdown_sections_and_relative_figure_links(self):
        for title in SECTIONS:
            self.assertIn(f"\n## {title}\n", self.md)
        links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", self.md)
        self.assertEqual(sorted(links), sorted(f"{stem}.png" for stem in support.FIGURE_STEMS))
        self.assertNotIn(str(self.run_dir), self.md)  # nothing absolute: the folder can be committed and moved

    def test_markdown_tables_are_well_formed(self):
        lines = self.md.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("|") and i + 1 < len(lines) and re.fullmatch(r"\|(:?-+:?\|)+", lines[i + 1]):
                columns = lines[i + 1].count("|") - 1
                j = i + 2
                while j < len(lines) and lines[j].startswith("|"):
                    cells = re.split(r"(?<!\\)\|", lines[j])[1:-1]
                    self.assertEqual(len(cells), columns, lines[j])
                    j += 1

    def test_exponents_in_the_text_are_the_fits(self):
        tiled = analysis.simd_kernel(self.table, "tiled")
        fits = analysis.time_fits(self.table, 1)
        for d in self.table.values("d"):
            if (tiled, d) in fits:
                self.assertIn(f"{fits[(tiled, d)].slope:.2f} at d = {d}", self.md)
        row = next(line for line in self.md.splitlines() if line.startswith(f"| `{tiled}` |"))
        self.assertIn(f"{fits[(tiled, self.table.values('d')[0])].slope:.2f}", row)

    def test_crossover_sentences(self):
        tiled, naive = analysis.simd_kernel(self.table, "tiled"), analysis.simd_kernel(self.table, "naive")
        for d in self.table.values("d"):
            sentence = analysis.crossover(self.table, tiled, naive, d, 1).sentence()
            self.assertTrue(re.search(r"overtakes naive at n ≈ [\d,]+|every measured n|never", sentence), sentence)
            self.assertIn(sentence, self.md)

    def test_skipped_points_listed_with_reasons(self):
        skipped = self.table.skipped()
        section = self.md.split("## Skipped points")[1].split("\n## ")[0]
        if not len(skipped):
            self.assertIn("No point was skipped.", section)
        else:
            self.assertIn(f"{len(skipped)} points were not measured", section)
        for r in skipped:
            self.assertIn(r.skip_reason, section)

    def test_noise_flags_every_point_above_5_percent(self):
        section = self.md.split("## Noise")[1].split("\n## ")[0]
        noisy = analysis.noisy(self.table)
        self.assertIn(f"{len(noisy)} are above 5%", section)
        rows = [line for line in section.splitlines() if line.startswith("| `")]
        self.assertEqual(len(rows), len(noisy))

    def test_machine_context(self):
        context = json.loads(support.FIXTURE.read_text())["context"]
        section = self.md.split("## Machine and build")[1].split("\n## ")[0]
        for key in ("cpu_model", "compiler", "google_benchmark_version", "dispatch tiled/simd"):
            self.assertIn(str(context[key]), section)
        self.assertIn(f"{fmt.sig(float(context['fma_peak_gflops_threads_1']))} GFLOP/s", section)

    def test_memory_extrapolation_to_128000(self):
        section = self.md.split("## Memory")[1].split("\n## ")[0]
        self.assertIn("128,000² × 4 bytes = 65.5 GB", section)
        self.assertIn("**128,000** (extrapolated)", section)

    def test_html_is_self_contained(self):
        self.assertTrue(self.html.startswith("<!DOCTYPE html>"))
        self.assertEqual(self.html.count("<figure "), len(support.FIGURE_STEMS))
        self.assertEqual(len(re.findall(r"<svg[\s>]", self.html)), len(support.FIGURE_STEMS))
        self.assertNotRegex(self.html, r"<(img|link|script)[^>]+(src|href)=")
        self.assertNotIn("<?xml", self.html)
        for title in SECTIONS:
            self.assertIn(title, self.html)


class SeveralRuns(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        root = support.output_root() / "compare-runs"
        if root.exists():
            shutil.rmtree(root)
        data = json.loads(support.FIXTURE.read_text())
        (root / "before").mkdir(parents=True)
        (root / "before" / "results.json").write_text(json.dumps(data))
        for entry in data["benchmarks"]:  # the "after" run: twice the GFLOP/s at every point
            if entry.get("aggregate_name") in ("mean", "median") and "GFLOP/s" in entry:
                entry["GFLOP/s"] *= 2
        data["context"]["compiler"] = "GNU 99.0"
        (root / "after").mkdir()
        (root / "after" / "results.json").write_text(json.dumps(data))
        cls.root = root
        with redirect_stdout(io.StringIO()):
            cls.status = report.main([str(root / "before"), str(root / "after")])

    def test_written_to_a_compare_folder_in_the_first_run(self):
        self.assertEqual(self.status, 0)
        (folder,) = [p for p in (self.root / "before").iterdir() if p.name.startswith("compare-")]
        self.assertEqual(folder.name, "compare-after")
        for name in ("report.md", "report.html", "fig_compare_gflops.png", "fig_compare_gflops.svg",
                     "fig_compare_ratio.png", "fig_compare_ratio.svg"):
            self.assertTrue((folder / name).is_file(), name)
        self.assertFalse((self.root / "before" / "report.md").exists())

    def test_ratios_at_shared_points(self):
        md = (self.root / "before" / "compare-after" / "report.md").read_text(encoding="utf-8")
        measured = len(loader.load([support.FIXTURE]).measured())
        self.assertIn(f"geometric mean 2.00x over {measured} shared points", md)
        self.assertIn("| after / before |", md)
        self.assertIn("GNU 99.0", md)

    def test_out_option(self):
        out = self.root / "elsewhere"
        with redirect_stdout(io.StringIO()):
            status = report.main([str(self.root / "before" / "results.json"), str(self.root / "after"), "--out", str(out)])
        self.assertEqual(status, 0)
        self.assertTrue((out / "report.html").is_file())


class DecodingAndGqa(unittest.TestCase):
    """The fixture plus decoding and GQA points (made here: the bench writes them since the fixture's
    run): their own section, and the matrix figures and text unchanged by them."""

    @classmethod
    def setUpClass(cls):
        data = json.loads(support.FIXTURE.read_text())
        # a newer fixture may hold real decoding and GQA points: replace them by these known ones
        data["benchmarks"] = [b for b in data["benchmarks"] if "/q:" not in b["run_name"]]
        extra = []
        for kernel in ("tiled/simd/avx512f", "naive/simd/avx512f"):
            for threads in (1, 2):
                counters = {"flops_per_call": 4.0 * 8192 * 128, "bytes_moved": 4.0 * (2 * 128 + 2 * 8192 * 128),
                            "scratch_bytes": 9e6, "score_matrix_bytes": 32768.0, "rss_peak_bytes": 1e8}
                extra += support.benchmark_entries(f"{kernel}/q:1/kv:8192/d:128/threads:{threads}/causal:0",
                                                   [0.5, 0.52, 0.51], counters=counters)
                for kv_heads, ms in ((8, 40.0), (2, 30.0)):
                    counters = {"flops_per_call": 8 * 4.0 * 512 * 512 * 128, "bytes_moved": 1e7,
                                "scratch_bytes": kv_heads * 3e5, "score_matrix_bytes": 4.0 * 512 * 512,
                                "rss_peak_bytes": 1e8}
                    extra += support.benchmark_entries(
                        f"{kernel}/q:512/kv:512/d:128/heads:8/kv_heads:{kv_heads}/threads:{threads}/causal:0",
                        [ms, ms, ms], counters=counters)
        data["benchmarks"] += extra
        cls.run_dir = support.output_root() / "decode-gqa-run"
        support.write_results(cls.run_dir, data["benchmarks"], data["context"])
        with redirect_stdout(io.StringIO()):
            cls.status = report.main([str(cls.run_dir)])
        cls.md = (cls.run_dir / "report.md").read_text(encoding="utf-8")
        cls.plain = (support.fixture_report() / "report.md").read_text(encoding="utf-8")

    def test_section(self):
        self.assertEqual(self.status, 0)
        section = self.md.split("## Decoding and grouped-query attention")[1].split("\n## ")[0]
        self.assertIn("q = 1, kv = 8192", section)
        self.assertIn("n = 512, 8 heads over 2 kv heads", section)
        self.assertIn("8 query heads over 2 kv heads run 1.33x as fast as over 8, with 4.00x less scratch", section)
        self.assertIn("GB/s moved", section)

    def test_matrix_text_unchanged(self):
        for title in ("Time: the n² of the score matrix", "Memory: n² scores against packed K and V", "Roofline"):
            ours = self.md.split(f"## {title}")[1].split("\n## ")[0]
            plain = self.plain.split(f"## {title}")[1].split("\n## ")[0]
            self.assertEqual(ours, plain, title)


class CommandLine(unittest.TestCase):
    def test_missing_run_is_an_error(self):
        stderr = io.StringIO()
        with redirect_stderr(stderr):
            status = report.main([str(Path(support.output_root()) / "no-such-run")])
        self.assertEqual(status, 2)
        self.assertIn("no results.json", stderr.getvalue())

    def test_minimal_runs_still_build(self):
        data = json.loads(support.FIXTURE.read_text())
        one_point = [b for b in data["benchmarks"] if b["run_name"].startswith(
            self._first_measured(data)) or b.get("error_occurred")]
        decode_only = support.benchmark_entries(
            "tiled/simd/avx2/q:1/kv:8192/d:128/threads:1/causal:0", [0.5, 0.5, 0.5],
            counters={"flops_per_call": 4.0 * 8192 * 128, "bytes_moved": 8.4e6, "scratch_bytes": 1e6})
        for name, benchmarks, context in (("one-point", one_point, data["context"]),
                                          ("no-context", data["benchmarks"], {}),
                                          ("decode-only", decode_only, {"num_cpus": 2})):
            folder = support.output_root() / name
            support.write_results(folder, benchmarks, context)
            with redirect_stdout(io.StringIO()):
                self.assertEqual(report.main([str(folder)]), 0, name)
            self.assertTrue((folder / "report.html").is_file(), name)

    @staticmethod
    def _first_measured(data) -> str:
        return next(b["run_name"] for b in data["benchmarks"] if b.get("run_type") == "aggregate")

    def test_run_with_nothing_measured(self):
        folder = support.output_root() / "all-skipped"
        support.write_results(folder, support.skipped_entries("naive/scalar/n:128/d:64/threads:1/causal:0", "budget"))
        stderr = io.StringIO()
        with redirect_stderr(stderr):
            self.assertEqual(report.main([str(folder)]), 2)
        self.assertIn("no measured point", stderr.getvalue())


if __name__ == "__main__":
    unittest.main()
