"""The least-squares fits on synthetic data of known slope."""
from __future__ import annotations

import math
import unittest

import numpy as np

import support  # noqa: F401
from attnbench_report.fit import loglog_fit, loglog_fit_tail, power_sum_fit


class LogLogFit(unittest.TestCase):
    def test_exact_power_law(self):
        n = np.array([128, 256, 512, 1024, 2048, 4096], dtype=float)
        for slope, scale in ((2.0, 3e-6), (1.0, 512.0), (1.5, 0.25), (-0.5, 7.0)):
            fit = loglog_fit(n, scale * n**slope)
            self.assertAlmostEqual(fit.slope, slope, places=10)
            self.assertAlmostEqual(fit.intercept, math.log(scale), places=8)
            self.assertAlmostEqual(fit.r2, 1.0, places=12)
            self.assertEqual((fit.count, fit.x_min, fit.x_max), (6, 128.0, 4096.0))
            np.testing.assert_allclose(fit.predict(128000.0), scale * 128000.0**slope, rtol=1e-9)

    def test_noisy_slope_within_its_error(self):
        rng = np.random.default_rng(6)
        n = np.geomspace(128, 65536, 40)
        t = 2e-6 * n**2 * np.exp(rng.normal(0, 0.05, n.size))  # 5% multiplicative noise
        fit = loglog_fit(n, t)
        self.assertAlmostEqual(fit.slope, 2.0, delta=0.03)
        self.assertGreater(fit.r2, 0.99)
        self.assertLess(fit.r2, 1.0)

    def test_fixed_cost_bends_the_slope_and_the_tail_recovers_it(self):
        n = np.array([128, 256, 512, 1024, 2048, 4096, 8192, 16384], dtype=float)
        t = 0.5 + 1e-6 * n**2  # a fixed cost that small n cannot amortise
        whole, tail = loglog_fit(n, t), loglog_fit_tail(n, t, points=3)
        self.assertLess(whole.slope, 1.9)
        self.assertAlmostEqual(tail.slope, 2.0, delta=0.05)
        self.assertEqual((tail.count, tail.x_min), (3, 4096.0))

    def test_too_few_or_invalid_points(self):
        self.assertIsNone(loglog_fit([128], [1.0]))
        self.assertIsNone(loglog_fit([128, 128], [1.0, 2.0]))
        self.assertIsNone(loglog_fit([], []))
        fit = loglog_fit([0, 128, 256, 512, 1024], [5.0, float("nan"), 2.0, 8.0, -1.0])  # 0, NaN, negative dropped
        self.assertEqual(fit.count, 2)
        self.assertAlmostEqual(fit.slope, 2.0)

    def test_two_points_are_exact(self):
        fit = loglog_fit([100, 400], [3.0, 12.0])
        self.assertAlmostEqual(fit.slope, 1.0)
        self.assertEqual(fit.r2, 1.0)


class PowerSumFit(unittest.TestCase):
    def test_score_matrix_plus_packed_keys(self):
        n = np.array([128, 512, 2048, 8192], dtype=float)
        fit = power_sum_fit(n, 4 * n**2 + 520 * n, (2, 1))
        np.testing.assert_allclose(fit.coefficients, (4.0, 520.0), rtol=1e-6)
        self.assertAlmostEqual(float(fit.predict(128000.0)) / (4 * 128000.0**2 + 520 * 128000), 1.0, places=6)
        self.assertIn("n^2", fit.describe())

    def test_negative_term_is_dropped(self):
        n = np.array([128, 512, 2048], dtype=float)
        fit = power_sum_fit(n, 512 * n - 1000, (1, 0))  # a negative constant is not physical
        self.assertEqual(fit.powers, (1,))
        self.assertGreater(fit.coefficients[0], 0)

    def test_too_few_points(self):
        self.assertIsNone(power_sum_fit([128], [1.0], (2, 1)))


if __name__ == "__main__":
    unittest.main()
