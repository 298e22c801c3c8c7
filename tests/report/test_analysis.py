"""Derived numbers (analysis/__init__.py) on synthetic runs whose answer is known and on the fixture run:
crossover, exponents, speedups, thread scaling, winners, noise, causal and grouped-query ratios."""
from __future__ import annotations

import math
import tempfile
import unittest
from pathlib import Path

import support
from attnbench_report import analysis
from attnbench_report.analysis import throughput as analysis_throughput
from attnbench_report.load import results as loader
from attnbench_report.fit import LogLogFit

LENGTHS = (128, 256, 512, 1024, 2048)


def table_of(times: dict, cv: float = 0.01, context=None) -> loader.Table:
    """times: {kernel: function n -> ms}; d = 64, one thread, three repetitions with the given CV."""
    benchmarks = []
    for kernel, f in times.items():
        for n in LENGTHS:
            t = f(n)
            reps = [t * (1 - cv), t, t * (1 + cv)]
            flops = 4.0 * n * n * 64
            benchmarks += support.benchmark_entries(
                f"{kernel}/n:{n}/d:64/threads:1/causal:0", reps, gflops=[flops / (r * 1e6) for r in reps],
                counters={"flops_per_call": flops, "bytes_moved": 16.0 * n * 64, "scratch_bytes": 1000.0 * n,
                          "score_matrix_bytes": 4.0 * n * n, "rss_peak_bytes": 1e7, "pct_peak": 50.0})
    folder = Path(tempfile.mkdtemp(prefix="attnbench-analysis-"))
    return loader.load([support.write_results(folder, benchmarks, context)])


class CrossoverTest(unittest.TestCase):
    def test_overtakes_between_two_lengths(self):
        # naive / tiled = n / 724: below 1 up to 512, above from 1024; crossing at n = 724
        table = table_of({"tiled/scalar": lambda n: 1e-6 * n**2, "naive/scalar": lambda n: 1e-6 * n**3 / 724})
        c = analysis.crossover(table, "tiled/scalar", "naive/scalar", 64, 1)
        self.assertEqual(c.verdict, "overtakes")
        self.assertAlmostEqual(c.n_cross, 724, delta=1)
        self.assertEqual(int(c.n[c.index]), 1024)
        self.assertIn("n ≈ 724", c.sentence())

    def test_always_and_never(self):
        table = table_of({"tiled/scalar": lambda n: 1.0 * n, "naive/scalar": lambda n: 2.0 * n})
        self.assertEqual(analysis.crossover(table, "tiled/scalar", "naive/scalar", 64, 1).verdict, "always")
        table = table_of({"tiled/scalar": lambda n: 3.0 * n, "naive/scalar": lambda n: 2.0 * n})
        c = analysis.crossover(table, "tiled/scalar", "naive/scalar", 64, 1)
        self.assertEqual(c.verdict, "never")
        self.assertIn("never in the measured range", c.sentence())

    def test_not_for_good(self):
        slower_at = {128: 2.0, 256: 0.5, 512: 0.5, 1024: 0.5, 2048: 2.0}  # tiled time / naive time
        table = table_of({"tiled/scalar": lambda n: slower_at[n], "naive/scalar": lambda n: 1.0})
        c = analysis.crossover(table, "tiled/scalar", "naive/scalar", 64, 1)
        self.assertEqual(c.verdict, "not past the largest n")
        self.assertIsNone(c.n_cross)

    def test_lead_within_noise_is_said(self):
        table = table_of({"tiled/scalar": lambda n: 1.0, "naive/scalar": lambda n: 1.02}, cv=0.05)
        self.assertIn("within noise", analysis.crossover(table, "tiled/scalar", "naive/scalar", 64, 1).sentence())


class OtherNumbers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.table = table_of({"tiled/simd/avx2": lambda n: 1e-6 * n**2, "tiled/scalar": lambda n: 1e-5 * n**2,
                              "naive/openblas": lambda n: 4e-6 * n**2},
                             cv=0.08, context={"dispatch tiled/simd": "tiled/simd/avx2", "num_cpus": 2,
                                               "load_avg": [3.0, 1.0, 1.0]})

    def test_simd_kernel_follows_the_dispatch(self):
        self.assertEqual(analysis.simd_kernel(self.table, "tiled"), "tiled/simd/avx2")
        self.assertIsNone(analysis.simd_kernel(self.table, "naive"))

    def test_speedups(self):
        groups = {c.group: c for c in analysis.comparisons(self.table)}
        n, s = analysis.speedup_series(self.table, groups["SIMD over scalar"], 64, 1)
        self.assertEqual(list(n), list(LENGTHS))
        self.assertTrue(all(abs(v - 10.0) < 1e-9 for v in s))
        labels = [c.label for c in analysis.comparisons(self.table) if c.group == "over the baseline"]
        self.assertEqual(sorted(labels), ["tiled/scalar over naive/openblas", "tiled/simd/avx2 over naive/openblas"])

    def test_baseline_from_the_runs_roles_else_the_openblas_backend(self):
        self.assertEqual(analysis.baseline_kernel(self.table), "naive/openblas")  # no roles: by backend
        roles = {"role tiled/simd/avx2": "baseline", "role tiled/scalar": "attnbench", "role naive/openblas": "attnbench"}
        with_roles = table_of({"tiled/simd/avx2": lambda n: 1.0, "tiled/scalar": lambda n: 2.0,
                               "naive/openblas": lambda n: 3.0}, context=roles)
        self.assertEqual(analysis.baseline_kernel(with_roles), "tiled/simd/avx2")
        self.assertIn("tiled/scalar over tiled/simd/avx2",
                      [c.label for c in analysis.comparisons(with_roles) if c.group == "over the baseline"])
        no_baseline = table_of({"tiled/scalar": lambda n: 1.0}, context={"role tiled/scalar": "attnbench"})
        self.assertIsNone(analysis.baseline_kernel(no_baseline))

    def test_time_exponent(self):
        fit = analysis.time_fit(self.table, "tiled/scalar", 64, 1)
        self.assertAlmostEqual(fit.slope, 2.0, places=6)

    def test_winners_noise_and_load(self):
        cells = analysis.winners(self.table, 1)
        self.assertEqual({cells[(n, 64)][0].kernel for n in LENGTHS}, {"tiled/simd/avx2"})
        self.assertEqual(len(analysis.noisy(self.table)), len(self.table))  # every CV is 8%
        self.assertIsNotNone(analysis.load_warning(self.table.runs[0]))

    def test_arithmetic_intensity(self):
        r = self.table.one(kernel="tiled/scalar", n=2048)
        self.assertAlmostEqual(analysis_throughput.arithmetic_intensity(r), 2048 / 4)



def _fit(slope: float, r2: float, count: int) -> LogLogFit:
    return LogLogFit(slope=slope, intercept=0.0, r2=r2, count=count, x_min=128.0, x_max=2048.0)


class Exponents(unittest.TestCase):
    def test_r2_range_leaves_out_two_point_fits(self):
        fits = [_fit(2.0, 0.99, 5), _fit(2.1, 1.0, 2), _fit(1.9, 0.95, 3)]
        self.assertEqual([analysis.through_two_lengths(f) for f in fits], [False, True, False])
        self.assertEqual(analysis.r2_range(fits), (0.95, 0.99))
        self.assertIsNone(analysis.r2_range([_fit(2.0, 1.0, 2)]))  # only exact fits: no range to quote

    def test_steeper_exponents(self):
        fits = {("naive", 64): _fit(2.3, 1, 5), ("tiled", 64): _fit(1.9, 1, 5),
                ("naive", 128): _fit(1.8, 1, 5), ("tiled", 128): _fit(1.9, 1, 5), ("naive", 32): _fit(2.0, 1, 5)}
        both, steeper = analysis.steeper_exponents(fits, "naive", "tiled", [32, 64, 128])
        self.assertEqual(both, [64, 128])  # d = 32 has no tiled fit
        self.assertEqual(steeper, [64])

    def test_on_the_fixture(self):
        table = loader.load([support.FIXTURE]).matrix()
        fits = analysis.time_fits(table, 1)
        # the scalar kernels were skipped past n = 512: two lengths each, marked and out of the R² range
        self.assertEqual(sorted(k for k, f in fits.items() if analysis.through_two_lengths(f)),
                         [("naive/scalar", 64), ("naive/scalar", 128), ("tiled/scalar", 64), ("tiled/scalar", 128)])
        low, high = analysis.r2_range(fits.values())
        self.assertGreater(low, 0.99)
        self.assertLessEqual(high, 1.0)
        both, steeper = analysis.steeper_exponents(fits, "naive/simd/avx512f", "tiled/simd/avx512f", [64, 128])
        self.assertEqual((both, steeper), ([64, 128], [64, 128]))

    def test_lanes_from_the_one_table(self):
        self.assertEqual(analysis.fp32_lanes("tiled/simd/avx512f"), 16)
        self.assertEqual(analysis.fp32_lanes("naive/simd/avx2"), 8)
        self.assertIsNone(analysis.fp32_lanes("tiled/scalar"))
        self.assertIsNone(analysis.fp32_lanes(None))
        self.assertEqual(analysis.SIMD_ISAS, ("avx512f", "avx2", "sse4.2"))  # the dispatcher's fallback order


class Speedups(unittest.TestCase):
    def test_range_and_largest_common_n(self):
        # scalar / simd = n / 128: from 1x at n = 128 to 16x at n = 2048
        table = table_of({"tiled/simd/avx2": lambda n: 1e-6 * n, "tiled/scalar": lambda n: 1e-6 * n * n / 128})
        c = analysis.Comparison("", "", "tiled/simd/avx2", "tiled/scalar")
        r = analysis.speedup_range(table, c, 64, 1)
        self.assertAlmostEqual(r.lowest, 1.0)
        self.assertAlmostEqual(r.highest, 16.0)
        self.assertEqual(r.n_largest, 2048)
        self.assertAlmostEqual(r.at_largest, 16.0)
        self.assertIsNone(analysis.speedup_range(table, c, 128, 1))  # d = 128 was not measured

    def test_thread_scaling(self):
        points = []
        for n, one, two in ((512, 1.0, 0.9), (2048, 16.0, 10.0)):
            for threads, ms in ((1, one), (2, two)):
                points.append((f"tiled/simd/avx2/n:{n}/d:64/threads:{threads}/causal:0", ms, {}))
        points.append(("tiled/simd/avx2/n:4096/d:64/threads:1/causal:0", 64.0, {}))  # one thread only
        (scaling,) = analysis.thread_scaling(support.load_points(points), 2)
        self.assertEqual((scaling.kernel, scaling.d, scaling.n), ("tiled/simd/avx2", 64, 2048))
        self.assertEqual((scaling.one.threads, scaling.many.threads), (1, 2))
        self.assertAlmostEqual(scaling.speedup, 1.6)
        self.assertAlmostEqual(scaling.efficiency_pct, 80.0)

    def test_thread_scaling_on_the_fixture(self):
        table = loader.load([support.FIXTURE]).matrix()
        rows = analysis.thread_scaling(table, 2)
        self.assertEqual(len(rows), 12)  # every kernel and head dim the fixture measured on 1 and 2 threads
        for s in rows:
            self.assertAlmostEqual(s.speedup, s.one.time_ms_median / s.many.time_ms_median)
            self.assertAlmostEqual(s.efficiency_pct, 50 * s.speedup)
        top = next(s for s in rows if s.kernel == "tiled/simd/avx512f" and s.d == 64)
        self.assertEqual(top.n, 8192)


class Noise(unittest.TestCase):
    def test_within_noise(self):
        self.assertTrue(analysis.within_noise(0.02, 0.05))
        self.assertTrue(analysis.within_noise(-0.02, 0.05))  # a ratio below 1 is as much a difference
        self.assertFalse(analysis.within_noise(0.06, 0.05))
        self.assertFalse(analysis.within_noise(0.01, math.nan))  # one repetition: no CV to hide behind

    def test_lead_of_the_winner(self):
        # support.load_points: repetitions median x (1 - cv), median, median x (1 + cv)
        table = support.load_points([("tiled/simd/avx2/n:512/d:64/threads:1/causal:0", 1.00, {}, 0.05),
                                     ("naive/simd/avx2/n:512/d:64/threads:1/causal:0", 1.00, {}, 0.01),
                                     ("tiled/scalar/n:512/d:64/threads:1/causal:0", 1.50, {}, 0.01),
                                     ("tiled/scalar/n:1024/d:64/threads:1/causal:0", 6.0, {}, 0.01)])
        cells = analysis.winners(table, 1)
        floor = analysis.noise_floor(table)
        self.assertAlmostEqual(floor, 1 / 0.99 - 1)  # three of the four points spread 1%
        lead = analysis.lead(cells[(512, 64)], floor)
        self.assertEqual((lead.winner.kernel, lead.runner_up.kernel), ("tiled/simd/avx2", "naive/simd/avx2"))
        self.assertAlmostEqual(lead.margin, 0.99 / 0.95 - 1)  # fastest repetitions: 0.95 against 0.99
        self.assertTrue(lead.within_noise)  # 4.2% ahead, but the winner's median sits 5.3% above its fastest
        self.assertIsNone(analysis.lead(cells[(1024, 64)], floor))  # one kernel: nobody to lead

    def test_comparisons_read_the_fastest_repetition(self):
        def reps(name, times, n=512):
            return support.benchmark_entries(name + f"/n:{n}/d:64/threads:1/causal:0", times)

        folder = Path(tempfile.mkdtemp(prefix="attnbench-minimum-", dir=support.output_root()))
        table = loader.load([support.write_results(folder, reps("tiled/simd/avx2", [1.00, 1.01, 1.40])
                                                   + reps("naive/simd/avx2", [1.08, 1.09, 1.10])
                                                   + reps("tiled/scalar", [5.0, 5.0, 5.0])
                                                   + reps("tiled/simd/avx2", [1.00, 1.12, 1.13], 1024)
                                                   + reps("naive/simd/avx2", [1.08, 1.09, 1.10], 1024))])
        tiled = table.one(kernel="tiled/simd/avx2", n=512)
        self.assertEqual((tiled.time_ms_min, tiled.time_ms_median), (1.00, 1.01))
        self.assertAlmostEqual(analysis.best_gflops(tiled), tiled.gflops_median * 1.01)
        self.assertAlmostEqual(analysis.min_spread(tiled), 0.01)
        # the median of the spreads: 1% and 12% (tiled), 0.93% twice (naive) and 0 (scalar)
        floor = analysis.noise_floor(table)
        self.assertAlmostEqual(floor, 1.09 / 1.08 - 1)
        lead = analysis.lead(analysis.winners(table, 1)[(512, 64)], floor)
        self.assertEqual(lead.winner.kernel, "tiled/simd/avx2")
        self.assertAlmostEqual(lead.margin, 0.08)
        self.assertFalse(lead.within_noise)  # 8% against spreads of 1%
        # n = 1024: naive has the lower median (1.09 against 1.12), tiled the faster repetition
        close = analysis.lead(analysis.winners(table, 1)[(1024, 64)], floor)
        self.assertEqual((close.winner.kernel, round(close.margin, 6)), ("tiled/simd/avx2", 0.08))
        self.assertTrue(close.within_noise)  # tiled's second-fastest sits 12% above its fastest
        self.assertAlmostEqual(analysis.comparison_noise(0.2, tiled), 0.2)  # a run's floor dominates
        self.assertEqual(analysis.statistic(table), "fastest repetition")

    def test_runs_without_minimums_compare_medians_by_cv(self):
        table = loader.load([support.FIXTURE]).matrix()  # recorded before the min aggregate
        self.assertFalse(analysis.compares_minimums(table))
        r = table.measured().records[0]
        self.assertEqual(analysis.best_ms(r), r.time_ms_median)
        self.assertTrue(math.isnan(analysis.noise_floor(table)))
        self.assertEqual(analysis.comparison_noise(math.nan, r), r.time_ms_cv)
        self.assertEqual(analysis.statistic(table), "median over repetitions")

    def test_cv_spread_and_one_call_points(self):
        table = support.load_points([("tiled/scalar/n:128/d:64/threads:1/causal:0", 1.0, {}, 0.01),
                                     ("tiled/scalar/n:256/d:64/threads:1/causal:0", 2.0, {}, 0.02),
                                     ("tiled/scalar/n:512/d:64/threads:1/causal:0/iterations:1", 8.0, {}, 0.10)])
        spread = analysis.cv_spread(table)
        self.assertEqual(spread.count, 3)
        self.assertAlmostEqual(spread.median, 0.02)
        self.assertAlmostEqual(spread.largest, 0.10)
        once, repetitions = analysis.one_call_points(table)
        self.assertEqual([r.n for r in once], [512])
        self.assertEqual(repetitions, [3])

    def test_on_the_fixture(self):
        table = loader.load([support.FIXTURE])
        spread = analysis.cv_spread(table)
        self.assertEqual(spread.count, len(table.measured()))
        self.assertAlmostEqual(spread.largest, max(r.time_ms_cv for r in table.measured()))
        self.assertGreater(spread.largest, analysis.CV_FLAG)
        once, repetitions = analysis.one_call_points(table)
        self.assertEqual((len(once), repetitions), (11, [3]))

    def test_skip_reasons_grouped_by_kind(self):
        benchmarks = support.benchmark_entries("tiled/scalar/n:128/d:64/threads:1/causal:0", [1.0, 1.0, 1.0])
        for n, reason in ((4096, "predicted 41.2 s per call exceeds the 10 s budget"),
                          (8192, "predicted 165 s per call exceeds the 10 s budget"),
                          (16384, "score matrix of 1.07 GB over the naive memory budget")):
            benchmarks += support.skipped_entries(f"naive/scalar/n:{n}/d:64/threads:1/causal:0", reason)
        folder = Path(tempfile.mkdtemp(prefix="attnbench-skips-", dir=support.output_root()))
        kinds = analysis.skip_reasons(loader.load([support.write_results(folder, benchmarks)]))
        self.assertEqual({kind: [r.n for r in rows] for kind, rows in kinds.items()},
                         {"predicted # s per call exceeds the # s budget": [4096, 8192],
                          "score matrix of # GB over the naive memory budget": [16384]})


class OtherShapes(unittest.TestCase):
    def test_causal_ratio_and_its_ideal(self):
        self.assertEqual(analysis.ideal_causal_ratio(1), 1.0)  # one query sees its one key either way
        self.assertAlmostEqual(analysis.ideal_causal_ratio(128), 256 / 129)
        table = support.load_points([("tiled/simd/avx2/n:128/d:64/threads:1/causal:0", 2.0, {}),
                                     ("tiled/simd/avx2/n:128/d:64/threads:1/causal:1", 1.25, {}),
                                     ("tiled/simd/avx2/n:256/d:64/threads:1/causal:1", 3.0, {})])
        (c,) = analysis.causal_ratios(table)  # n = 256 has no non-causal twin
        self.assertEqual((c.full.causal, c.causal.causal, c.full.n), (False, True, 128))
        self.assertAlmostEqual(c.ratio, 1.6)
        self.assertAlmostEqual(c.ideal, 256 / 129)

    def test_grouping_gains(self):
        shape = "q:512/kv:512/heads:8/kv_heads:{kv}/d:64/threads:1/causal:0"
        table = support.load_points([(f"tiled/simd/avx2/{shape.format(kv=8)}", 2.0, {"scratch_bytes": 4e6}),
                                     (f"tiled/simd/avx2/{shape.format(kv=2)}", 1.6, {"scratch_bytes": 1e6}),
                                     ("tiled/simd/avx2/q:512/kv:1024/heads:8/kv_heads:2/d:64/threads:1/causal:0",
                                      3.0, {"scratch_bytes": 2e6})])  # no ungrouped twin
        (gain,) = analysis.grouping_gains(table)
        self.assertEqual((gain.kernel, gain.threads, gain.full.kv_heads, gain.grouped.kv_heads),
                         ("tiled/simd/avx2", 1, 8, 2))
        self.assertAlmostEqual(gain.speedup, 1.25)
        self.assertAlmostEqual(gain.scratch_saving, 4.0)


if __name__ == "__main__":
    unittest.main()
