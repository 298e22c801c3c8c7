"""model.py: the cost model's prices of hand-made points under a hand-made machine (round constants,
so every expected second is worked out by hand), the calibrated kernels' factor, the residuals and
misses, the predicted crossover, model.json, and the report section built from them."""
from __future__ import annotations

import contextlib
import io
import json
import math
import tempfile
import unittest
from pathlib import Path

import support
from attnbench_report import model as cost_model

KiB, MiB = 1024, 1024 * 1024
MACHINE = {
    "host_name": "synthetic", "num_cpus": 2, "threads_all": "2",
    "caches": [{"level": 1, "type": "Data", "size": 32 * KiB}, {"level": 2, "type": "Unified", "size": 1 * MiB},
               {"level": 3, "type": "Unified", "size": 32 * MiB}],
    "products_flops_avx2_d64": "1e11", "softmax_s_per_score_avx2_d64": "1e-9", "exp_per_s_avx2": "2e9",
    "fma_flops_avx2+fma": "2e11", "fma_flops_scalar": "1e10", "exp_per_s_scalar": "1e9",
    "read_gbs_l1": "200", "read_gbs_l2": "100", "read_gbs_l3": "50", "read_gbs_dram": "10",
    "read_set_bytes_l1": str(16 * KiB), "read_set_bytes_l2": str(512 * KiB), "read_set_bytes_l3": str(8 * MiB),
    "read_set_bytes_dram": str(256 * MiB),
    "read_gbs_dram_threads_2": "15", "task_s_threads_2": "1e-6", "call_start_s_threads_2": "1e-5",
}
COUNTS = {"score_fmas": 1e9, "blend_fmas": 1e9, "exps": 1.001e6, "softmax_scores": 1e6, "kv_stream_bytes": 1e8,
          "kv_head_bytes": 1e5, "pack_bytes": 1e5, "io_bytes": 1e4, "score_sweeps": 6, "score_bytes": 0,
          "score_set_bytes": 0,
          "tasks": 0, "query_block": 48, "key_block": 512}
# What COUNTS cost on one thread: products 4e9 / 1e11; softmax 1e6 x 1e-9 + 1e3 rescale exps / 1e9;
# packing and Q, O from L1 (their bytes fit it); K and V of a head in L2: no stream phase.
PRODUCTS, SOFTMAX = 0.04, 1e-3 + 1e-6
PACKING, IO = 1e5 / 100e9, 1e4 / 200e9


def point(kernel: str, n: int, ms: float, threads: int = 1, d: int = 64, **counts) -> tuple:
    merged = dict(COUNTS, **counts)
    return (f"{kernel}/n:{n}/d:{d}/threads:{threads}/causal:0", ms, {f"count_{k}": v for k, v in merged.items()})


def build(points, context=MACHINE, cv: float = 0.0):
    """The model of hand-made points, each three repetitions (median ms x (1 - cv), ms, ms x (1 + cv))."""
    return cost_model.build(support.load_points(points, context, cv=cv))


class Prices(unittest.TestCase):
    def test_every_phase_of_a_simd_point(self):
        (p,) = build([point("tiled/simd/avx2", 1024, 50.0)]).predictions
        self.assertAlmostEqual(p.phases["products"], PRODUCTS)
        self.assertAlmostEqual(p.phases["softmax"], SOFTMAX)
        self.assertEqual(p.phases["K/V stream"], 0.0)  # the head's K and V sit in L2
        self.assertAlmostEqual(p.phases["packing"], PACKING)  # 100 kB: beyond L1, in L2
        self.assertAlmostEqual(p.predicted_s, sum(p.phases.values()))
        self.assertAlmostEqual(p.error, p.predicted_s / 0.05 - 1)
        self.assertEqual(p.dominant, "products")

    def test_checked_against_the_fastest_repetition(self):
        (p,) = build([point("tiled/simd/avx2", 1024, 50.0)], cv=0.1).predictions
        self.assertAlmostEqual(p.measured_s, 0.045)  # not the median's 0.05
        self.assertAlmostEqual(p.error, p.predicted_s / 0.045 - 1)

    def test_a_stream_beyond_l2_at_that_levels_bandwidth_and_threads(self):
        one, two = build([point("tiled/simd/avx2", 1024, 50.0, kv_head_bytes=64 * MiB),
                          point("tiled/simd/avx2", 1024, 30.0, threads=2, kv_head_bytes=8 * MiB, tasks=100)]).predictions
        self.assertAlmostEqual(one.phases["K/V stream"], 1e8 / 10e9)  # beyond L3: DRAM, 10 GB/s
        self.assertEqual(one.kv_level, "dram")
        # A run without the curve on two threads: a set read 5x faster than DRAM is a cache, which adds
        # up per core
        self.assertAlmostEqual(two.phases["K/V stream"], 1e8 / (50e9 * 2))
        self.assertAlmostEqual(two.phases["products"], PRODUCTS / 2)
        self.assertAlmostEqual(two.phases["threads"], 1e-5 + 100 * 1e-6 / 2)
        (far,) = build([point("tiled/simd/avx2", 1024, 30.0, threads=2, kv_head_bytes=64 * MiB)]).predictions
        self.assertAlmostEqual(far.phases["K/V stream"], 1e8 / 15e9)  # DRAM: as the DRAM sweep scaled

    def test_a_stream_on_threads_at_the_curve_measured_on_them(self):
        # The curve on two threads: 16 MiB (8 MiB a thread, what each thread of the point reads) at
        # 60 GB/s, not 2 x 50 nor 8 MiB's 90 (4 MiB a thread); beyond its sets the DRAM sweep on two
        measured = dict(MACHINE, **{f"read_gbs_threads_2_set_{8 * MiB}": "90",
                                    f"read_gbs_threads_2_set_{16 * MiB}": "60"})
        near, far = build([point("tiled/simd/avx2", 1024, 30.0, threads=2, kv_head_bytes=8 * MiB),
                           point("tiled/simd/avx2", 2048, 30.0, threads=2, kv_head_bytes=64 * MiB)],
                          context=measured).predictions
        self.assertAlmostEqual(near.phases["K/V stream"], 1e8 / 60e9)
        self.assertAlmostEqual(far.phases["K/V stream"], 1e8 / 15e9)

    def test_a_stream_read_by_the_threads_with_compute_tasks(self):
        # One compute task on two threads (a naive call with one query row): one thread reads K and V,
        # at one thread's bandwidth (a 64 MiB head: DRAM, 10 GB/s), not the DRAM sweep on two (15).
        one_task, two_tasks = build([point("naive/simd/avx2", 1024, 30.0, threads=2, kv_head_bytes=64 * MiB,
                                           compute_tasks=1, tasks=3),
                                     point("naive/simd/avx2", 2048, 30.0, threads=2, kv_head_bytes=64 * MiB,
                                           compute_tasks=2, tasks=3)]).predictions
        self.assertAlmostEqual(one_task.phases["K/V stream"], 1e8 / 10e9)
        self.assertAlmostEqual(two_tasks.phases["K/V stream"], 1e8 / 15e9)
        self.assertAlmostEqual(one_task.phases["products"], PRODUCTS)  # one thread computes
        self.assertAlmostEqual(one_task.phases["packing"], two_tasks.phases["packing"])  # both threads pack

    def test_cache_sizes_from_sysconf_where_google_benchmark_lists_none(self):
        # A guest without sysfs' cache list: the model must still know where L2 ends.
        sysconf = dict(MACHINE, caches=[], cache_bytes_l1d=str(32 * KiB), cache_bytes_l2=str(1 * MiB),
                       cache_bytes_l3=str(32 * MiB))
        (p,) = build([point("tiled/simd/avx2", 1024, 50.0, kv_head_bytes=64 * MiB)], context=sysconf).predictions
        self.assertAlmostEqual(p.phases["K/V stream"], 1e8 / 10e9)
        self.assertEqual(p.kv_level, "dram")

    def test_a_stream_from_key_chunks_at_the_chunks_level(self):
        # The head's K and V lie beyond the L3, but the kernel reads them a chunk (in L3) at a time.
        (p,) = build([point("tiled/simd/avx2", 1024, 50.0, kv_head_bytes=64 * MiB, kv_set_bytes=8 * MiB)]).predictions
        self.assertAlmostEqual(p.phases["K/V stream"], 1e8 / 50e9)
        self.assertEqual(p.kv_level, "dram")  # the head's level, as model.json reports it

    def test_packing_at_the_measured_packing_rate_over_the_threads(self):
        context = dict(MACHINE, **{f"pack_bytes_per_s_avx2_set_{8 * MiB}": "4e10",
                                   f"pack_bytes_per_s_avx2_set_{128 * MiB}": "1.5e10"})
        m = build([point("tiled/simd/avx2", 1024, 50.0, pack_bytes=64 * MiB),
                   point("tiled/simd/avx2", 1024, 30.0, threads=2, pack_bytes=64 * MiB),
                   point("tiled/simd/avx2", 512, 5.0, pack_bytes=1 * MiB),
                   point("tiled/autovec", 1024, 500.0, pack_bytes=1e5)], context)
        one, two, small = (m.find("tiled/simd/avx2", n, 64, t) for n, t in ((1024, 1), (1024, 2), (512, 1)))
        plain = m.find("tiled/autovec", 1024, 64, 1)
        self.assertAlmostEqual(one.phases["packing"], 64 * MiB / 1.5e10)  # the 128 MiB set's rate
        self.assertAlmostEqual(two.phases["packing"], 64 * MiB / 1.5e10 / 2)
        self.assertAlmostEqual(small.phases["packing"], 1 * MiB / 4e10)  # the smallest set's
        self.assertAlmostEqual(plain.phases["packing"], PACKING)  # not a SIMD kernel: the read sweep's price

    def test_a_multithreaded_point_takes_the_phases_measured_on_all_threads_at_once(self):
        context = dict(MACHINE, products_flops_avx2_d64_threads_2="8e10", softmax_s_per_score_avx2_d64_threads_2="2e-9")
        one, two = build([point("tiled/simd/avx2", 1024, 50.0), point("tiled/simd/avx2", 1024, 30.0, threads=2)],
                         context).predictions
        self.assertAlmostEqual(one.phases["products"], PRODUCTS)  # one thread: the one-thread constant
        self.assertAlmostEqual(two.phases["products"], 4e9 / 8e10 / 2)
        self.assertAlmostEqual(two.phases["softmax"], (1e6 * 2e-9 + 1e3 / 1e9) / 2)

    def test_naive_score_sweeps_beyond_l1_count_what_they_add_beyond_each_pass(self):
        # Six sweeps of 1e8 bytes from a 4 MiB set (50 GB/s): 2 ms each. The score and blend passes
        # (0.02 s of products each) hide theirs; the softmax's four (8 ms) exceed its work.
        big, small = build([point("naive/simd/avx2", 1024, 50.0, score_bytes=6e8, score_set_bytes=4 * MiB),
                            point("naive/simd/avx2", 2048, 50.0, score_bytes=6e8, score_set_bytes=16 * KiB)]).predictions
        self.assertAlmostEqual(big.phases["scores"], 4 * 2e-3 - SOFTMAX)
        self.assertEqual(big.score_level, "l3")
        self.assertEqual(small.phases["scores"], 0.0)  # in L1: inside the sweeps' own constant

    def test_a_kernel_without_query_blocks_overlaps_its_stream(self):
        # Measured as priced at factor 1: the stream's 1 s, of which the work hides its own time
        (p,) = build([point("naive/scalar", 1024, 1e3 * (1.0 + PACKING + IO), query_block=1,
                            kv_head_bytes=64 * MiB, kv_stream_bytes=1e10)], cv=0.0).predictions
        self.assertAlmostEqual(p.factor, 1.0)
        work = 4e9 / 1e10  # scalar products; a plain loop's exps cost only what would exceed them
        self.assertAlmostEqual(p.phases["K/V stream"], 1e10 / 10e9 - work)

    def test_plain_kernels_get_one_factor_fitted_on_their_points(self):
        # The factor scales the compute (scalar products; the exps, 1 ms, cost only what would exceed
        # them), not the bytes: Q and O's 1 GB from DRAM take 0.1 s whatever the loop's speed.
        work, rest = 4e9 / 1e10, PACKING + 1e9 / 10e9
        ms = lambda factor: 1e3 * (factor * work + rest)  # noqa: E731
        m = build([point("tiled/scalar", 512, ms(2), io_bytes=1e9), point("tiled/scalar", 1024, ms(2), io_bytes=1e9),
                   point("tiled/scalar", 2048, ms(3), io_bytes=1e9), point("tiled/scalar", 256, ms(10), io_bytes=1e9)])
        self.assertAlmostEqual(m.factors["tiled/scalar"], 2.0)  # the median over n >= 512
        errors = {p.record.n: p.error for p in m.predictions}
        self.assertAlmostEqual(errors[512], 0.0)
        self.assertAlmostEqual(errors[2048], ms(2) / ms(3) - 1)
        p = m.predictions[0]
        self.assertAlmostEqual(p.phases["products"], 2 * 4e9 / 1e10)
        self.assertAlmostEqual(p.phases["Q and O"], 0.1)

    def test_the_factor_scales_the_compute_before_the_sweeps_are_weighed_against_it(self):
        # naive/scalar: five sweeps of 3e9 bytes from DRAM (10 GB/s), 0.3 s each. The score pass's
        # products (0.2 s at factor 1, 0.4 s at 2) hide its sweep's 0.3 s but for 0.1 s at factor 1 and
        # wholly at 2, the blend pass likewise. Points measured exactly as factor 2 prices them must
        # give factor 2 and no error; scaling the prediction made at factor 1 would give 1.5.
        counts = dict(score_bytes=1.5e10, score_set_bytes=64 * MiB, score_sweeps=5)
        shapes = [("naive/scalar", n) for n in (512, 1024, 2048)]
        draft = build([point(kernel, n, 1.0, **counts) for kernel, n in shapes])
        machine = draft.machine

        def total(p, f):
            return sum(cost_model.raw_phases(machine, p.record, f).values())

        first = draft.predictions[0]
        self.assertAlmostEqual(total(first, 2.0) - total(first, 1.0), 0.4 - 0.2)
        exact = [1e3 * total(p, 2.0) for p in draft.predictions]
        m = build([point(kernel, n, ms, **counts) for (kernel, n), ms in zip(shapes, exact)], cv=0.0)
        self.assertAlmostEqual(m.factors["naive/scalar"], 2.0, places=6)
        self.assertTrue(all(abs(p.error) < 1e-6 for p in m.predictions))

    def test_a_plain_loops_exps_cost_only_what_exceeds_its_products(self):
        # 5e8 scalar exps (0.5 s) against 0.4 s of scalar products: the exps add 0.1 s
        (p,) = build([point("tiled/scalar", 1024, 1e3 * (0.5 + PACKING + IO), softmax_scores=5e8)],
                     cv=0.0).predictions
        self.assertAlmostEqual(p.factor, 1.0)
        self.assertAlmostEqual(p.phases["softmax"], 0.1)
        self.assertAlmostEqual(p.phases["products"], 0.4)

    def test_runs_without_the_constants_are_not_modelled(self):
        self.assertEqual(build([point("tiled/simd/avx2", 1024, 50.0)], {"num_cpus": 2}).predictions, [])
        bare = ("tiled/simd/avx2/n:1024/d:64/threads:1/causal:0", 50.0, {})
        self.assertEqual(build([bare]).predictions, [])


class Residuals(unittest.TestCase):
    def test_median_worst_and_the_points_outside_the_band(self):
        exact = 1e3 * (PRODUCTS + SOFTMAX + PACKING + IO)
        m = build([point("tiled/simd/avx2", 512, exact), point("tiled/simd/avx2", 1024, exact * 1.1),
                   point("tiled/simd/avx2", 2048, exact / 0.7), point("tiled/simd/avx2", 256, exact * 3)])
        (r,) = cost_model.residuals(m)
        self.assertEqual(r.points, 3)  # n = 256 is not targeted
        self.assertEqual(r.worst.record.n, 2048)
        self.assertEqual([p.record.n for p in r.outside], [2048])
        self.assertIn("under-predicted", cost_model.miss_reason(r.outside[0]))
        self.assertIn("products", cost_model.miss_reason(r.outside[0]))

    def test_a_two_thread_point_no_faster_than_one_thread_is_named(self):
        exact = 1e3 * (PRODUCTS + SOFTMAX + PACKING + IO)
        m = build([point("tiled/simd/avx2", 1024, exact), point("tiled/simd/avx2", 1024, exact, threads=2)])
        two = m.find("tiled/simd/avx2", 1024, 64, 2)
        self.assertFalse(two.within_band)  # predicted about half the measured time
        self.assertIn("only 1.00x faster than on one thread", cost_model.miss_reason(two, m))
        self.assertIn("under-predicted", cost_model.miss_reason(two))  # without the model to compare

    def test_predicted_crossover_interpolates_in_log_n(self):
        # tiled's predicted time is the same everywhere; naive's the products times n / 1024
        points = [point("tiled/simd/avx2", n, 10.0, score_fmas=1e9, blend_fmas=1e9) for n in (512, 1024, 2048)]
        points += [point("naive/simd/avx2", n, 10.0, score_fmas=1e9 * n / 1024, blend_fmas=1e9 * n / 1024)
                   for n in (512, 2048)]
        m = build(points)
        crossing = cost_model.predicted_crossover(m, "tiled/simd/avx2", "naive/simd/avx2", 64, 1)
        self.assertTrue(512 < crossing < 2048)
        self.assertIsNone(cost_model.predicted_crossover(m, "naive/simd/avx2", "tiled/simd/avx2", 64, 1))
        # naive priced above tiled at both lengths: faster everywhere, said as 0
        slow = build([point("tiled/simd/avx2", n, 10.0) for n in (512, 2048)]
                     + [point("naive/simd/avx2", n, 10.0, score_fmas=2e9) for n in (512, 2048)])
        self.assertEqual(cost_model.predicted_crossover(slow, "tiled/simd/avx2", "naive/simd/avx2", 64, 1), 0.0)


class CacheExits(unittest.TestCase):
    def test_predicted_and_measured_exit_of_the_score_matrix(self):
        # The sweeps read 8 MiB at 50 GB/s, 5x DRAM's 10: the fast sets end there. A naive kernel's
        # 16 MiB score matrix at n = 2048 is beyond; its GFLOP/s (support: 1 / ms) falls most from 1024.
        m = build([point("naive/simd/avx2", 512, 1.0, score_set_bytes=1 * MiB),
                   point("naive/simd/avx2", 1024, 1.1, score_set_bytes=4 * MiB),
                   point("naive/simd/avx2", 2048, 2.0, score_set_bytes=16 * MiB)])
        self.assertEqual(cost_model.fast_set_bytes(m.machine), 8 * MiB)
        (e,) = cost_model.cache_exits(m)
        self.assertEqual((e.kernel, e.d, e.predicted_n, e.fall_from, e.fall_to), ("naive/simd/avx2", 64, 2048, 1024, 2048))
        self.assertAlmostEqual(e.fall, 1.1 / 2.0)


class LaterReadings(unittest.TestCase):
    """The constants measured again: among the matrix's points (`constants/` repetitions in results.json)
    and after the study's last window (constants.json next to the results)."""

    def later(self, values: dict, context: dict | None = None, name: str = "constants/threads:2",
              among: list | None = None) -> cost_model.Model:
        from attnbench_report.load import results as loader

        name_, ms, counters = point("tiled/simd/avx2", 1024, 50.0)
        benchmarks = support.benchmark_entries(name_, [ms * 0.99, ms, ms * 1.01], counters=counters)
        benchmarks += among or []
        folder = Path(tempfile.mkdtemp(prefix="attnbench-later-", dir=support.output_root()))
        support.write_results(folder, benchmarks, MACHINE)
        entry = dict({"name": name + "/iterations:1/repeats:1/real_time", "run_type": "iteration",
                      "real_time": 35.0, "time_unit": "s"}, **values)
        (folder / "constants.json").write_text(json.dumps(
            {"context": context or {k: MACHINE[k] for k in ("host_name",)}, "benchmarks": [entry]}))
        return cost_model.build(loader.load([folder]))

    def test_each_constant_from_its_faster_reading(self):
        model = self.later({"products_flops_avx2_d64": 2e11, "read_gbs_l2": 50.0,
                            "softmax_s_per_score_avx2_d64": 0.5e-9, "task_s_threads_2": 2e-6,
                            "read_set_bytes_l2": 1.0})
        m = model.machine
        self.assertEqual(m.number("products_flops_avx2_d64"), 2e11)  # a higher rate after
        self.assertEqual(m.number("read_gbs_l2"), 100.0)  # a lower rate after: the first stands
        self.assertEqual(m.number("softmax_s_per_score_avx2_d64"), 0.5e-9)  # a lower cost after
        self.assertEqual(m.number("task_s_threads_2"), 1e-6)  # a higher cost after: the first stands
        self.assertEqual(m.number("read_set_bytes_l2"), 512 * KiB)  # a size is not a speed
        self.assertEqual(m.number("read_gbs_l1"), 200.0)  # read once
        self.assertAlmostEqual(model.predictions[0].phases["products"], PRODUCTS / 2)
        self.assertEqual(m.gains(), {"products_flops_avx2_d64": 2.0, "read_gbs_l2": 0.5,
                                     "softmax_s_per_score_avx2_d64": 2.0, "task_s_threads_2": 0.5})
        data = cost_model.to_json(model)
        self.assertEqual(data["constants_gain_over_first"]["read_gbs_l2"], 1.0)
        self.assertEqual(data["constants_readings"], {"before_points": 1, "among_points": 0, "after_last_window": 1})

    def test_readings_among_the_points_the_fastest_of_all(self):
        def reading(index: int, **values) -> dict:
            return dict({"name": "constants/threads:2/iterations:1/repeats:3/real_time", "run_type": "iteration",
                         "repetitions": 3, "repetition_index": index, "real_time": 35.0, "time_unit": "s"}, **values)

        among = [reading(0, products_flops_avx2_d64=1.5e11, read_gbs_l2=120.0, task_s_threads_2=0.8e-6),
                 reading(1, products_flops_avx2_d64=3e11, read_gbs_l2=110.0, task_s_threads_2=0.5e-6),
                 reading(2, products_flops_avx2_d64=9e11, error_occurred=True),  # a failed reading
                 dict(reading(0, products_flops_avx2_d64=8e11, task_s_threads_2=1e-9),  # an aggregate
                      run_type="aggregate", aggregate_name="stddev")]
        model = self.later({"products_flops_avx2_d64": 2e11, "read_gbs_l2": 130.0}, among=among)
        m = model.machine
        self.assertEqual(m.number("products_flops_avx2_d64"), 3e11)  # among the points: the fastest
        self.assertEqual(m.number("read_gbs_l2"), 130.0)  # after the last window: the fastest
        self.assertEqual(m.number("task_s_threads_2"), 0.5e-6)  # a cost: the least
        self.assertEqual((m.later.among_points, m.later.after), (2, True))
        self.assertEqual(len(model.predictions), 1)  # the readings are not points
        self.assertAlmostEqual(model.predictions[0].phases["products"], PRODUCTS / 3)
        from attnbench_report.narrative import model as narrative_model

        phrase = narrative_model.readings_phrase(m)
        self.assertIn("the fastest of 4 readings: before the points, 2 among them", phrase)
        self.assertIn("a later one was faster for 3 of 3", phrase)

    def test_a_reading_from_another_machine_or_failed_is_not_taken(self):
        m = self.later({"products_flops_avx2_d64": 2e11}, context={"host_name": "elsewhere"}).machine
        self.assertEqual(m.number("products_flops_avx2_d64"), 1e11)
        self.assertFalse(m.later.after)
        failed = self.later({"products_flops_avx2_d64": 2e11, "error_occurred": True}).machine
        self.assertEqual(failed.number("products_flops_avx2_d64"), 1e11)

    def test_a_broken_file_is_an_error_naming_it(self):
        table = support.load_points([point("tiled/simd/avx2", 1024, 50.0)], MACHINE)
        (table.runs[0].path.parent / "constants.json").write_text("{")
        with self.assertRaisesRegex(ValueError, "constants.json: not the constants window"):
            cost_model.build(table)


class Output(unittest.TestCase):
    def test_model_json_and_the_report_section(self):
        from attnbench_report import cli as report

        folder = Path(tempfile.mkdtemp(prefix="attnbench-model-", dir=support.output_root()))
        benchmarks = []
        for kernel in ("tiled/simd/avx2", "naive/simd/avx2"):
            for n in (512, 1024, 4096):
                name, ms, counters = point(kernel, n, 45.0 * n / 1024)
                flops = 4.0 * n * n * 64  # what the other sections read (the roofline among them)
                counters.update({"flops_per_call": flops, "bytes_moved": 16.0 * n * 64, "GFLOP/s": flops / ms / 1e6})
                benchmarks += support.benchmark_entries(name, [ms * 0.99, ms, ms * 1.01], counters=counters)
        support.write_results(folder, benchmarks, MACHINE)
        (folder / "constants.json").write_text(json.dumps({"context": {"host_name": "synthetic"}, "benchmarks": [
            {"name": "constants/threads:2", "read_gbs_l1": 250.0, "read_gbs_l2": 90.0}]}))
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(report.main([str(folder)]), 0)
        data = json.loads((folder / cost_model.FILE_NAME).read_text())
        self.assertEqual(len(data["points"]), 6)
        first = data["points"][0]
        self.assertEqual(set(first["phase_shares"]), set(cost_model.PHASES))
        self.assertAlmostEqual(sum(first["phase_shares"].values()), 1.0)
        self.assertTrue(math.isclose(first["error"], first["predicted_s"] / first["measured_s"] - 1))
        text = (folder / "report.md").read_text()
        self.assertIn("## Where the time goes: a cost model", text)
        self.assertIn("the fastest of 2 readings: before the points and after the study's last window "
                      "(`constants.json`); a later one was faster for 1 of 2, by a median 25.0%", text)
        self.assertIn("fig13_model.png", text)
        self.assertIn("Where `tiled/simd/avx2`'s time goes at n = 4096", text)
        self.assertTrue((folder / "fig13_model.svg").is_file())


if __name__ == "__main__":
    unittest.main()
