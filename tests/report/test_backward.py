"""The backward pass in the report: the loader's `pass` column, analysis_backward on hand-made points
of known ratios and slopes, the section built from the fixture plus backward points (the forward's
sections unchanged by them), a run without backward points (section omitted, the summary says so),
and the comparison of runs with backward points."""
from __future__ import annotations

import io
import json
import math
import re
import shutil
import unittest
from contextlib import redirect_stdout

import support
from attnbench_report import analysis
from attnbench_report.analysis import backward as ab
from attnbench_report import formatting as fmt
from attnbench_report.load import results as loader
from attnbench_report import cli as report

MACHINE = {"num_cpus": 2, "threads_all": "2", "fma_peak_gflops_threads_1": "100", "fma_peak_gflops_threads_2": "200",
           "dispatch tiled/simd": "tiled/simd/avx2", "backward_check_shape": "97x203"}


def point(kernel, n, d, ms, threads=1, pass_="forward", scratch=1e6, pct_peak=None):
    """A square one-head point (name as attnbench_bench writes it) with its FLOPs and counters."""
    factor = {"forward": 1.0, "backward": 2.5, "forward+backward": 3.5}[pass_]
    flops = factor * 4.0 * n * n * d
    gflops = flops / (ms * 1e6)
    counters = {"GFLOP/s": gflops, "flops_per_call": flops, "scratch_bytes": scratch, "bytes_moved": 1e6,
                "pct_peak": pct_peak if pct_peak is not None else 100 * gflops / (100 * threads)}
    suffix = "" if pass_ == "forward" else f"/pass:{pass_}"
    return (f"{kernel}/n:{n}/d:{d}/threads:{threads}/causal:0{suffix}", ms, counters)


class PassColumn(unittest.TestCase):
    def test_names_with_and_without_pass(self):
        forward = loader.parse_name("tiled/simd/avx2/n:1024/d:64/threads:1/causal:0/repeats:3/real_time_median")
        self.assertEqual(forward["pass_"], "forward")
        c = loader.parse_name("tiled/simd/avx2/n:1024/d:64/threads:2/causal:0/pass:backward/iterations:1/repeats:3/"
                              "real_time_cv")
        self.assertEqual((c["kernel"], c["n"], c["d"], c["threads"], c["pass_"], c["aggregate"]),
                         ("tiled/simd/avx2", 1024, 64, 2, "backward", "cv"))
        self.assertTrue(c["one_call_per_repetition"])
        c = loader.parse_name("naive/scalar/n:512/d:128/threads:1/causal:0/pass:forward+backward/repeats:3/real_time")
        self.assertEqual((c["kernel"], c["family"], c["pass_"]), ("naive/scalar", "matrix", "forward+backward"))
        with self.assertRaisesRegex(ValueError, "pass:sideways"):
            loader.parse_name("naive/scalar/n:512/d:128/threads:1/causal:0/pass:sideways/repeats:3/real_time")

    def test_old_runs_load_as_forward_only(self):
        table = loader.load([support.FIXTURE])
        self.assertEqual(table.passes(), ["forward"])
        self.assertEqual(len(table.forward()), len(table))
        self.assertFalse(ab.measured(table))
        committed = support.ROOT / "reports" / "runs" / "2026-11-30-vm-full"
        if committed.is_dir():
            self.assertEqual(loader.load([committed]).passes(), ["forward"])

    def test_a_pass_is_part_of_the_point(self):
        table = support.load_points([point("tiled/scalar", 512, 64, 10.0), point("tiled/scalar", 512, 64, 25.0,
                                                                                 pass_="backward")], MACHINE)
        self.assertEqual(len(table), 2)
        self.assertEqual(len({r.point for r in table}), 2)
        self.assertEqual(table.forward().one().time_ms_median, 10.0)


class Analysis(unittest.TestCase):
    """Forward times c·n² (tiled) and c'·n^2.2 (naive); backward 3x (tiled) and 2x (naive) the forward, so
    that the naive backward is 2 · 4e-6 n^2.2 / (3 · 1e-5 n²) of the tiled one: 1 at n = 3.75^5 ≈ 742."""

    @classmethod
    def setUpClass(cls):
        points = []
        for n in (512, 1024, 2048, 4096):
            for d in (64, 128):
                for threads in (1, 2):
                    tiled = 1e-5 * n * n * d / 64 / threads ** 0.95
                    naive = 4e-6 * n ** 2.2 * d / 64 / threads ** 0.95
                    points += [point("tiled/simd/avx2", n, d, tiled, threads),
                               point("tiled/simd/avx2", n, d, 3 * tiled, threads, "backward", scratch=2e5 + 10 * n,
                                     pct_peak=50.0 if d == 128 else 40.0),
                               point("tiled/simd/avx2", n, d, 4.1 * tiled, threads, "forward+backward"),
                               point("naive/simd/avx2", n, d, naive, threads),
                               point("naive/simd/avx2", n, d, 2 * naive, threads, "backward", scratch=8.0 * n * n)]
        cls.table = support.load_points(points, MACHINE)

    def test_ratios_to_the_forward(self):
        ratios = ab.time_ratios(self.table)
        self.assertEqual(len(ratios), 2 * 4 * 2 * 2)
        for r in ratios:
            want = 3.0 if r.backward.strategy == "tiled" else 2.0
            self.assertAlmostEqual(r.ratio, want, places=9)
            self.assertAlmostEqual(r.rate_ratio, 2.5 / want, places=9)
            self.assertEqual((r.forward.n, r.forward.d, r.forward.threads, r.forward.pass_),
                             (r.backward.n, r.backward.d, r.backward.threads, "forward"))
            if r.backward.strategy == "tiled":
                self.assertAlmostEqual(r.step_over_sum, 4.1 / 4.0, places=9)
            else:
                self.assertIsNone(r.step)
                self.assertTrue(math.isnan(r.step_over_sum))
        spreads = {(s.kernel, s.threads): s for s in ab.ratio_spreads(ratios)}
        self.assertEqual(list(spreads)[0], ("tiled/simd/avx2", 1))
        self.assertAlmostEqual(spreads[("tiled/simd/avx2", 1)].median, 3.0)
        self.assertAlmostEqual(spreads[("tiled/simd/avx2", 1)].per_flop, 1.2)
        self.assertAlmostEqual(spreads[("naive/simd/avx2", 2)].per_flop, 0.8)
        self.assertEqual(spreads[("tiled/simd/avx2", 1)].verdict, "longer")  # 20% against CVs of 1%
        self.assertEqual(spreads[("naive/simd/avx2", 1)].verdict, "shorter")
        noisy = support.load_points([point("tiled/scalar", 512, 64, 10.0), point("tiled/scalar", 512, 64, 26.0,
                                                                                pass_="backward")], MACHINE, cv=0.1)
        (spread,) = ab.ratio_spreads(ab.time_ratios(noisy))
        self.assertAlmostEqual(spread.median, 2.6)
        self.assertEqual(spread.verdict, "within noise")  # 4% against CVs of 10%

    def test_exponents_of_the_backward(self):
        fits = analysis.time_fits(ab.backward(self.table), 1)
        self.assertAlmostEqual(fits[("tiled/simd/avx2", 64)].slope, 2.0, places=6)
        self.assertAlmostEqual(fits[("naive/simd/avx2", 128)].slope, 2.2, places=6)

    def test_naive_against_tiled(self):
        c = analysis.crossover(ab.backward(self.table).measured(), "tiled/simd/avx2", "naive/simd/avx2", 64, 1)
        self.assertEqual(c.verdict, "overtakes")
        self.assertAlmostEqual(c.n_cross, 3.75 ** 5, places=3)
        (pair, *_) = ab.scratch_pairs(self.table)
        self.assertEqual((pair.tiled.n, pair.naive.n), (4096, 4096))
        self.assertAlmostEqual(pair.p_and_ds_bytes, 8.0 * 4096 ** 2)
        self.assertAlmostEqual(pair.ratio, 8.0 * 4096 ** 2 / (2e5 + 10 * 4096))
        self.assertAlmostEqual(ab.scratch_growth(self.table, "naive/simd/avx2", 64).slope, 2.0, places=6)

    def test_targets(self):
        kernel, targets = ab.targets(self.table)
        self.assertEqual(kernel, "tiled/simd/avx2")
        peak = {(t.d, t.n): t for t in targets if t.what == "share of peak"}
        self.assertEqual(sorted(peak), [(64, 1024), (64, 4096), (128, 1024), (128, 4096)])
        self.assertFalse(peak[(64, 1024)].met)  # 40 against 45
        self.assertFalse(peak[(128, 4096)].met)  # 50 against 55
        speedups = [t for t in targets if t.what == "two threads over one"]
        self.assertEqual(len(speedups), 4)
        for t in speedups:
            self.assertAlmostEqual(t.measured, 2 ** 0.95)
            self.assertTrue(t.met)
        self.assertEqual(ab.targets(loader.load([support.FIXTURE])), (None, []))


class Section(unittest.TestCase):
    """The fixture (a real quick run from before the backward) plus backward and training-step points
    made here at its lengths, for four of its kernels: backward 2.8x the forward (tiled), 2.2x (naive)."""

    KERNELS = ("tiled/simd/avx512f", "naive/simd/avx512f", "tiled/scalar", "naive/scalar")

    @classmethod
    def setUpClass(cls):
        data = json.loads(support.FIXTURE.read_text())
        data["benchmarks"] = [b for b in data["benchmarks"] if "/pass:" not in b["run_name"]]
        table = loader.load([support.FIXTURE]).matrix().measured().where(causal=False)
        extra = []
        for r in table.where(kernel=list(cls.KERNELS), d=[64, 128], n=[128, 512, 2048]):
            ratio = 2.8 if r.strategy == "tiled" else 2.2
            for pass_, ms in (("backward", ratio * r.time_ms_median), ("forward+backward", (1 + ratio) * r.time_ms_median)):
                name, ms, counters = point(r.kernel, r.n, r.d, ms, r.threads, pass_,
                                           scratch=8.0 * r.n ** 2 if r.strategy == "naive" else 3e5)
                counters["pct_peak"] = 100 * counters["GFLOP/s"] / float(data["context"][f"fma_peak_gflops_threads_{r.threads}"])
                extra += support.benchmark_entries(name, [ms * 0.99, ms, ms * 1.01], counters=counters)
        extra += support.skipped_entries("naive/scalar/n:8192/d:128/threads:1/causal:0/pass:backward",
                                         "P and dS over the naive memory budget (half of RAM)")
        data["benchmarks"] += extra
        cls.run_dir = support.output_root() / "backward-run"
        if cls.run_dir.exists():
            shutil.rmtree(cls.run_dir)
        support.write_results(cls.run_dir, data["benchmarks"], dict(data["context"], backward_check_shape="97x203"))
        with redirect_stdout(io.StringIO()):
            cls.status = report.main([str(cls.run_dir)])
        cls.md = (cls.run_dir / "report.md").read_text(encoding="utf-8")
        cls.html = (cls.run_dir / "report.html").read_text(encoding="utf-8")
        cls.section = cls.md.split("## The backward pass")[1].split("\n## ")[0]
        cls.table = loader.load([cls.run_dir])
        cls.plain = (support.fixture_report() / "report.md").read_text(encoding="utf-8")

    def test_built_with_its_figures(self):
        self.assertEqual(self.status, 0)
        for stem in ("fig9_backward_gflops", "fig10_backward_over_forward"):
            self.assertEqual((self.run_dir / f"{stem}.png").read_bytes()[:8], b"\x89PNG\r\n\x1a\n", stem)
            self.assertIn(f"({stem}.png)", self.section)
        self.assertEqual(self.html.count("<figure "), len(support.FIGURE_STEMS) + 2)
        self.assertIn("The backward pass", self.html)

    def test_ratios_in_the_text_are_the_analysis(self):
        for s in ab.ratio_spreads(ab.time_ratios(self.table)):
            self.assertIn(f"{fmt.code(s.kernel)}, {fmt.threads(s.threads, 2)}: {fmt.ratio(s.median)}", self.section)
            want = 2.8 if s.kernel.startswith("tiled") else 2.2
            self.assertAlmostEqual(s.median, want, places=6)
        spreads = ab.ratio_spreads(ab.time_ratios(self.table))
        verdicts = [s.verdict for s in spreads]
        self.assertEqual(len(spreads), 8)
        self.assertNotIn("shorter", [s.verdict for s in spreads if s.kernel.startswith("tiled")])  # 2.8 > 2.5
        self.assertNotIn("longer", [s.verdict for s in spreads if s.kernel.startswith("naive")])  # 2.2 < 2.5
        self.assertIn(f"Of 8 kernel and thread-count pairs, {verdicts.count('longer')} take longer than that (median), "
                      f"{verdicts.count('shorter')} less, and {verdicts.count('within noise')} are within noise of it",
                      self.section)

    def test_exponents_and_peak_shares(self):
        fits = analysis.time_fits(ab.backward(self.table), 1)
        row = next(line for line in self.section.splitlines() if line.startswith("| `tiled/simd/avx512f` |"))
        self.assertIn(f"{fits[('tiled/simd/avx512f', 64)].slope:.2f}", row)
        r = self.table.one(kernel="tiled/simd/avx512f", n=2048, d=128, threads=1, pass_="backward")
        self.assertIn(f"{fmt.sig(r.gflops_median)} ({fmt.pct(r.pct_peak_median)})", self.section)

    def test_naive_against_tiled_and_training_step(self):
        self.assertRegex(self.section, r"backward: where tiled overtakes naive")
        self.assertIn("P and dS alone: 33.6 MB", self.section)  # 8 · 2048² bytes
        sums = [r.step_over_sum for r in ab.time_ratios(self.table) if r.step is not None]
        self.assertEqual(len(sums), 42)
        for value in sums:  # the step was made (1 + ratio) times the forward
            self.assertAlmostEqual(value, 1.0, places=9)
        self.assertIn(f"takes {fmt.ratio(min(sums))} to {fmt.ratio(max(sums))} the forward's and the backward's "
                      f"times added", self.section)

    def test_skipped_backward_point_listed_with_its_pass(self):
        skipped = self.md.split("## Skipped points")[1].split("\n## ")[0]
        self.assertIn("| pass |", skipped)
        self.assertRegex(skipped, r"`naive/scalar` \| n = 8192 \| 128 \| 1 \| no \| backward \| P and dS over")
        self.assertIn("on a 97 × 203 problem", self.md)

    def test_summary_names_the_backward(self):
        summary = self.md.split("## Summary")[1].split("\n## ")[0]
        self.assertIn("Backward pass of `tiled/simd/avx512f`, at best:", summary)
        self.assertIn("It takes 2.80x its forward's time (median over 6 points, one thread)", summary)

    def test_forward_sections_unchanged_by_backward_points(self):
        titles = [t for t in re.findall(r"\n## (.+)\n", self.plain)
                  if t not in ("Summary", "Noise", "Skipped points", "How the numbers are made")]
        self.assertIn("Throughput and share of the peak", titles)
        for title in titles:
            ours = self.md.split(f"\n## {title}\n")[1].split("\n## ")[0]
            plain = self.plain.split(f"\n## {title}\n")[1].split("\n## ")[0]
            self.assertEqual(ours, plain, title)


class RealRun(unittest.TestCase):
    """tests/fixtures/quick_backward_results.json: the scalar kernels of a real quick run with backward
    points (attnbench_bench as it writes them: `iterations:1`, budget skips, oracle_error_ratio).
    Independent of its values, so that another run can replace it."""

    @classmethod
    def setUpClass(cls):
        cls.run_dir = support.output_root() / "real-backward-run"
        if cls.run_dir.exists():
            shutil.rmtree(cls.run_dir)
        cls.run_dir.mkdir(parents=True)
        shutil.copy(support.BACKWARD_FIXTURE, cls.run_dir / "results.json")
        with redirect_stdout(io.StringIO()):
            cls.status = report.main([str(cls.run_dir)])
        cls.md = (cls.run_dir / "report.md").read_text(encoding="utf-8")
        cls.table = loader.load([cls.run_dir])

    def test_every_pass_loads(self):
        self.assertEqual(self.table.passes(), list(loader.PASSES))
        points = ab.backward(self.table).measured()
        self.assertGreater(len(points), 0)
        for r in points:
            self.assertTrue(0 <= r.oracle_error_ratio_median < 1, r.name)  # the check before timing passed
            self.assertAlmostEqual(r.flops_per_call_median, 2.5 * 4.0 * r.n * r.n * r.d)
        for r in ab.training_step(self.table).measured():
            self.assertAlmostEqual(r.flops_per_call_median, 3.5 * 4.0 * r.n * r.n * r.d)

    def test_report_has_the_section(self):
        self.assertEqual(self.status, 0)
        section = self.md.split("## The backward pass")[1].split("\n## ")[0]
        for r in ab.time_ratios(self.table):
            self.assertIn(fmt.ratio(r.ratio), section)
        skipped = [r for r in self.table.skipped() if r.pass_ != "forward"]
        listing = self.md.split("## Skipped points")[1].split("\n## ")[0]
        for r in skipped:
            self.assertRegex(listing, rf"`{re.escape(r.kernel)}` \| {r.shape} \| {r.d} \| {r.threads} \| no \| "
                                      rf"{re.escape(r.pass_)} \|")


class WithoutBackward(unittest.TestCase):
    def test_section_omitted_and_said_so(self):
        md = (support.fixture_report() / "report.md").read_text(encoding="utf-8")
        self.assertNotIn("## The backward pass", md)
        summary = md.split("## Summary")[1].split("\n## ")[0]
        self.assertIn("Backward pass: not measured in this run", summary)
        for stem in ("fig9_backward_gflops", "fig10_backward_over_forward"):
            self.assertFalse((support.fixture_report() / f"{stem}.png").exists(), stem)


class Comparison(unittest.TestCase):
    def test_pass_column_when_runs_share_backward_points(self):
        root = support.output_root() / "compare-backward"
        if root.exists():
            shutil.rmtree(root)
        for label, scale in (("before", 1.0), ("after", 0.5)):
            points = [point("tiled/scalar", n, 64, scale * n * n * 1e-5, 1, p) for n in (512, 1024)
                      for p in ("forward", "backward")]
            benchmarks = []
            for name, ms, counters in points:
                benchmarks += support.benchmark_entries(name, [ms, ms, ms], counters=counters)
            support.write_results(root / label, benchmarks, MACHINE)
        with redirect_stdout(io.StringIO()):
            self.assertEqual(report.main([str(root / "before"), str(root / "after")]), 0)
        md = (root / "before" / "compare-after" / "report.md").read_text(encoding="utf-8")
        self.assertIn("| run | kernel | pass | shared points |", md)
        self.assertRegex(md, r"\| after \| `tiled/scalar` \| backward \| 2 \| 2.00x \|")
        self.assertRegex(md, r"\| `tiled/scalar` \| n = 1024 \| 64 \| 1 \| no \| backward \|")


if __name__ == "__main__":
    unittest.main()
