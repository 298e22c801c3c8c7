"""The ring window in the report: load/ring.py on a real quick run's ring_window.json (bench/ring_window.py),
analysis/ring.py's medians, goals and network model against direct computations, and the section "Beyond one
machine: ring attention over MPI" with its figure in a report built with the fixture next to the results (and
none without it)."""
from __future__ import annotations

import io
import json
import shutil
import statistics
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import support
from attnbench_report import cli as report
from attnbench_report.analysis import ring as ar
from attnbench_report.document import Document
from attnbench_report.load import ring as lr
from attnbench_report.narrative import ring as narrative_ring

FIXTURE = support.ROOT / "tests" / "fixtures" / "quick_ring_window.json"
RAW = json.loads(FIXTURE.read_text(encoding="utf-8"))


def point(config: str, n: int, causal: bool, seconds: list, rank_compute=(1.0, 1.0), step=(1.0, 0.0)) -> dict:
    return {"config": config, "n": n, "causal": causal, "kernel": "tiled/simd", "repetitions": [
        {"seconds": s, "flops": 4.0 * 128 * n * n, "compute": [step[0]], "wait": [step[1]],
         "rank_compute": list(rank_compute)} for s in seconds]}


class Loader(unittest.TestCase):
    def test_medians_and_ratios_from_the_raw_repetitions(self):
        window = lr.load(FIXTURE)
        keys = sorted({(p["n"], p["causal"]) for p in RAW["points"]})
        self.assertEqual([(r.n, r.causal) for r in window.rows], keys)
        for r in window.rows:
            runs = {c: [x["seconds"] for p in RAW["points"] if (p["n"], p["causal"]) == (r.n, r.causal)
                        and p["config"] == c for x in p["repetitions"]] for c in ar.CONFIGS}
            for c in ar.CONFIGS:
                self.assertAlmostEqual(r.median_seconds[c], statistics.median(runs[c]))
                self.assertAlmostEqual(r.best_seconds[c], min(runs[c]))
            self.assertAlmostEqual(r.speedup_two_ranks, r.median_seconds["one rank"] / r.median_seconds["two ranks"])
            self.assertGreaterEqual(r.worst_step_over_compute, 1.0)
            self.assertGreaterEqual(r.busiest_over_idlest, 1.0)
        self.assertEqual(window.d, RAW["d"])

    def test_a_missing_configuration_or_field_is_an_error_naming_it(self):
        folder = Path(tempfile.mkdtemp(dir=support.output_root()))
        data = json.loads(json.dumps(RAW))
        data["points"] = [p for p in data["points"] if p["config"] != "two threads"]
        (folder / lr.FILE_NAME).write_text(json.dumps(data), encoding="utf-8")
        with self.assertRaisesRegex(ValueError, "no repetition of \\['two threads'\\]"):
            lr.load(folder / lr.FILE_NAME)
        data = json.loads(json.dumps(RAW))
        del data["d"]
        (folder / lr.FILE_NAME).write_text(json.dumps(data), encoding="utf-8")
        with self.assertRaisesRegex(ValueError, "not a ring window"):
            lr.load(folder / lr.FILE_NAME)
        self.assertIsNone(lr.load_next_to(Path(tempfile.mkdtemp(dir=support.output_root())) / "results.json"))


class Analysis(unittest.TestCase):
    def test_goals_apply_from_their_length(self):
        pts = [point("one rank", 16384, False, [2.0]), point("two ranks", 16384, False, [1.0], (1.2, 1.0), (1.0, 0.2)),
               point("two threads", 16384, False, [1.05]), point("one rank", 4096, True, [1.0]),
               point("two ranks", 4096, True, [0.9]), point("two threads", 4096, True, [0.5])]
        short, long = ar.summarise(pts)
        self.assertEqual(short.meets(), {"speedup": None, "vs_threads": None, "step": None, "balance": None})
        self.assertEqual(long.meets(), {"speedup": True, "vs_threads": True, "step": False, "balance": None})
        self.assertAlmostEqual(long.worst_step_over_compute, 1.2)
        self.assertAlmostEqual(long.busiest_over_idlest, 1.2)
        items = narrative_ring._goal_items([short, long])
        self.assertTrue(any("**met** at every point" in i and "1.8" in i for i in items), items)
        self.assertTrue(any("each step within 10 %" in i and "**not met**" in i for i in items), items)
        why = narrative_ring._why_items([long])
        self.assertTrue(any("different speeds" in i for i in why), why)

    def test_model_scales_and_crosses_where_it_says(self):
        flops, d, cores = 1e11, 128, 2
        a, b = ar.model(flops, d, cores, nodes=[8, 16])[:2]
        self.assertAlmostEqual(a.step_compute / b.step_compute, 4.0)  # compute falls as 1/P²
        for network, (bandwidth, latency) in ar.NETWORKS.items():
            rows = ar.crossover_rows(flops, cores, network)
            compute = 4 * d * rows * rows / 2 / (flops * cores)
            self.assertAlmostEqual(compute, 2 * rows * d * 4 / bandwidth)
            p = ar.model(flops, d, cores, nodes=[int(ar.MODEL_TOKENS / rows) * 2])
            self.assertFalse(next(x for x in p if x.network == network).hidden)


class Section(unittest.TestCase):
    def test_section_and_figure_in_the_report(self):
        folder = Path(tempfile.mkdtemp(prefix="attnbench-ring-", dir=support.output_root()))
        shutil.copy(support.FIXTURE, folder / "results.json")
        shutil.copy(FIXTURE, folder / lr.FILE_NAME)
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            report.main([str(folder)])
        text = (folder / "report.md").read_text(encoding="utf-8")
        self.assertIn("## " + narrative_ring.TITLE, text)
        self.assertIn(narrative_ring.FIGURE + ".png", text)
        self.assertTrue((folder / (narrative_ring.FIGURE + ".svg")).is_file())
        self.assertIn("**The network model.**", text)
        self.assertIn("Ring attention over MPI: two ranks of one thread run", text)  # the summary's item

    def test_no_section_without_the_window(self):
        doc = Document(title="t", subtitle="")
        narrative_ring.section(doc, None, {})
        self.assertEqual(doc.sections, [])
        self.assertEqual(narrative_ring.summary_item(None), "")


if __name__ == "__main__":
    unittest.main()
