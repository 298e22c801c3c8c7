"""Verdicts across runs (verdicts.py, the comparison report's section "Verdicts"): two hand-made runs
that agree everywhere but where they were made to differ, outside a run's noise or inside it; the
scaling window's and the contenders' verdicts from the real quick fixtures; the section's counts."""
from __future__ import annotations

import contextlib
import copy
import io
import json
import shutil
import tempfile
import unittest
from pathlib import Path

import support
from attnbench_report.load import results as loader
from attnbench_report import cli as report
from attnbench_report import scaling
from attnbench_report import verdicts

N = (512, 1024, 2048, 4096)
D = 64


def point(kernel: str, n: int, ms: float, cv: float) -> list:
    """One matrix point: three repetitions whose time has the given CV, GFLOP/s from 4 n^2 d."""
    times = [ms * (1 - cv), ms, ms * (1 + cv)]
    gflops = [4.0 * n * n * D / (t * 1e-3) / 1e9 for t in times]
    return support.benchmark_entries(f"{kernel}/n:{n}/d:{D}/threads:1/causal:0", times, gflops=gflops)


def run(folder: Path, naive_over_tiled: dict, tiled_gflops: dict | None = None,
        cv: dict | None = None) -> Path:
    """A run of tiled/simd/avx2 and naive/simd/avx2 at N: naive's time over tiled's per n (above 1,
    tiled wins), tiled's GFLOP/s per n (its time follows), each point's CV (1% unless given)."""
    entries = []
    for n in N:
        gflops = (tiled_gflops or {}).get(n, 80.0)
        tiled_ms = 4.0 * n * n * D / (gflops * 1e9) * 1e3
        spread = (cv or {}).get(n, 0.01)
        entries += point("tiled/simd/avx2", n, tiled_ms, spread)
        entries += point("naive/simd/avx2", n, tiled_ms * naive_over_tiled.get(n, 1.2), spread)
    return support.write_results(folder, entries)


class Verdicts(unittest.TestCase):
    def setUp(self):
        self.root = Path(tempfile.mkdtemp(prefix="attnbench-verdicts-", dir=support.output_root()))

    def tearDown(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def agreements(self, a: Path, b: Path) -> dict:
        table = loader.load([a, b])
        per_run = [verdicts.of_run(table, r) for r in table.runs]
        return {agreement.verdicts[0].key: agreement for agreement in verdicts.agreements(per_run)}

    def test_identical_runs_agree_on_every_verdict(self):
        a = run(self.root / "a", {})
        b = run(self.root / "b", {})
        found = self.agreements(a, b)
        topics = {key[0] for key in found}
        self.assertEqual(topics, {verdicts.WINNER, verdicts.CROSSOVER, verdicts.FLAT})
        self.assertEqual(len([k for k in found if k[0] == verdicts.WINNER]), len(N))
        self.assertTrue(all(agreement.agree for agreement in found.values()))

    def test_a_winner_swapped_outside_noise_differs_and_inside_is_excused(self):
        a = run(self.root / "a", {})
        # n = 1024: naive 20% faster, CVs 1%: a contradiction. n = 512: naive 0.5% faster, CV 2%: noise.
        b = run(self.root / "b", {1024: 1 / 1.2, 512: 1 / 1.005}, cv={512: 0.02})
        found = self.agreements(a, b)
        swapped = found[(verdicts.WINNER, "n = 1,024, d = 64, 1 thread")]
        self.assertEqual([v.outcome for v in swapped.verdicts], ["tiled/simd/avx2", "naive/simd/avx2"])
        self.assertFalse(swapped.agree or swapped.excused)
        noisy = found[(verdicts.WINNER, "n = 512, d = 64, 1 thread")]
        self.assertFalse(noisy.agree)
        self.assertTrue(noisy.excused)
        self.assertEqual([v.noise for v in noisy.verdicts], [False, True])
        kept = found[(verdicts.WINNER, "n = 2,048, d = 64, 1 thread")]
        self.assertTrue(kept.agree)

    def test_the_crossover_is_read_by_its_bracket(self):
        a = run(self.root / "a", {})
        b = run(self.root / "b", {512: 0.8, 1024: 0.8})
        found = self.agreements(a, b)
        (key,) = [k for k in found if k[0] == verdicts.CROSSOVER]
        self.assertIn("tiled/simd/avx2 over naive/simd/avx2", key[1])
        self.assertEqual([v.outcome for v in found[key].verdicts], ["always", "between n = 1,024 and 2,048"])
        self.assertFalse(found[key].excused)

    def test_flatness_per_length(self):
        a = run(self.root / "a", {}, tiled_gflops={4096: 75.0})  # 0.94x: within 10%
        b = run(self.root / "b", {}, tiled_gflops={4096: 70.0})  # 0.875x: below
        found = self.agreements(a, b)
        flat = found[(verdicts.FLAT, "tiled/simd/avx2, d = 64, 1 thread, n = 4,096")]
        self.assertEqual([v.outcome for v in flat.verdicts], ["within 10%", "more than 10% below"])
        self.assertFalse(flat.excused)

    def test_scaling_window_verdicts_follow_the_target_and_its_noise(self):
        data = json.loads((support.ROOT / "tests" / "fixtures" / "quick_scaling.json").read_text(encoding="utf-8"))
        low = copy.deepcopy(data)
        for b in low["benchmarks"]:
            if b["aggregate_name"] == "median":
                b["speedup"] = scaling.TARGET - 0.2
            if b["aggregate_name"] == "cv":
                b["speedup"] = 0.01
        path = self.root / "scaling.json"
        path.write_text(json.dumps(low), encoding="utf-8")
        found = verdicts.thread_scaling(scaling.load_file(path))
        self.assertEqual(len(found), 2)
        self.assertTrue(all(v.outcome == "under 1.80x" and not v.noise for v in found))
        self.assertEqual(verdicts.thread_scaling(None), [])

    def test_contenders_leads_from_the_fixture_windows(self):
        folder = self.root / "run"
        folder.mkdir()
        for name in ("quick_results.json", "quick_contenders.json", "quick_python_contenders.json"):
            shutil.copy(support.ROOT / "tests" / "fixtures" / name,
                        folder / name.replace("quick_", ""))
        table = loader.load([folder])
        windows, _ = verdicts.load_windows(table.runs[0])
        leads = verdicts.contender_leads(windows)
        self.assertTrue(leads)
        for v in leads:
            self.assertEqual(v.topic, verdicts.LEAD)
            self.assertTrue(v.outcome.endswith(" ahead"))

    def test_comparison_report_counts_them(self):
        a = run(self.root / "a", {})
        b = run(self.root / "b", {1024: 1 / 1.2, 512: 1 / 1.005}, cv={512: 0.02})
        out = self.root / "cmp"
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(report.main([str(a), str(b), "--out", str(out)]), 0)
        md = (out / "report.md").read_text(encoding="utf-8")
        self.assertIn("## Verdicts", md)
        table = loader.load([a, b])
        shared = verdicts.agreements([verdicts.of_run(table, r) for r in table.runs])
        differ = sum(not x.agree and not x.excused for x in shared)
        self.assertEqual(differ, 2)  # the winner at 1024 and the crossover (at 512 naive wins within noise)
        self.assertIn(f"**{differ} differ outside noise**", md)
        self.assertIn("Differ within noise:", md)


if __name__ == "__main__":
    unittest.main()
