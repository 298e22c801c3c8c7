"""analysis/memory.py: the score matrix's bytes and what fits where, the measured scratch and RSS
curves, and the long-context figures, on the fixture run (a 2-CPU VM: 1 MiB L2, 32 MiB L3, 25.3 GB
of RAM, a naive budget of half of it) and on hand-made runs."""
from __future__ import annotations

import math
import unittest
from pathlib import Path

import numpy as np

import support
from attnbench_report.analysis import memory as analysis_memory
from attnbench_report.load import results as loader


def _run(context: dict) -> loader.Run:
    return loader.Run(index=0, label="hand-made", path=Path("results.json"), context=context)


class ScoreMatrix(unittest.TestCase):
    def test_bytes_and_their_inverse(self):
        self.assertEqual(analysis_memory.score_matrix_bytes(128_000), 65.536e9)  # the report's 65.5 GB
        self.assertEqual(list(analysis_memory.score_matrix_bytes(np.array([1.0, 10.0]))), [4.0, 400.0])
        self.assertAlmostEqual(analysis_memory.largest_n_fitting(analysis_memory.score_matrix_bytes(3000)), 3000)

    def test_what_fits_in_the_fixtures_caches(self):
        run = loader.load([support.FIXTURE]).runs[0]
        self.assertEqual(analysis_memory.cache_fit_n(run, 2), 512.0)  # 4 * 512² = 1 MiB
        self.assertAlmostEqual(analysis_memory.cache_fit_n(run, 3), math.sqrt(2**25 / 4))
        self.assertTrue(analysis_memory.fits_in_cache(run, 8.4e6, 3))
        self.assertFalse(analysis_memory.fits_in_cache(run, 4e7, 3))
        self.assertFalse(analysis_memory.fits_in_cache(run, 1.0, 4))  # no L4: nothing is said to fit
        self.assertIsNone(analysis_memory.cache_fit_n(run, 4))


class Curves(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        table = loader.load([support.FIXTURE])
        cls.machine = table.runs[0]
        cls.d = analysis_memory.memory_d(table.matrix())
        cls.curves = analysis_memory.memory_curves(table.matrix(), cls.d)

    def test_curves_by_strategy_and_lengths(self):
        self.assertEqual(self.d, 64)  # where the tiled kernel reaches n = 8192
        by = analysis_memory.curves_by_strategy(self.curves)
        self.assertEqual(set(by), {(s, m) for s in ("naive", "tiled") for m in ("scratch_bytes", "rss_peak_bytes")})
        self.assertEqual(by[("naive", "scratch_bytes")].kernel, "naive/simd/avx512f")
        self.assertEqual(analysis_memory.measured_lengths(self.curves), [128, 512, 2048, 8192])

    def test_only_scratch_extrapolates(self):
        by = analysis_memory.curves_by_strategy(self.curves)
        self.assertIsNone(by[("tiled", "rss_peak_bytes")].extrapolated(128_000))
        naive = by[("naive", "scratch_bytes")].extrapolated(128_000)
        # the naive model's n² term is the score matrix, so it extrapolates to about its size
        self.assertAlmostEqual(naive / analysis_memory.score_matrix_bytes(128_000), 1.0, delta=0.1)

    def test_long_context_on_the_fixture(self):
        long_context = analysis_memory.long_context(self.machine, self.curves)
        self.assertEqual(long_context.n, analysis_memory.EXTRAPOLATE_N)
        self.assertEqual(long_context.score_matrix_bytes, 65.536e9)
        self.assertAlmostEqual(long_context.ram_share, 65.536e9 / 25276514304)
        self.assertAlmostEqual(long_context.longest_in_ram, math.sqrt(25276514304 / 4))
        self.assertAlmostEqual(long_context.longest_in_budget, math.sqrt(12638257152 / 4))
        # the tiled scratch is linear in n: about 65 MB at n = 128,000, a thousandth of the scores
        self.assertAlmostEqual(long_context.tiled_scratch_bytes, 65.56e6, delta=0.1e6)
        self.assertAlmostEqual(long_context.tiled_saving, long_context.score_matrix_bytes / long_context.tiled_scratch_bytes)

    def test_long_context_without_ram_or_tiled_curve(self):
        naive_only = [c for c in self.curves if c.kernel.startswith("naive")]
        long_context = analysis_memory.long_context(_run({}), naive_only, n=1000)
        self.assertEqual(long_context.score_matrix_bytes, 4e6)
        self.assertIsNone(long_context.ram_share)
        self.assertIsNone(long_context.longest_in_ram)
        self.assertIsNone(long_context.longest_in_budget)
        self.assertIsNone(long_context.tiled_scratch_bytes)
        self.assertIsNone(long_context.tiled_saving)


if __name__ == "__main__":
    unittest.main()
