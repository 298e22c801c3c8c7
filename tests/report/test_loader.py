"""The loader: benchmark names into columns, aggregates into median/mean/CV, skipped points, runs."""
from __future__ import annotations

import json
import math
import tempfile
import unittest
from pathlib import Path

import support  # noqa: F401
from attnbench_report.load import results as loader


class ParseName(unittest.TestCase):
    def test_aggregate_with_isa(self):
        c = loader.parse_name("tiled/simd/avx512f/n:128/d:64/threads:1/causal:0/repeats:3/real_time_mean")
        self.assertEqual(c["kernel"], "tiled/simd/avx512f")
        self.assertEqual((c["strategy"], c["backend"], c["isa"]), ("tiled", "simd", "avx512f"))
        self.assertEqual((c["n"], c["d"], c["threads"], c["causal"]), (128, 64, 1, False))
        self.assertEqual(c["aggregate"], "mean")
        self.assertFalse(c["one_call_per_repetition"])

    def test_iterations_before_repeats(self):
        c = loader.parse_name("naive/simd/sse4.2/n:2048/d:128/threads:2/causal:1/iterations:1/repeats:3/real_time_cv")
        self.assertEqual(c["kernel"], "naive/simd/sse4.2")
        self.assertEqual(c["isa"], "sse4.2")
        self.assertEqual((c["n"], c["d"], c["threads"], c["causal"]), (2048, 128, 2, True))
        self.assertTrue(c["one_call_per_repetition"])
        self.assertEqual(c["aggregate"], "cv")

    def test_kernel_without_isa_and_run_name(self):
        c = loader.parse_name("naive/openblas/n:512/d:64/threads:1/causal:0/repeats:3/real_time")
        self.assertEqual((c["kernel"], c["backend"], c["isa"]), ("naive/openblas", "openblas", ""))
        self.assertIsNone(c["aggregate"])

    def test_matrix_family(self):
        c = loader.parse_name("tiled/scalar/n:256/d:32/threads:1/causal:0/repeats:3/real_time")
        self.assertEqual((c["family"], c["n"], c["q_len"], c["kv_len"], c["heads"], c["kv_heads"]),
                         ("matrix", 256, 256, 256, 1, 1))

    def test_decoding_shape(self):
        c = loader.parse_name("tiled/simd/avx2/q:1/kv:8192/d:128/threads:2/causal:0/iterations:1/repeats:3/real_time_median")
        self.assertEqual((c["kernel"], c["family"], c["q_len"], c["kv_len"], c["n"], c["d"], c["threads"]),
                         ("tiled/simd/avx2", "decode", 1, 8192, 8192, 128, 2))

    def test_grouped_query_shape(self):
        c = loader.parse_name("naive/simd/avx512f/q:512/kv:512/d:128/heads:8/kv_heads:2/threads:1/causal:0/repeats:3/"
                              "real_time_mean")
        self.assertEqual((c["family"], c["n"], c["heads"], c["kv_heads"], c["aggregate"]), ("gqa", 512, 8, 2, "mean"))

    def test_every_aggregate_suffix(self):
        for stat in ("mean", "median", "stddev", "cv"):
            c = loader.parse_name(f"tiled/scalar/n:128/d:32/threads:1/causal:0/repeats:5/real_time_{stat}")
            self.assertEqual((c["kernel"], c["aggregate"]), ("tiled/scalar", stat))

    def test_bad_names_raise(self):
        for name in ("tiled/simd/n:128/d:64", "BM_Something/128", "n:128/d:64/threads:1/causal:0",
                     "tiled/simd/avx2/q:1/d:128/threads:1/causal:0"):
            with self.assertRaises(ValueError, msg=name):
                loader.parse_name(name)


class LoadFixture(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.table = loader.load([support.FIXTURE])
        cls.raw = json.loads(support.FIXTURE.read_text())["benchmarks"]

    def test_one_record_per_run_name(self):
        self.assertEqual(len(self.table), len({b["run_name"] for b in self.raw}))
        self.assertEqual(len({r.point for r in self.table}), len(self.table))

    def test_aggregates_become_median_mean_cv(self):
        by_name = {}
        for b in self.raw:
            if b["run_type"] == "aggregate":
                by_name.setdefault(b["run_name"], {})[b["aggregate_name"]] = b
        self.assertTrue(by_name)
        for r in self.table.measured():
            aggregates = by_name[r.name]
            self.assertEqual(aggregates["median"]["time_unit"], "ms")
            self.assertAlmostEqual(r.time_ms_median, aggregates["median"]["real_time"])
            self.assertAlmostEqual(r.time_ms_mean, aggregates["mean"]["real_time"])
            self.assertAlmostEqual(r.time_ms_cv, aggregates["cv"]["real_time"])
            self.assertAlmostEqual(r.gflops_median, aggregates["median"]["GFLOP/s"])
            self.assertAlmostEqual(r.gflops_cv, aggregates["cv"]["GFLOP/s"])
            self.assertAlmostEqual(r.scratch_bytes_median, aggregates["median"]["scratch_bytes"])
            self.assertAlmostEqual(r.flops_per_call_median, aggregates["median"]["flops_per_call"])
            self.assertAlmostEqual(r.bytes_moved_mean, aggregates["mean"]["bytes_moved"])
            self.assertAlmostEqual(r.rss_peak_bytes_median, aggregates["median"]["rss_peak_bytes"])
            self.assertAlmostEqual(r.score_matrix_bytes_median, 4.0 * r.n * r.n)

    def test_counters_agree_with_the_name(self):
        for r in self.table.measured():
            pairs = r.n * (r.n + 1) / 2 if r.causal else r.n * r.n
            self.assertAlmostEqual(r.flops_per_call_median, 4.0 * pairs * r.d, delta=1e-6 * r.flops_per_call_median)

    def test_skipped_points(self):
        errors = {b["run_name"]: b["error_message"] for b in self.raw if b.get("error_occurred")}
        skipped = self.table.skipped()
        self.assertEqual({r.name for r in skipped}, set(errors))
        for r in skipped:
            self.assertTrue(r.skipped)
            self.assertEqual("skipped: " + r.skip_reason, errors[r.name])
            self.assertTrue(math.isnan(r.time_ms_median) and math.isnan(r.gflops_median))
        for r in self.table.measured():
            self.assertEqual(r.skip_reason, "")

    def test_context_and_ceilings(self):
        run = self.table.runs[0]
        context = json.loads(support.FIXTURE.read_text())["context"]
        self.assertIn(context["host_name"], run.label)  # a file not named results.json: host and date
        self.assertEqual(run.fma_peak_gflops(1), float(context["fma_peak_gflops_threads_1"]))
        self.assertEqual(run.triad_gbs(1), float(context["triad_gbs_threads_1"]))
        self.assertEqual(run.threads_all, int(context["threads_all"]))
        self.assertEqual(run.memory_bytes, float(context["memory_bytes"]))
        self.assertEqual(run.dispatch("tiled/simd"), context["dispatch tiled/simd"])
        self.assertIsNone(run.fma_peak_gflops(999))

    def test_filters(self):
        kernel = self.table.measured().values("kernel")[0]
        n, t = self.table.series("time_ms_median", kernel=kernel, d=64, threads=1, causal=False)
        self.assertTrue(len(n) >= 2)
        self.assertEqual(list(n), sorted(n))
        self.assertTrue(all(r.kernel == kernel for r in self.table.where(kernel=kernel)))
        self.assertEqual(len(self.table.where(threads=[1, 2])), len(self.table))
        self.assertEqual(len(self.table.measured()) + len(self.table.skipped()), len(self.table))


class LoadSynthetic(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="attnbench-loader-"))

    def test_time_units_convert_to_ms(self):
        name = "tiled/scalar/n:128/d:64/threads:1/causal:0"
        path = support.write_results(self.dir / "ns", support.benchmark_entries(name, [2.0, 2.2, 2.4], time_unit="ns"))
        r = loader.load([path]).one(kernel="tiled/scalar")
        self.assertAlmostEqual(r.time_ms_median, 2.2)
        self.assertAlmostEqual(r.time_ms_cv, 0.2 / 2.2, places=6)  # a fraction whatever the unit

    def test_repetitions_without_aggregates(self):
        name = "naive/scalar/n:256/d:32/threads:1/causal:0"
        path = support.write_results(self.dir / "reps", support.benchmark_entries(name, [1.0, 3.0, 2.0, 10.0],
                                                                                 aggregates=False))
        r = loader.load([path]).one(kernel="naive/scalar")
        self.assertAlmostEqual(r.time_ms_median, 2.5)
        self.assertAlmostEqual(r.time_ms_mean, 4.0)
        self.assertGreater(r.time_ms_cv, 0.5)
        self.assertEqual(r.time_ms_min, 1.0)
        self.assertEqual(r.repetitions, 4)

    def test_the_min_aggregate_is_the_fastest_repetition(self):
        name = "naive/scalar/n:256/d:32/threads:1/causal:0"
        path = support.write_results(self.dir / "min", support.benchmark_entries(name, [3.0, 2.0, 4.0],
                                                                                time_unit="s"))
        r = loader.load([path]).one(kernel="naive/scalar")
        self.assertEqual(r.name, name + "/repeats:3/real_time")  # `_min` is an aggregate's suffix
        self.assertAlmostEqual(r.time_ms_min, 2.0)
        self.assertAlmostEqual(r.time_ms_median, 3.0)

    def test_cache_sizes_from_sysconf_only_where_google_benchmark_lists_none(self):
        sysconf = {"num_cpus": 2, "cache_bytes_l1d": "49152", "cache_bytes_l2": "1048576", "cache_bytes_l3": "33554432"}
        table = support.load_points([("tiled/scalar/n:128/d:64/threads:1/causal:0", 1.0, {})],
                                    dict(sysconf, caches=[]))
        run = table.runs[0]
        self.assertEqual([run.cache_bytes(level) for level in (1, 2, 3)], [49152.0, 1048576.0, 33554432.0])
        self.assertEqual([c["num_sharing"] for c in run.caches], [1, 1, 2])  # the L3 taken as shared
        self.assertTrue(all(c["source"] == "sysconf" for c in run.caches))
        listed = [{"level": 2, "type": "Unified", "size": 524288, "num_sharing": 1}]
        run = support.load_points([("tiled/scalar/n:128/d:64/threads:1/causal:0", 1.0, {})],
                                  dict(sysconf, caches=listed)).runs[0]
        self.assertEqual(run.cache_bytes(2), 524288.0)  # Google Benchmark's, where it has them
        self.assertIsNone(run.cache_bytes(3))

    def test_skipped_with_one_entry_per_repetition(self):
        benchmarks = support.skipped_entries("naive/scalar/n:16384/d:64/threads:1/causal:0", "over budget", 5)
        benchmarks += support.benchmark_entries("naive/scalar/n:128/d:64/threads:1/causal:0", [1.0, 1.0, 1.0])
        table = loader.load([support.write_results(self.dir / "skip", benchmarks)])
        self.assertEqual(len(table), 2)
        (r,) = table.skipped().records
        self.assertEqual((r.n, r.skip_reason, r.repetitions, r.one_call_per_repetition), (16384, "over budget", 5, True))

    def test_several_runs(self):
        name = "tiled/simd/avx2/n:128/d:64/threads:1/causal:0"
        a = support.write_results(self.dir / "machine-a", support.benchmark_entries(name, [1.0, 1.0, 1.0]))
        b = support.write_results(self.dir / "machine-b", support.benchmark_entries(name, [2.0, 2.0, 2.0]))
        c = support.write_results(self.dir / "again" / "machine-a", support.benchmark_entries(name, [3.0, 3.0, 3.0]))
        table = loader.load([a, b.parent, c])  # a folder works as well as its results.json
        self.assertEqual([r.index for r in table.runs], [0, 1, 2])
        labels = [r.label for r in table.runs]
        self.assertEqual(labels[:2], ["machine-a", "machine-b"])
        self.assertEqual(len(set(labels)), 3)  # a repeated folder name is made unique
        self.assertEqual([table.one(run=i).time_ms_median for i in range(3)], [1.0, 2.0, 3.0])

    def test_missing_file_and_wrong_json(self):
        with self.assertRaises(FileNotFoundError):
            loader.load([self.dir / "nowhere"])
        wrong = self.dir / "wrong.json"
        wrong.write_text('{"something": []}')
        with self.assertRaises(ValueError):
            loader.load([wrong])

    def test_families_are_distinct_points(self):
        benchmarks = []
        for name in ("tiled/simd/avx2/n:512/d:128/threads:1/causal:0",
                     "tiled/simd/avx2/q:512/kv:512/d:128/heads:8/kv_heads:8/threads:1/causal:0",
                     "tiled/simd/avx2/q:512/kv:512/d:128/heads:8/kv_heads:2/threads:1/causal:0",
                     "tiled/simd/avx2/q:1/kv:8192/d:128/threads:1/causal:0"):
            benchmarks += support.benchmark_entries(name, [1.0, 1.0, 1.0])
        table = loader.load([support.write_results(self.dir / "families", benchmarks)])
        self.assertEqual(len({r.point for r in table}), 4)
        self.assertEqual([r.family for r in table.matrix()], ["matrix"])
        shapes = sorted(r.shape for r in table)
        self.assertEqual(shapes, ["n = 512", "n = 512, 8 heads over 2 kv heads", "n = 512, 8 heads over 8 kv heads",
                                  "q = 1, kv = 8192"])

    def test_kernel_order(self):
        kernels = ["naive/scalar", "tiled/simd/sse4.2", "naive/openblas", "tiled/simd/avx512f", "tiled/autovec",
                   "naive/simd/avx512f"]
        self.assertEqual(sorted(kernels, key=loader.kernel_sort_key),
                         ["tiled/simd/avx512f", "naive/simd/avx512f", "tiled/simd/sse4.2", "naive/openblas",
                          "tiled/autovec", "naive/scalar"])


if __name__ == "__main__":
    unittest.main()
