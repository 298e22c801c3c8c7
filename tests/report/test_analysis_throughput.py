"""analysis/throughput.py: shares of the peak, GFLOP/s by head dim, the roofline and decoding
bandwidth, on hand-made points under a hand-made machine (peak 100 GFLOP/s, triad 10 GB/s: the
ridge at 10 FLOP/byte) and on the fixture run."""
from __future__ import annotations

import math
import unittest
from pathlib import Path

import support
from attnbench_report.analysis import throughput as analysis_throughput
from attnbench_report.load import results as loader

MACHINE = {"num_cpus": 2, "fma_peak_gflops_threads_1": "100", "triad_gbs_threads_1": "10"}


def point(kernel: str, n: int, d: int, gflops: float, intensity: float, pct_peak: float = math.nan) -> tuple:
    """A one-thread point with the given GFLOP/s and FLOP/byte (bytes_moved scaled to match)."""
    flops = 4.0 * n * n * d
    counters = {"GFLOP/s": gflops, "flops_per_call": flops, "bytes_moved": flops / intensity}
    if math.isfinite(pct_peak):
        counters["pct_peak"] = pct_peak
    return (f"{kernel}/n:{n}/d:{d}/threads:1/causal:0", flops / (gflops * 1e6), counters)


class TiledFlatness(unittest.TestCase):
    def test_ratios_to_n_2048_per_kernel_d_and_threads(self):
        def two_threads(p):
            name, ms, counters = p
            return (name.replace("/threads:1/", "/threads:2/"), ms, counters)

        table = support.load_points([point("tiled/simd/avx2", 2048, 64, 80, 512),
                                     point("tiled/simd/avx2", 8192, 64, 76, 2048),     # 0.95x: flat
                                     point("tiled/simd/avx2", 16384, 64, 60, 4096),    # 0.75x: falls
                                     two_threads(point("tiled/simd/avx2", 2048, 64, 150, 512)),
                                     two_threads(point("tiled/simd/avx2", 8192, 64, 160, 2048)),
                                     point("tiled/simd/avx2", 8192, 128, 70, 2048),    # no n = 2048 at d = 128
                                     point("naive/simd/avx2", 2048, 64, 50, 16),       # not tiled
                                     point("naive/simd/avx2", 8192, 64, 10, 16)], MACHINE)
        rows = {(f.kernel, f.d, f.threads): f for f in analysis_throughput.tiled_flatness(table)}
        self.assertEqual(set(rows), {("tiled/simd/avx2", 64, 1), ("tiled/simd/avx2", 64, 2)})
        one = rows[("tiled/simd/avx2", 64, 1)]
        self.assertEqual([r.n for r in one.later], [8192, 16384])
        self.assertAlmostEqual(one.ratio(one.later[0]), 0.95, places=2)
        self.assertEqual([r.n for r in one.below], [16384])
        self.assertEqual(rows[("tiled/simd/avx2", 64, 2)].below, [])
        # support.load_points: each side's median 1% over its fastest, so 0.95x is 5.6% above the 0.9x line
        self.assertFalse(one.noisy(one.later[0]))
        self.assertFalse(one.noisy(one.later[1]))  # 0.75x: 17% under it

    def test_a_ratio_near_the_line_is_within_noise(self):
        table = support.load_points([point("tiled/simd/avx2", 2048, 64, 80, 512),
                                     point("tiled/simd/avx2", 8192, 64, 71, 2048)], MACHINE, cv=0.03)
        (f,) = analysis_throughput.tiled_flatness(table)
        self.assertAlmostEqual(f.ratio(f.later[0]), 71 / 80)  # both sides' fastest 3% under their medians
        self.assertEqual(f.below, f.later)
        self.assertTrue(f.noisy(f.later[0]))  # 0.8875x, 1.4% under the line, each side spreads 3.1%


class PeakAndHeadDims(unittest.TestCase):
    def test_best_share_of_peak(self):
        table = support.load_points([point("tiled/simd/avx2", 512, 64, 50, 128, pct_peak=50),
                                     point("tiled/simd/avx2", 2048, 64, 70, 512, pct_peak=70),
                                     point("naive/scalar", 512, 64, 2, 16)], MACHINE)  # no pct_peak: NaN
        best = analysis_throughput.best_share_of_peak(table, 1)
        self.assertEqual((best.kernel, best.n), ("tiled/simd/avx2", 2048))
        self.assertIsNone(analysis_throughput.best_share_of_peak(table, 2))

    def test_head_dim_gflops_at_the_largest_common_n(self):
        table = support.load_points([point("tiled/simd/avx2", 512, 64, 40, 128), point("tiled/simd/avx2", 512, 128, 60, 128),
                                     point("tiled/simd/avx2", 2048, 64, 50, 512), point("tiled/simd/avx2", 2048, 128, 75, 512),
                                     point("tiled/simd/avx2", 4096, 64, 52, 1024),  # not at d = 128
                                     point("naive/scalar", 512, 64, 2, 16)], MACHINE)  # never at d = 128
        (row,) = analysis_throughput.head_dim_gflops(table)
        self.assertEqual((row.kernel, row.n), ("tiled/simd/avx2", 2048))
        self.assertAlmostEqual(row.gflops[0], 50)
        self.assertAlmostEqual(row.ratio, 1.5)
        self.assertTrue(row.faster_at_largest_d)
        self.assertEqual(analysis_throughput.flops_per_score(64), 256)

    def test_head_dims_on_the_fixture(self):
        rows = {r.kernel: r for r in analysis_throughput.head_dim_gflops(loader.load([support.FIXTURE]).matrix())}
        self.assertEqual(rows["tiled/scalar"].n, 512)  # skipped past 512
        self.assertFalse(rows["naive/scalar"].faster_at_largest_d)
        self.assertTrue(rows["naive/openblas"].faster_at_largest_d)
        self.assertNotIn("tiled/simd/avx2", rows)  # measured at d = 64 only


class Roofline(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.table = support.load_points([
            point("tiled/simd/avx2", 512, 64, 60, 128), point("tiled/simd/avx2", 2048, 64, 80, 512),
            # a naive kernel whose intensity stays near d/4 and whose GFLOP/s fall once n² leaves the caches
            point("naive/simd/avx2", 512, 64, 30, 15), point("naive/simd/avx2", 2048, 64, 20, 16),
            point("naive/scalar", 512, 64, 1, 8), point("naive/scalar", 2048, 64, 0.95, 8)], MACHINE)
        cls.machine = cls.table.runs[0]

    def test_ridge_and_roof(self):
        self.assertEqual(analysis_throughput.ridge(self.machine, 1), 10.0)
        self.assertEqual(analysis_throughput.roof(self.machine, 1, 8), 80.0)  # under the bandwidth roof
        self.assertEqual(analysis_throughput.roof(self.machine, 1, 128), 100.0)  # under the peak
        self.assertIsNone(analysis_throughput.ridge(self.machine, 2))

    def test_points_at_the_largest_n(self):
        points = {p.record.kernel: p for p in analysis_throughput.roofline_at_largest_n(self.table, self.machine)}
        self.assertEqual({k: p.record.n for k, p in points.items()}, dict.fromkeys(points, 2048))
        tiled, scalar = points["tiled/simd/avx2"], points["naive/scalar"]
        self.assertAlmostEqual(tiled.intensity, 512)
        self.assertEqual((tiled.roof, tiled.bound), (100.0, "compute"))
        self.assertAlmostEqual(tiled.roof_pct, 80)
        self.assertEqual((scalar.roof, scalar.bound), (80.0, "memory"))
        self.assertAlmostEqual(scalar.roof_pct, 100 * 0.95 / 80)

    def test_without_ceilings(self):
        table = support.load_points([point("tiled/simd/avx2", 512, 64, 60, 128)], {"num_cpus": 2})
        (p,) = analysis_throughput.roofline_at_largest_n(table, table.runs[0])
        self.assertTrue(math.isnan(p.roof))
        self.assertIsNone(p.roof_pct)
        self.assertIsNone(p.bound)

    def test_reading(self):
        self.assertEqual(analysis_throughput.sides_of_ridge(self.table, self.machine), (4, 2))  # naive/scalar at 8
        falls = analysis_throughput.throughput_falls(self.table)
        # naive/simd fell by a third; naive/scalar by 5%, within FALL_FRACTION; tiled is not asked
        self.assertEqual([(f.kernel, f.best.n, f.last.n) for f in falls], [("naive/simd/avx2", 512, 2048)])
        self.assertAlmostEqual(analysis_throughput.best_roof_share(self.table, self.machine, "tiled/simd/avx2"), 0.8)
        self.assertEqual([k for k, _ in analysis_throughput.instruction_bound(self.table, self.machine)], ["naive/scalar"])

    def test_reading_on_the_fixture(self):
        table = loader.load([support.FIXTURE])
        points = table.matrix().measured().where(causal=False, threads=1)
        run = table.runs[0]
        # ridge 82.8 / 16.4 = 5.0 FLOP/byte; even a naive kernel's d/4 = 16 is right of it
        self.assertEqual(analysis_throughput.sides_of_ridge(points, run), (len(points), 0))
        self.assertEqual({p.bound for p in analysis_throughput.roofline_at_largest_n(points, run)}, {"compute"})
        self.assertEqual([k for k, _ in analysis_throughput.instruction_bound(points, run)],
                         ["tiled/autovec", "tiled/scalar", "naive/scalar"])
        self.assertIn("naive/openblas", {f.kernel for f in analysis_throughput.throughput_falls(points)})


class Decoding(unittest.TestCase):
    def test_bandwidth_against_the_triad(self):
        table = support.load_points([("tiled/simd/avx2/q:1/kv:8192/d:128/threads:1/causal:0", 0.5,
                                      {"flops_per_call": 4.0 * 8192 * 128, "bytes_moved": 8.4e6})], MACHINE)
        r = table.records[0]
        self.assertAlmostEqual(analysis_throughput.moved_gbs(r), 16.8)  # 8.4 MB in 0.5 ms
        self.assertAlmostEqual(analysis_throughput.triad_pct(table.runs[0], r), 168.0)
        no_triad = loader.Run(index=0, label="x", path=Path("results.json"), context={})
        self.assertIsNone(analysis_throughput.triad_pct(no_triad, r))


if __name__ == "__main__":
    unittest.main()
