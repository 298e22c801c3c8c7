"""The numbers analysis/demos.py derives from the demos, on the real demos.json of tests/fixtures (one
`attnbench demo all --json` of the VM run) and on small hand-made demos whose answer differs."""
from __future__ import annotations

import copy
import unittest

import support
from attnbench_report.analysis import demos as analysis_demos
from attnbench_report.load import demos

DEMOS_FIXTURE = support.ROOT / "tests" / "fixtures" / "demos.json"


class OnTheFixture(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.data = demos.load(DEMOS_FIXTURE)

    def test_softmax(self):
        softmax = self.data["softmax"]
        self.assertTrue(analysis_demos.naive_overflowed(softmax))  # exp(1000) is inf in float32
        self.assertEqual(analysis_demos.logit_shift(softmax), 998.0)  # (1000, 999, 998) = (2, 1, 0) + 998
        self.assertEqual(analysis_demos.shift_invariance_error(softmax), 0.0)  # the file's weights are equal
        hi, lo, predicted = analysis_demos.sharpening(softmax)
        self.assertAlmostEqual(hi - lo, 0.8, places=6)
        self.assertAlmostEqual(predicted, softmax["weight_ratio"], places=4)

    def test_bottleneck(self):
        bottleneck = self.data["bottleneck"]
        self.assertEqual(analysis_demos.attention_wins(bottleneck), 3)  # at n = 5, 25 and 200
        last = bottleneck["rows"][-1]
        self.assertAlmostEqual(analysis_demos.pooled_over_attention(last), 0.9977190119350381 / 0.014267225690924503)

    def test_alignment(self):
        alignment = self.data["alignment"]
        for total in analysis_demos.row_sums(alignment):
            self.assertAlmostEqual(total, 1.0, places=5)
        self.assertLess(analysis_demos.row_sum_error(alignment), 1e-6)
        # the -> le, black -> noir, cat -> chat: "black" (word 2) reads a later word than "cat" (word 3)
        self.assertEqual(analysis_demos.first_crossing(alignment), (1, 2))
        self.assertTrue(analysis_demos.crossing(alignment))

    def test_quadratic(self):
        q = self.data["quadratic"]
        measured, extrapolated = analysis_demos.quadratic_rows(q)
        self.assertEqual([r["n"] for r in extrapolated], [128000])
        end = extrapolated[0]
        self.assertAlmostEqual(analysis_demos.quadratic_time_ms(q, 128000) / end["naive_ms"], 1.0, places=6)
        self.assertAlmostEqual(analysis_demos.quadratic_tiled_bytes(q, 128000), end["tiled_scratch_bytes"], delta=1)
        self.assertTrue(analysis_demos.per_key_is_packed_kv(q))  # 512 bytes per key at d = 64
        top = measured[-1]
        self.assertAlmostEqual(analysis_demos.tiled_time_share(top), top["tiled_ms"] / top["naive_ms"])
        # 65.5 GB of scores against a 12.6 GB budget (half of the VM's RAM): refused
        self.assertAlmostEqual(analysis_demos.budget_share(q, end), 4.0 * 128000**2 / 12638257152.0, places=9)
        self.assertTrue(analysis_demos.over_budget(q, end))
        self.assertFalse(analysis_demos.over_budget(q, top))
        self.assertAlmostEqual(analysis_demos.tiled_saving(end), 1000, delta=5)  # 65.5 GB of scores, 65.5 MB of K, V

    def test_uniform(self):
        uniform = self.data["uniform"]
        self.assertEqual(analysis_demos.uniform_weight(uniform), 0.25)  # n = 4 keys
        self.assertLess(analysis_demos.uniform_weight_error(uniform), 1e-6)
        self.assertEqual(analysis_demos.uniform_output_error(uniform),
                         max(c["max_difference"] for c in uniform["cases"]))
        self.assertGreater(analysis_demos.uniform_output_error(uniform), 0)

    def test_copy(self):
        copy = self.data["copy"]
        rows = {row["n"]: row for row in copy["rows"]}
        self.assertEqual(list(rows), [5, 10, 20, 50, 100])
        self.assertEqual(analysis_demos.copy_sequence_numbers(copy, rows[100]), 800)
        self.assertEqual(analysis_demos.copy_share_held(copy, rows[5]), 1.0)  # 40 numbers in a 64-wide vector
        self.assertEqual(analysis_demos.copy_share_held(copy, rows[20]), 0.4)  # 64 of 160
        self.assertEqual(analysis_demos.copy_mse_floor(copy, rows[5]), 0.0)
        self.assertAlmostEqual(analysis_demos.copy_mse_floor(copy, rows[100]), 0.92)
        self.assertEqual([row["n"] for row in analysis_demos.copy_fitting_rows(copy)], [5])
        self.assertTrue(all(analysis_demos.copy_accurate(row, "attention") for row in copy["rows"]))
        self.assertEqual(analysis_demos.copy_rises(copy, "bottleneck"), [])  # 1.000, 0.944, 0.415, 0.018, 0.012
        self.assertEqual([n for n, row in rows.items() if analysis_demos.copy_at_floor(copy, row)], [5, 10, 20])
        self.assertEqual([n for n, row in rows.items() if analysis_demos.copy_near_chance(row, "bottleneck")], [50, 100])
        self.assertAlmostEqual(analysis_demos.copy_gap(rows[100]), 1.0 - 0.012)


class OnHandMadeDemos(unittest.TestCase):
    """The other side of each rule, which the fixture does not show."""

    def test_finite_weights_and_an_uneven_shift(self):
        softmax = {"naive_weights": [0.7, 0.2, 0.1], "large_logits": [3.0, 2.0, 0.5], "small_logits": [2.0, 1.0, 0.0],
                   "stable_weights": [0.7, 0.2, 0.1], "stable_small_weights": [0.65, 0.25, 0.1]}
        self.assertFalse(analysis_demos.naive_overflowed(softmax))
        self.assertIsNone(analysis_demos.logit_shift(softmax))
        self.assertAlmostEqual(analysis_demos.shift_invariance_error(softmax), 0.05)

    def test_a_monotone_alignment_does_not_cross(self):
        alignment = {"aligned": [0, 1, 1, 3], "weights": [[1.0]]}
        self.assertIsNone(analysis_demos.first_crossing(alignment))
        self.assertFalse(analysis_demos.crossing(alignment))
        # a crossing that is not between neighbours is still found, first by the earlier word
        self.assertEqual(analysis_demos.first_crossing({"aligned": [2, 3, 0]}), (0, 2))

    def test_attention_losing_and_no_budget(self):
        bottleneck = {"rows": [{"attention_error": 0.5, "mean_pooled_error": 0.4},
                               {"attention_error": 0.1, "mean_pooled_error": 0.9}]}
        self.assertEqual(analysis_demos.attention_wins(bottleneck), 1)
        q = copy.deepcopy(demos.load(DEMOS_FIXTURE)["quadratic"])
        q["memory_budget_bytes"] = 0  # a run that recorded no budget refuses nothing
        end = analysis_demos.quadratic_rows(q)[1][0]
        self.assertIsNone(analysis_demos.budget_share(q, end))
        self.assertFalse(analysis_demos.over_budget(q, end))
        q["tiled_bytes_per_key"] = 520.0
        self.assertFalse(analysis_demos.per_key_is_packed_kv(q))

    def test_a_copy_curve_that_rises_and_an_inaccurate_attention(self):
        copy = {"dim": 8, "bottleneck_width": 64,
                "rows": [{"n": 4, "chance": 0.25, "attention_accuracy": 0.94, "bottleneck_accuracy": 0.5,
                          "bottleneck_mse": 0.3},
                         {"n": 16, "chance": 1 / 16, "attention_accuracy": 0.99, "bottleneck_accuracy": 0.6,
                          "bottleneck_mse": 0.54}]}
        first, second = copy["rows"]
        self.assertFalse(analysis_demos.copy_accurate(first, "attention"))  # 0.94 < 0.95
        self.assertTrue(analysis_demos.copy_accurate(second, "attention"))
        self.assertEqual(analysis_demos.copy_rises(copy, "bottleneck"), [(4, 16)])
        self.assertEqual(analysis_demos.copy_rises(copy, "attention"), [(4, 16)])
        self.assertFalse(analysis_demos.copy_at_floor(copy, first))  # 0.3 above a floor of 0 (32 numbers fit)
        self.assertTrue(analysis_demos.copy_at_floor(copy, second))  # 0.54 against 1 - 64/128 = 0.5
        self.assertFalse(analysis_demos.copy_near_chance(first, "bottleneck"))  # 0.5 = 2 x 0.25 is not below
        self.assertEqual(analysis_demos.copy_fitting_rows(copy), [first])


if __name__ == "__main__":
    unittest.main()
