"""The long-context window in the report: load/context.py on a real quick run's context.json (names,
fastest repetitions, failed points, a name it cannot read), analysis/context.py's pair counts and fits
against a direct count, and the section "How long context is bought" with its figure in a report built
with the fixture next to the results (and none without it)."""
from __future__ import annotations

import io
import json
import math
import shutil
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import support
from attnbench_report import cli as report
from attnbench_report.analysis import context as ac
from attnbench_report.document import Document
from attnbench_report.load import context as lc
from attnbench_report.narrative import context as narrative_context

FIXTURE = support.ROOT / "tests" / "fixtures" / "quick_context.json"
RAW = json.loads(FIXTURE.read_text(encoding="utf-8"))


class Loader(unittest.TestCase):
    def test_every_point_with_its_columns_median_and_fastest(self):
        points = lc.load(FIXTURE)
        names = {b["run_name"] for b in RAW["benchmarks"]}
        self.assertEqual(len(points), len(names))
        for p in points:
            self.assertFalse(p.skipped, p.name)
            entries = [b for b in RAW["benchmarks"] if b["run_name"] == p.name]
            median = next(b for b in entries if b["aggregate_name"] == "median")
            fastest = next(b for b in entries if b["aggregate_name"] == "min")
            self.assertAlmostEqual(p.value("time_us"), median["real_time"] * 1e3)  # ms in the JSON
            self.assertAlmostEqual(p.fastest_us, fastest["real_time"] * 1e3)
            self.assertEqual(p.window, 0 if "/w:full/" in p.name else int(median["window"]))
            self.assertAlmostEqual(p.value("pairs"), ac.window_pairs(p.n, p.window) if p.window
                                   else ac.causal_pairs(p.n))

    def test_names(self):
        self.assertEqual(lc.parse_name("context/tiled/simd/avx2/n:8192/d:128/w:full/threads:2/iterations:1/"
                                       "repeats:3/manual_time_median"),
                         {"kernel": "tiled/simd/avx2", "n": 8192, "d": 128, "window": 0, "softcap": 0.0,
                          "threads": 2, "tensor": ""})
        self.assertEqual(lc.parse_name("context/tiled/simd/n:16/d:8/w:4/mask:bool/threads:1")["tensor"], "bool")
        self.assertEqual(lc.parse_name("context/tiled/simd/n:16/d:8/w:full/cap:50/threads:1")["softcap"], 50.0)
        with self.assertRaisesRegex(ValueError, "missing w"):
            lc.parse_name("context/tiled/simd/n:8/d:4/threads:1")

    def test_a_failed_point_keeps_its_reason(self):
        data = json.loads(json.dumps(RAW))
        name = data["benchmarks"][0]["run_name"]
        for b in data["benchmarks"]:
            if b["run_name"] == name:
                b["error_occurred"] = True
                b["error_message"] = "failed: oracle check: row 3"
        folder = Path(tempfile.mkdtemp(dir=support.output_root()))
        (folder / lc.FILE_NAME).write_text(json.dumps(data), encoding="utf-8")
        failed = next(p for p in lc.load(folder / lc.FILE_NAME) if p.name == name)
        self.assertEqual((failed.status, failed.reason), ("failed", "oracle check: row 3"))


class Analysis(unittest.TestCase):
    def test_pairs_count_what_the_mask_leaves(self):
        for n, w in ((1, 1), (5, 3), (9, 9), (100, 7), (64, 100)):
            direct = sum(min(w, i + 1) for i in range(n))
            self.assertEqual(ac.window_pairs(n, w), direct)
            self.assertEqual(ac.causal_pairs(n), sum(i + 1 for i in range(n)))

    def test_curves_fits_and_half_time(self):
        curves = ac.curves(lc.load(FIXTURE))
        self.assertEqual([c.threads for c in curves], sorted({p.threads for p in lc.load(FIXTURE)}))
        for c in curves:
            self.assertGreater(c.window_s_per_pair, 0)
            self.assertGreater(c.full_s_per_pair, 0)
            half = c.half_time_n()
            # at half_time_n the full causal call costs twice the window's, one step before it less
            self.assertGreaterEqual(ac.causal_pairs(half) * c.full_s_per_pair,
                                    2 * ac.window_pairs(half, c.window) * c.window_s_per_pair)
            self.assertTrue(math.isfinite(c.pair_spread()) or len(c.flat_ns()) < 2)
            # the window as a mask tensor: apart from the window's curve, at a length the window has
            self.assertTrue(c.tensors and set(c.tensors) <= set(c.windowed), str(c.tensors))
            self.assertTrue(all(not p.tensor for p in c.windowed.values()))


class Section(unittest.TestCase):
    def test_section_and_figure_in_the_report(self):
        folder = Path(tempfile.mkdtemp(prefix="attnbench-context-", dir=support.output_root()))
        shutil.copy(support.FIXTURE, folder / "results.json")
        shutil.copy(FIXTURE, folder / lc.FILE_NAME)
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            report.main([str(folder)])
        text = (folder / "report.md").read_text(encoding="utf-8")
        self.assertIn("## " + narrative_context.TITLE, text)
        self.assertIn(narrative_context.FIGURE + ".png", text)
        self.assertTrue((folder / (narrative_context.FIGURE + ".svg")).is_file())
        self.assertIn("per visible pair the time varies by", text)
        self.assertIn("the same window given as a boolean mask tensor", text)

    def test_no_section_without_the_window(self):
        doc = Document(title="t", subtitle="")
        narrative_context.section(doc, None, {}, 2)
        self.assertEqual(doc.sections, [])
        self.assertEqual(narrative_context.summary_item(None), "")


if __name__ == "__main__":
    unittest.main()
