"""Derived numbers on synthetic runs whose answer is known: crossover, speedups, winners, noise."""
from __future__ import annotations

import tempfile
import unittest
from pathlib import Path

import support
import analysis
import analysis_throughput
import loader

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
        labels = [c.label for c in analysis.comparisons(self.table) if c.group == "over the OpenBLAS baseline"]
        self.assertEqual(sorted(labels), ["tiled/scalar over naive/openblas", "tiled/simd/avx2 over naive/openblas"])

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


if __name__ == "__main__":
    unittest.main()
