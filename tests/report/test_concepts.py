"""The Concepts section: demos.json (`attnbench demo all --json`, tests/fixtures/demos.json is one
real file) read by demos.py, drawn by figures/concepts.py and written up by narrative/concepts.py, only when
the file lies next to the run's results.json (the derived numbers: test_analysis_demos.py)."""
from __future__ import annotations

import io
import json
import math
import re
import shutil
import unittest
from contextlib import redirect_stderr, redirect_stdout

import support
from attnbench_report.analysis import demos as analysis_demos
from attnbench_report.load import demos
from attnbench_report.figures import concepts as fig_concepts
from attnbench_report import formatting as fmt
from attnbench_report import cli as report

DEMOS_FIXTURE = support.ROOT / "tests" / "fixtures" / "demos.json"
CONCEPT_STEMS = tuple(f"concepts_{name}" for name in demos.NAMES)


def _decode_only_run(folder):
    """A run with no n x d matrix (one decoding point): the benchmark figures are not drawn, so the
    report builds in a moment."""
    benchmarks = support.benchmark_entries(
        "tiled/simd/avx2/q:1/kv:8192/d:128/threads:1/causal:0", [0.5, 0.5, 0.5],
        counters={"flops_per_call": 4.0 * 8192 * 128, "bytes_moved": 8.4e6, "scratch_bytes": 1e6})
    if folder.exists():
        shutil.rmtree(folder)
    return support.write_results(folder, benchmarks, {"num_cpus": 2})


def _report(folder) -> tuple:
    stdout, stderr = io.StringIO(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        status = report.main([str(folder)])
    return status, stderr.getvalue()


def _section(md: str, title: str) -> str:
    return md.split(f"\n## {title}\n")[1].split("\n## ")[0]


class Loader(unittest.TestCase):
    def setUp(self):
        self.data = demos.load(DEMOS_FIXTURE)

    def test_every_demo_in_order_with_non_finite_numbers_as_floats(self):
        self.assertEqual(tuple(self.data), demos.NAMES)
        softmax = self.data["softmax"]
        self.assertTrue(all(math.isinf(x) and x > 0 for x in softmax["naive_exp"]))
        self.assertTrue(math.isinf(softmax["naive_sum"]))
        self.assertTrue(all(math.isnan(x) for x in softmax["naive_weights"]))
        self.assertTrue(analysis_demos.finite(softmax["stable_weights"]))
        self.assertEqual(self.data["alignment"]["source"], ["le", "chat", "noir"])  # words stay words

    def test_a_subset_of_demos_loads(self):
        folder = support.output_root() / "demos-subset"
        folder.mkdir(parents=True, exist_ok=True)
        raw = json.loads(DEMOS_FIXTURE.read_text())
        path = folder / "demos.json"
        path.write_text(json.dumps({"demos": {"order": raw["demos"]["order"], "unknown": {}}}))
        self.assertEqual(list(demos.load(path)), ["order"])

    def test_bad_files_name_what_is_wrong(self):
        folder = support.output_root() / "demos-bad"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "demos.json"
        raw = json.loads(DEMOS_FIXTURE.read_text())
        del raw["demos"]["bottleneck"]["rows"][1]["attention_error"]
        for content, message in ((json.dumps({"benchmarks": []}), "no 'demos' object"),
                                 (json.dumps(raw), "demo bottleneck: missing rows[1].attention_error"),
                                 ("{", f"{path}: not valid JSON")):
            path.write_text(content)
            with self.assertRaisesRegex(ValueError, re.escape(message)):
                demos.load(path)
        raw = json.loads(DEMOS_FIXTURE.read_text())
        del raw["demos"]["quadratic"]["time_exponent"]
        path.write_text(json.dumps(raw))
        with self.assertRaisesRegex(ValueError, "demo quadratic: missing time_exponent"):
            demos.load(path)

    def test_only_the_file_next_to_the_results(self):
        folder = support.output_root() / "demos-none"
        _decode_only_run(folder)
        self.assertIsNone(demos.load_next_to(folder / "results.json"))
        self.assertEqual(demos.load_next_to(support.FIXTURE), self.data)  # tests/fixtures holds both


class WithDemos(unittest.TestCase):
    """The fixture run with the fixture demos.json next to it: the whole report, Concepts included."""

    @classmethod
    def setUpClass(cls):
        cls.run_dir = support.output_root() / "concepts-run"
        if cls.run_dir.exists():
            shutil.rmtree(cls.run_dir)
        cls.run_dir.mkdir(parents=True)
        shutil.copy(support.FIXTURE, cls.run_dir / "results.json")
        shutil.copy(DEMOS_FIXTURE, cls.run_dir / "demos.json")
        cls.status, cls.stderr = _report(cls.run_dir)
        cls.md = (cls.run_dir / "report.md").read_text(encoding="utf-8")
        cls.html = (cls.run_dir / "report.html").read_text(encoding="utf-8")
        cls.section = _section(cls.md, "Concepts")
        cls.data = demos.load(DEMOS_FIXTURE)

    def test_builds_quietly(self):
        self.assertEqual(self.status, 0)
        self.assertEqual(self.stderr, "")

    def test_concept_figures_written_next_to_the_json(self):
        for stem in CONCEPT_STEMS:
            png, svg = self.run_dir / f"{stem}.png", self.run_dir / f"{stem}.svg"
            self.assertEqual(png.read_bytes()[:8], b"\x89PNG\r\n\x1a\n", stem)
            self.assertGreater(png.stat().st_size, 10_000, stem)
            self.assertIn("<svg", svg.read_text(encoding="utf-8")[:2000], stem)

    def test_section_placed_after_the_machine_with_its_figures(self):
        self.assertLess(self.md.index("\n## Machine and build\n"), self.md.index("\n## Concepts\n"))
        self.assertLess(self.md.index("\n## Concepts\n"), self.md.index("\n## Time: the n² of the score matrix\n"))
        links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", self.section)
        self.assertEqual(links, [f"{stem}.png" for stem in CONCEPT_STEMS])
        for number in range(1, len(CONCEPT_STEMS) + 1):
            self.assertIn(f"*Figure C{number}. ", self.section)
        self.assertIn("those of the Concepts section from `demos.json`", self.md.split("\n## ")[0])

    def test_text_numbers_are_the_jsons(self):
        s, d = self.section, self.data
        softmax = d["softmax"]
        self.assertIn("(NaN, NaN, NaN)", s)
        self.assertIn("(" + ", ".join(f"{w:.3f}" for w in softmax["stable_weights"]) + ")", s)
        self.assertIn("(" + ", ".join(f"{w:.2f}" for w in softmax["worked_weights"]) + ")", s)
        self.assertIn(f"= {fmt.ratio(softmax['score_ratio'])} becomes", s)
        self.assertIn(f"= {fmt.ratio(softmax['weight_ratio'])}, because", s)
        for row in d["bottleneck"]["rows"]:
            self.assertIn(f"{fmt.sig(row['mean_pooled_error'])} at n = {row['n']}", s)
        alignment = d["alignment"]
        for i, j in enumerate(alignment["aligned"]):
            self.assertIn(f"{alignment['target'][i]} → {alignment['source'][j]} ({alignment['weights'][i][j]:.2f})", s)
        q = d["quadratic"]
        (end,) = analysis_demos.quadratic_rows(q)[1]
        self.assertIn(f"grows as n^{q['time_exponent']:.2f}", s)
        self.assertIn(f"score matrix is {fmt.bytes_(end['score_matrix_bytes'])}", s)
        self.assertIn("65.5 GB", s)
        self.assertIn(f"~{fmt.sig(end['naive_ms'] / 1000)} s", s)
        self.assertIn(f"~{fmt.bytes_(end['tiled_scratch_bytes'])}", s)
        self.assertIn(f"differ by up to {d['order']['with_positions']['max_difference']:.2g}", s)
        self.assertIn(f"weight 1/n = {fmt.sig(1 / d['uniform']['n'])}", s)
        copy = d["copy"]
        self.assertIn("**The challenge: copying.**", s)
        self.assertIn(f"1.000 at n = {', '.join(str(row['n']) for row in copy['rows'][:-1])} and "
                      f"{copy['rows'][-1]['n']}: accurate (at least 0.95) at every length", s)
        for row in copy["rows"]:
            self.assertIn(f"{row['bottleneck_accuracy']:.3f} at n = {row['n']}", s)
        for row in copy["rows"][1:]:  # the sequence overflows the 64-wide vector from n = 10 on
            floor = 1 - copy["bottleneck_width"] / (copy["dim"] * row["n"])
            self.assertIn(f"{row['bottleneck_mse']:.3f} against {floor:.3f} at n = {row['n']}", s)
        self.assertIn("which falls at every longer n", s)
        self.assertIn(f"attention leads it by {copy['rows'][-1]['attention_accuracy'] - copy['rows'][-1]['bottleneck_accuracy']:.3f}", s)

    def test_html_inlines_every_figure(self):
        stems = support.FIGURE_STEMS + CONCEPT_STEMS
        self.assertEqual(self.html.count("<figure "), len(stems))
        self.assertEqual(len(re.findall(r"<svg[\s>]", self.html)), len(stems))
        for stem in CONCEPT_STEMS:
            self.assertIn(f'<figure id="{stem}"', self.html)
        self.assertIn('<section id="concepts">', self.html)
        self.assertNotRegex(self.html, r"<(img|link|script)[^>]+(src|href)=")

    def test_other_sections_unchanged(self):
        plain = (support.fixture_report() / "report.md").read_text(encoding="utf-8")
        self.assertNotIn("\n## Concepts\n", plain)
        self.assertFalse(any((support.fixture_report() / f"{stem}.png").exists() for stem in CONCEPT_STEMS))
        ours = self.md.replace("(concepts-run)", "(fixture-run)").split("\n## ")[2:]  # after the title and contents
        theirs = plain.split("\n## ")[2:]
        self.assertEqual([s for s in ours if not s.startswith("Concepts\n")], theirs)

    @unittest.skipIf(__import__("test_browser").CHROMIUM is None, "chromium is not installed")
    def test_page_opens_in_chromium_without_errors(self):
        import test_browser

        result = test_browser.run_chromium((self.run_dir / "report.html").resolve().as_uri(), "--dump-dom")
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        self.assertEqual(test_browser.page_errors(result.stderr), [])
        self.assertIn(f'data-figures="{len(support.FIGURE_STEMS) + len(CONCEPT_STEMS)}"', result.stdout)


class PartialOrBadDemos(unittest.TestCase):
    def test_only_the_demos_that_ran(self):
        folder = support.output_root() / "concepts-partial"
        _decode_only_run(folder)
        raw = json.loads(DEMOS_FIXTURE.read_text())
        subset = {name: raw["demos"][name] for name in ("alignment", "uniform")}
        (folder / "demos.json").write_text(json.dumps({"demos": subset}))
        status, stderr = _report(folder)
        self.assertEqual((status, stderr), (0, ""))
        section = _section((folder / "report.md").read_text(encoding="utf-8"), "Concepts")
        self.assertEqual(re.findall(r"!\[[^\]]*\]\(([^)]+)\)", section), ["concepts_alignment.png", "concepts_uniform.png"])
        self.assertIn("*Figure C2. ", section)
        self.assertNotIn("**Softmax.**", section)
        self.assertFalse((folder / "concepts_softmax.png").exists())

    def test_unreadable_demos_leave_the_section_out(self):
        folder = support.output_root() / "concepts-bad"
        _decode_only_run(folder)
        (folder / "demos.json").write_text('{"demos": {"softmax": {"kernel": "x"}}}')
        status, stderr = _report(folder)
        self.assertEqual(status, 0)
        self.assertIn("demo softmax: missing large_logits", stderr)
        self.assertIn("leaves out its Concepts section", stderr)
        self.assertNotIn("## Concepts", (folder / "report.md").read_text(encoding="utf-8"))

    def test_copy_phrasing_follows_the_numbers(self):
        """The other side of each of the copy paragraph's verdicts, which the fixture does not show."""
        from attnbench_report.narrative import concepts as narrative_concepts

        copy = json.loads(DEMOS_FIXTURE.read_text())["demos"]["copy"]
        copy["rows"][3]["attention_accuracy"] = 0.5   # attention fails at n = 50
        copy["rows"][4]["bottleneck_accuracy"] = 0.3  # the bottleneck rises from n = 50 to 100
        copy["rows"][4]["bottleneck_mse"] = 0.93      # and sits near its floor there (0.92)
        text, _ = narrative_concepts._concept_copy(copy)
        self.assertIn("accurate (at least 0.95) only at n = 5, 10, 20 and 100", text)
        self.assertIn("does not fall everywhere (it rises from n = 50 to 100)", text)
        self.assertIn("At n = 10, 20 and 100 it sits at that floor", text)
        self.assertIn("At n = 50 it stays above it, no better than answering 0", text)
        self.assertNotIn("at every length", text)
        copy["bottleneck_width"] = 1000  # every sequence fits: no floor to compare with
        text, _ = narrative_concepts._concept_copy(copy)
        self.assertIn("it copies: accuracy", text)
        self.assertNotIn("cannot go below", text)

    def test_figures_from_the_module_alone(self):
        folder = support.output_root() / "concepts-figures"
        written = fig_concepts.draw(demos.load(DEMOS_FIXTURE), folder)
        self.assertEqual(list(written), list(demos.NAMES))
        for name, figure in written.items():
            self.assertEqual(figure.stem, f"concepts_{name}")
            self.assertTrue(figure.png.is_file() and figure.svg.is_file(), name)


if __name__ == "__main__":
    unittest.main()
