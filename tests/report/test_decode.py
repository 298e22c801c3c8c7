"""The decode window in the report: loader_decode on the real quick run's decode.json (names, medians
and CVs as the JSON has them, errors, repetitions only, a name it cannot read), analysis_decode's
numbers recomputed here from the raw JSON, the targets on the fixture (none can be read) and on
altered copies (a smaller L3, an n = 4096 prefill), and the section "Decoding against a KV cache" in
the report built with the fixture next to the results, or without it."""
from __future__ import annotations

import copy
import io
import json
import shutil
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np

import support
from attnbench_report.analysis import decode as ad
from attnbench_report import formatting as fmt
from attnbench_report.load import results as loader
from attnbench_report.load import decode as ld
from attnbench_report.narrative import decode as narrative_decode
from attnbench_report import cli as report
from attnbench_report.document import Document

FIXTURE = support.ROOT / "tests" / "fixtures" / "quick_decode.json"
RAW = json.loads(FIXTURE.read_text(encoding="utf-8"))


def raw(name: str, aggregate: str = "median") -> dict:
    """The fixture's aggregate entry of the point whose run_name starts with `name` + "/"."""
    return next(b for b in RAW["benchmarks"]
                if b["run_name"].startswith(name + "/") and b["aggregate_name"] == aggregate)


def window_of(data: dict) -> ld.DecodeWindow:
    folder = Path(tempfile.mkdtemp(prefix="attnbench-decode-", dir=support.output_root()))
    (folder / ld.FILE_NAME).write_text(json.dumps(data), encoding="utf-8")
    return ld.load_file(folder / ld.FILE_NAME)


class Loader(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.window = ld.load_file(FIXTURE)

    def test_names(self):
        c = ld.parse_name("decode/tiled/simd/avx512f/layout:llama/rows:4/kv:16384/type:bf16/threads:2/min_time:0.050/"
                          "repeats:3/real_time_cv")
        self.assertEqual((c["family"], c["kernel"], c["layout"], c["q_heads"], c["kv_heads"], c["rows"], c["kv"],
                          c["d"], c["dtype"], c["threads"]),
                         ("decode", "tiled/simd/avx512f", "llama", 32, 8, 4, 16384, 128, "bf16", 2))
        c = ld.parse_name("generate/tiled/simd/avx2/layout:llama/start:4096/tokens:64/type:f16/threads:1/iterations:1/"
                          "repeats:3/manual_time")
        self.assertEqual((c["family"], c["kernel"], c["rows"], c["kv"], c["tokens"]), ("generate", "tiled/simd/avx2", 1,
                                                                                        4096, 64))
        c = ld.parse_name("prefill/tiled/simd/avx512f/n:1024/d:128/type:f32/threads:2/min_time:0.050/repeats:3/"
                          "real_time")
        self.assertEqual((c["family"], c["rows"], c["kv"], c["d"], c["layout"]), ("prefill", 1024, 1024, 128, "head"))
        for bad in ("tiled/simd/n:64/d:8/threads:1/causal:0", "decode/tiled/simd/layout:head/kv:64/type:f32/threads:1",
                    "decode/tiled/simd/layout:wide/rows:1/kv:64/type:f32/threads:1",
                    "decode/tiled/simd/layout:head/rows:1/kv:64/type:f8/threads:1"):
            with self.assertRaises(ValueError, msg=bad):
                ld.parse_name(bad)

    def test_fixture_points_are_the_json_aggregates(self):
        table = self.window.table
        self.assertEqual(len(table), 60)
        self.assertEqual([len(table.where(family=f)) for f in ld.FAMILIES], [48, 6, 6])
        self.assertEqual(len(table.measured()), 60)
        p = table.one(family="decode", layout="llama", rows=1, kv=16384, dtype="f16", threads=2)
        name = "decode/tiled/simd/avx512f/layout:llama/rows:1/kv:16384/type:f16/threads:2"
        self.assertEqual(p.value("token_us"), raw(name)["token_us"])
        self.assertEqual(p.value("time_us"), raw(name)["real_time"])  # time_unit us
        self.assertEqual(p.cv["time_us"], raw(name, "cv")["real_time"])
        self.assertEqual((p.q_heads, p.kv_heads, p.rows_per_kv_head, p.repetitions), (32, 8, 4, 3))
        self.assertEqual(self.window.run.triad_gbs(2), float(RAW["context"]["triad_gbs_threads_2"]))

    def test_errors_and_repetitions_only(self):
        name = "decode/tiled/simd/avx2/layout:head/rows:1/kv:64/type:f16/threads:1/repeats:2/real_time"
        reps = [{"name": name, "run_name": name, "run_type": "iteration", "repetitions": 2, "real_time": t,
                 "time_unit": "ms", "token_us": t * 1e3, "kv_bytes": 32768.0} for t in (1.0, 3.0)]
        failed = "prefill/tiled/simd/avx2/n:64/d:128/type:bf16/threads:1/repeats:2/real_time"
        errors = [{"name": failed, "run_name": failed, "run_type": "iteration", "repetitions": 2,
                   "error_occurred": True, "error_message": "failed: cache full"}] * 2
        w = window_of({"context": {}, "benchmarks": reps + errors})
        p = w.table.one(family="decode")
        self.assertEqual((p.value("time_us"), p.value("token_us")), (2000.0, 2000.0))
        self.assertAlmostEqual(p.cv["time_us"], 2 ** 0.5 / 2)
        bad = w.table.one(family="prefill")
        self.assertEqual((bad.skipped, bad.status, bad.reason), (True, "failed", "cache full"))
        with self.assertRaisesRegex(ValueError, "decode.json: benchmark name"):
            window_of({"benchmarks": [dict(reps[0], name="x/y", run_name="x/y")]})

    def test_interleaved_triad_points_replace_the_context_triad(self):
        data = copy.deepcopy(RAW)
        name = "triad/threads:2/iterations:1/repeats:3"
        data["benchmarks"] += [{"name": name + "_median", "run_name": name, "run_type": "aggregate",
                                "aggregate_name": "median", "repetitions": 3, "real_time": 1.0,
                                "time_unit": "us", "GB/s": 10.0}]
        w = window_of(data)
        self.assertEqual(w.run.triad_gbs(2), 10.0)
        self.assertEqual(w.context["triad_gbs_threads_2_before"], RAW["context"]["triad_gbs_threads_2"])
        self.assertFalse([p for p in w.table if p.name.startswith("triad/")])
        entry = raw("decode/tiled/simd/avx512f/layout:llama/rows:1/kv:4096/type:f32/threads:2")
        p = w.table.one(family="decode", layout="llama", rows=1, kv=4096, dtype="f32", threads=2)
        self.assertAlmostEqual(p.value("pct_triad"), 100.0 * entry["GB/s"] / 10.0)
        one = w.table.one(family="decode", layout="llama", rows=1, kv=4096, dtype="f32", threads=1)
        self.assertAlmostEqual(one.value("pct_triad"), raw(
            "decode/tiled/simd/avx512f/layout:llama/rows:1/kv:4096/type:f32/threads:1")["pct_triad"])

    def test_types_points_are_read_apart_from_the_decode_points(self):
        window = window_of(with_types(RAW, {"f16": 1.5, "bf16": 1.9}, {"f16": 0.04, "bf16": 0.01}))
        self.assertEqual(len(window.table), len(self.window.table))  # not a decode point
        [p] = window.types
        self.assertEqual((p.kernel, p.layout, p.rows, p.kv, p.threads, p.repetitions, p.error),
                         ("tiled/simd/avx512f", "llama", 1, 16384, 2, 3, ""))
        self.assertEqual((p.speedup("f16"), p.noise("f16"), p.speedup("bf16"), p.median["rounds"]),
                         (1.5, 0.04, 1.9, 30.0))
        failed = window_of(with_types(RAW, {}, {}, error="failed: out of memory")).types
        self.assertEqual([(p.error, p.median) for p in failed], [("failed: out of memory", {})])
        self.assertEqual(ld.load_file(FIXTURE).types, [])  # a window from before the types points
        broken = copy.deepcopy(RAW)
        broken["benchmarks"].append(dict(RAW["benchmarks"][0], name="types/tiled/simd/rows:1_median",
                                         run_name="types/tiled/simd/rows:1"))
        with self.assertRaisesRegex(ValueError, r"decode\.json: benchmark name 'types/tiled/simd/rows:1'.*missing"):
            window_of(broken)

    def test_prefill_types_points_are_read_apart_from_the_decode_types(self):
        window = window_of(with_types(RAW, {"f16": 0.95, "bf16": 0.88}, {"f16": 0.03, "bf16": 0.02},
                                      point=PREFILL_TYPES.format(2)))
        self.assertEqual((len(window.table), window.types), (len(self.window.table), []))
        [p] = window.prefill_types
        self.assertEqual((p.family, p.kernel, p.layout, p.rows, p.kv, p.threads, p.repetitions, p.error),
                         ("prefill", "tiled/simd/avx512f", "head", 4096, 4096, 2, 3, ""))
        self.assertEqual((p.speedup("f16"), p.noise("f16"), p.speedup("bf16")), (0.95, 0.03, 0.88))
        self.assertAlmostEqual(p.median["gflops_f32"], 4 * 128 * 4096 * 4097 / 2 / 2e6)
        broken = copy.deepcopy(RAW)
        broken["benchmarks"].append(dict(RAW["benchmarks"][0], name="types/tiled/simd/prefill:64/threads:1_median",
                                         run_name="types/tiled/simd/prefill:64/threads:1"))
        with self.assertRaisesRegex(ValueError, r"benchmark name 'types/tiled/simd/prefill:64/threads:1'.*missing d"):
            window_of(broken)

    def test_absent_next_to_a_run(self):
        run = loader.load([support.FIXTURE]).runs[0]
        self.assertIsNone(ld.load_next_to(run))


def altered(l3_bytes=None, prefill_n=None) -> dict:
    """A copy of the fixture with a smaller L3 in its context, or its prefill points renamed to another n."""
    data = copy.deepcopy(RAW)
    if l3_bytes is not None:
        for cache in data["context"]["caches"]:
            if cache["level"] == 3:
                cache["size"] = l3_bytes
    if prefill_n is not None:
        for b in data["benchmarks"]:
            for key in ("name", "run_name"):
                b[key] = b[key].replace("/n:1024/", f"/n:{prefill_n}/")
    return data


LLAMA = "decode/tiled/simd/avx512f/layout:llama/rows:1/kv:16384/type:{}/threads:2"
TYPES_POINT = "types/tiled/simd/avx512f/layout:llama/rows:1/kv:16384/threads:2/iterations:1/repeats:3/manual_time"


def with_types(data: dict, speedups: dict, cvs: dict, error: str = "", point: str = TYPES_POINT) -> dict:
    """The data with a types point (as the decode window writes it: median and cv aggregates) named
    `point`, by default at the llama layout's rows:1, kv 16384 on 2 threads; `speedups` and `cvs` per
    16-bit type. With `error`, its repetitions instead, each failed with that message."""
    data = copy.deepcopy(data)
    if error:
        data["benchmarks"] += [{"name": point, "run_name": point, "run_type": "iteration",
                                "repetitions": 3, "error_occurred": True, "error_message": error}] * 3
        return data
    prefill = "/prefill:" in point
    for aggregate in ("median", "cv"):
        entry = {"name": f"{point}_{aggregate}", "run_name": point, "run_type": "aggregate",
                 "repetitions": 3, "aggregate_name": aggregate, "real_time": 2000.0 if aggregate == "median" else 0.02,
                 "time_unit": "us", "rounds": 30.0 if aggregate == "median" else 0.0}
        for t, us in (("f32", 2000.0), ("f16", 1000.0), ("bf16", 1100.0)):
            entry[f"us_{t}"] = us if aggregate == "median" else 0.02
            if prefill:  # a causal prefill of n = 4096, d = 128: 4 d FLOPs per pair scored
                entry[f"gflops_{t}"] = 4 * 128 * 4096 * 4097 / 2 / us / 1e3 if aggregate == "median" else 0.02
            else:
                entry[f"gbs_{t}"] = 134.2e6 * ld.TYPE_BYTES[t] / 4 / us / 1e3 if aggregate == "median" else 0.02
        for t in ("f16", "bf16"):
            entry[f"speedup_{t}"] = speedups[t] if aggregate == "median" else cvs[t]
        data["benchmarks"].append(entry)
    return data


def types_alone(data: dict) -> dict:
    """The data with its types points alone (as the decode study's call-by-call commands write it)."""
    return dict(data, benchmarks=[b for b in data["benchmarks"] if b["run_name"].startswith("types/")])


PREFILL_TYPES = "types/tiled/simd/avx512f/prefill:4096/d:128/threads:{}/iterations:1/repeats:3/manual_time"


class Analysis(unittest.TestCase):
    """analysis_decode's numbers at chosen points, recomputed here from the raw JSON and the shapes."""

    @classmethod
    def setUpClass(cls):
        cls.window = ld.load_file(FIXTURE)
        cls.machine = cls.window.run

    def row(self, **key):
        return next(r for r in ad.rows(self.window) if all(getattr(r, k) == v for k, v in key.items()))

    def test_one_point_from_the_raw_json(self):
        f32, f16 = raw(LLAMA.format("f32")), raw(LLAMA.format("f16"))
        kv_bytes = 8 * 16384 * 128 * 2 * 4  # kv_heads × kv × d × (K and V) × fp32 bytes
        self.assertEqual(f32["kv_bytes"], kv_bytes)
        self.assertAlmostEqual(kv_bytes / (f32["call_us"] * 1e-6) / 1e9, f32["GB/s"], places=6)
        row = self.row(layout="llama", rows=1, kv=16384, threads=2)
        self.assertAlmostEqual(row.speedup("f16"), f32["token_us"] / f16["token_us"])
        self.assertAlmostEqual(row.speedup("f16"), 2.0695, places=3)
        p = row.points["f32"]
        flops = 4 * 128 * 32 * 16384  # 4·d per score, 32 query heads × 1 row × 16384 keys
        self.assertAlmostEqual(ad.gflops(p), flops / (f32["call_us"] * 1e3))
        self.assertAlmostEqual(ad.pct_peak(self.machine, p), 100 * flops / (f32["call_us"] * 1e3) / 353.712409)
        self.assertAlmostEqual(ad.flop_per_byte(p), 2.0)  # 4 query heads per K/V head: 4 · 4d / (2 · 4d)
        self.assertEqual(ad.point_tier(self.machine, p), "L3")  # 134 MB: above 2 × 2 MiB of L2, under 260 MiB

    def test_targets_from_a_types_point_beyond_the_l3_alone(self):
        point = "types/tiled/simd/avx512f/layout:head/rows:1/kv:2097152/threads:2/iterations:1/repeats:3/manual_time"
        data = with_types(RAW, {"f16": 1.8, "bf16": 1.6}, {"f16": 0.01, "bf16": 0.01}, point=point)
        entry = next(b for b in data["benchmarks"] if b["name"] == point + "_median")
        f32_bytes = 2097152 * 2 * 128 * 4  # one head's K and V in fp32: beyond the fixture's 260 MiB L3
        for t in ("f32", "f16", "bf16"):
            entry[f"gbs_{t}"] = f32_bytes * ld.TYPE_BYTES[t] / 4 / entry[f"us_{t}"] / 1e3
        window = window_of(data)
        points = ad.alternated_points(window, "tiled/simd/avx512f", 2)
        self.assertEqual([(p.layout, p.kv, p.dtype) for p in points], [("head", 2097152, t) for t in ("f32", "f16", "bf16")])
        self.assertAlmostEqual(points[0].value("kv_bytes"), f32_bytes, delta=1)
        self.assertEqual(ad.alternated_points(window, "tiled/simd/avx512f", 1), [])  # no types point on 1 thread
        targets = ad.targets(window)
        self.assertEqual([(t.point.dtype, t.measured, t.met, t.call_by_call) for t in targets["speedup"]],
                         [("f16", 1.8, True, True), ("bf16", 1.6, False, True)])
        band = targets["bandwidth"]
        self.assertEqual([t.point.dtype for t in band], ["f32", "f16", "bf16"])
        self.assertAlmostEqual(band[0].measured, 100 * f32_bytes / 2000.0 / 1e3 / window.run.triad_gbs(2))
        self.assertTrue(all(t.call_by_call for t in band))

    def test_tiers_and_the_shared_l3(self):
        self.assertEqual(ad.tier(self.machine, 2 * 2 ** 20, 1), "L2")  # head, f16, kv 4096: exactly one L2
        self.assertEqual(ad.tier(self.machine, 4 * 2 ** 20, 1), "L3")
        self.assertEqual(ad.tier(self.machine, 4 * 2 ** 20, 2), "L2")  # two cores' private L2s
        self.assertEqual(ad.tier(self.machine, 261 * 2 ** 20, 2), "beyond L3")
        self.assertTrue(ad.l3_shared_and_huge(self.machine))  # 260 MiB over 2 CPUs
        self.assertFalse(ad.l3_shared_and_huge(window_of(altered(l3_bytes=32 * 2 ** 20)).run))

    def test_rows_per_kv_head_and_the_fixed_cost(self):
        groups = ad.intensities(self.window, "tiled/simd/avx512f")
        self.assertEqual([g.rows_per_kv_head for g in groups], [1, 4, 16])
        name = "decode/tiled/simd/avx512f/layout:head/rows:1/kv:{}/type:{}/threads:{}"
        ratios = [raw(name.format(kv, "f32", t))["token_us"] / raw(name.format(kv, "f16", t))["token_us"]
                  for kv in (4096, 16384) for t in (1, 2)]
        self.assertAlmostEqual(groups[0].speedup["f16"], float(np.median(ratios)))
        fit = next(f for f in ad.call_fits(self.window, "tiled/simd/avx512f")
                   if (f.smallest.layout, f.smallest.rows, f.smallest.dtype, f.smallest.threads)
                   == ("head", 1, "f32", 2))
        (b1, c1), (b2, c2) = [(raw(name.format(kv, "f32", 2))["kv_bytes"], raw(name.format(kv, "f32", 2))["call_us"])
                              for kv in (4096, 16384)]
        self.assertAlmostEqual(fit.fixed_us, c1 - b1 * (c2 - c1) / (b2 - b1), places=6)
        self.assertAlmostEqual(fit.marginal_gbs, (b2 - b1) / (c2 - c1) / 1e3, places=6)

    def test_generation_and_prefill(self):
        step = next(s for s in ad.steps(self.window) if (s.point.dtype, s.point.threads) == ("f32", 1))
        gen = raw("generate/tiled/simd/avx512f/layout:llama/start:4096/tokens:64/type:f32/threads:1")
        middle = gen["kv_bytes_end"] * (4096 + 32) / (4096 + 64)
        self.assertAlmostEqual(step.median_bytes, middle)
        self.assertAlmostEqual(step.gbs, middle / gen["token_us"] / 1e3)
        twin = raw("decode/tiled/simd/avx512f/layout:llama/rows:1/kv:4096/type:f32/threads:1")
        self.assertAlmostEqual(step.over_twin, gen["token_us"] / twin["call_us"])
        pre = next(p for p in ad.prefills(self.window) if p.threads == 1)
        name = "prefill/tiled/simd/avx512f/n:1024/d:128/type:{}/threads:1"
        self.assertAlmostEqual(pre.ratio("f16"),
                               raw(name.format("f16"))["GFLOP/s"] / raw(name.format("f32"))["GFLOP/s"])
        self.assertAlmostEqual(pre.pack_share("f16"), raw(name.format("f16"))["pack_ms"] * 1e3
                               / raw(name.format("f16"))["real_time"])

    def test_noise(self):
        cvs = [b["real_time"] for b in RAW["benchmarks"] if b["aggregate_name"] == "cv"]
        self.assertEqual(len(ad.noisy(self.window)), sum(cv > 0.05 for cv in cvs))

    def test_targets_cannot_be_read_from_the_quick_run(self):
        self.assertEqual(ad.targets(self.window), {"bandwidth": [], "speedup": [], "prefill": []})

    def test_targets_with_a_smaller_l3_and_an_n_4096_prefill(self):
        data = altered(l3_bytes=32 * 2 ** 20, prefill_n=4096)
        targets = ad.targets(window_of(data))
        # beyond 32 MiB on 2 threads: the llama layout at kv 16384 (134 MB fp32, 67 MB 16-bit), rows 1 and 4
        self.assertEqual(len(targets["bandwidth"]), 6)
        self.assertEqual({t.point.kv for t in targets["bandwidth"]}, {16384})
        self.assertFalse(any(t.met for t in targets["bandwidth"]))
        self.assertEqual(targets["bandwidth"][0].measured, raw(LLAMA.format("f32"))["pct_triad"])
        speedups = {(t.point.rows, t.point.dtype): (round(t.measured, 2), t.met) for t in targets["speedup"]}
        self.assertEqual(speedups, {(1, "f16"): (2.07, True), (1, "bf16"): (1.79, True), (4, "f16"): (1.22, False),
                                    (4, "bf16"): (1.24, False)})
        self.assertEqual([(t.point.threads, round(t.measured, 3), t.met) for t in targets["prefill"]],
                         [(1, 0.511, False), (2, 0.388, False)])
        self.assertFalse(any(t.call_by_call for t in targets["speedup"]))

    def test_roofline_bounds_from_the_run_ceilings(self):
        """Each target's bound recomputed from the context's triad and FMA peak on 2 threads and the points'
        shapes: a call takes at least max(bytes / triad, FLOPs / peak)."""
        data = altered(l3_bytes=32 * 2 ** 20)
        targets = ad.targets(window_of(data))
        triad = float(data["context"]["triad_gbs_threads_2"]) * 1e9
        peak = float(data["context"]["fma_peak_gflops_threads_2"]) * 1e9

        def least(rows, dtype):  # the llama layout at kv 16384 on 2 threads: 32 query heads, 8 K/V heads
            flops = 4.0 * 128 * 32 * rows * 16384
            kv_bytes = 8 * 16384 * 128 * 2 * ld.TYPE_BYTES[dtype]
            return max(kv_bytes / triad, flops / peak), kv_bytes

        for t in targets["bandwidth"]:
            seconds, kv_bytes = least(t.point.rows, t.point.dtype)
            self.assertAlmostEqual(t.bound, 100 * kv_bytes / seconds / triad, places=6)
        for t in targets["speedup"]:
            self.assertAlmostEqual(t.bound, least(t.point.rows, "f32")[0] / least(t.point.rows, t.point.dtype)[0])
        # here (13.1 FLOPs per byte): rows:4's 16-bit points (16 FLOPs per byte) gain at most 1.63x at the
        # roofline, short of 1.7x; every rows:1 bound is 2x, and every bandwidth bound at least 75%
        beyond = [(t.point.rows, t.point.dtype, round(t.bound, 2)) for t in targets["speedup"] if t.beyond_roofline]
        self.assertEqual(beyond, [(4, "f16", 1.63), (4, "bf16", 1.63)])
        self.assertEqual({round(t.bound, 6) for t in targets["speedup"] if t.point.rows == 1}, {2.0})
        self.assertFalse(any(t.beyond_roofline for t in targets["bandwidth"]))
        # compute-bound, the target within reach: rows:4's 16-bit reads (at most 82% of the triad); the bytes
        # bound every rows:1 point, where 16-bit gains the bytes' 2x
        self.assertEqual([(t.point.rows, t.point.dtype, round(t.bound)) for t in targets["bandwidth"]
                          if t.compute_bound], [(4, "f16", 82), (4, "bf16", 82)])
        self.assertEqual([t.point.rows for t in targets["speedup"] if t.compute_bound], [4, 4])
        # compute-bound exactly where the recomputed bound falls below what the bytes allow
        for t in targets["bandwidth"]:
            self.assertEqual(t.compute_bound, t.bound < 100 - 1e-6, t.point)
        for t in targets["speedup"]:
            self.assertEqual(t.compute_bound, t.bound < 2 - 1e-9, t.point)
        # with half the FMA peak the balance falls to 6.5: rows:4's 16-bit reads reach at most 41% of the triad
        data["context"]["fma_peak_gflops_threads_2"] = str(peak / 2e9)
        bandwidth = ad.targets(window_of(data))["bandwidth"]
        self.assertEqual([(t.point.rows, t.point.dtype, round(t.bound)) for t in bandwidth if t.beyond_roofline],
                         [(4, "f16", 41), (4, "bf16", 41)])
        # ... and rows:4's fp32 reads (8 FLOPs per byte) at most 82%: compute-bound, within reach of 75%
        self.assertEqual([(t.point.rows, t.point.dtype, round(t.bound)) for t in bandwidth
                          if t.compute_bound and not t.beyond_roofline], [(4, "f32", 82)])

    def test_the_speedup_target_reads_the_types_point_where_there_is_one(self):
        data = with_types(altered(l3_bytes=32 * 2 ** 20), {"f16": 1.5, "bf16": 1.9}, {"f16": 0.04, "bf16": 0.01})
        speedups = {(t.point.rows, t.point.dtype): (t.measured, t.noise, t.met, t.call_by_call)
                    for t in ad.targets(window_of(data))["speedup"]}
        self.assertEqual(speedups[(1, "f16")], (1.5, 0.04, False, True))
        self.assertEqual(speedups[(1, "bf16")], (1.9, 0.01, True, True))
        # rows:4 has no types point: its speedups are still the decode points' medians
        self.assertEqual([v[3] for k, v in speedups.items() if k[0] == 4], [False, False])
        failed = ad.targets(window_of(with_types(altered(l3_bytes=32 * 2 ** 20), {}, {}, error="failed: x")))
        self.assertEqual(len(failed["speedup"]), 4)  # the decode points' medians, as without a types point
        self.assertFalse(any(t.call_by_call for t in failed["speedup"] + failed["bandwidth"]))

    def test_the_bandwidth_target_reads_the_types_point_where_there_is_one(self):
        data = with_types(altered(l3_bytes=32 * 2 ** 20), {"f16": 1.5, "bf16": 1.9}, {"f16": 0.04, "bf16": 0.01})
        triad = float(data["context"]["triad_gbs_threads_2"])
        read = {(t.point.rows, t.point.dtype): (round(t.measured, 6), t.noise, t.call_by_call)
                for t in ad.targets(window_of(data))["bandwidth"]}
        entry = next(b for b in data["benchmarks"] if b["name"] == TYPES_POINT + "_median")
        for dtype in ("f32", "f16", "bf16"):  # rows:1: each type's GB/s on its own caches over the triad
            self.assertEqual(read[(1, dtype)], (round(100 * entry[f"gbs_{dtype}"] / triad, 6), 0.02, True))
        for dtype in ("f32", "f16", "bf16"):  # rows:4 has none: the decode point's own share
            self.assertEqual(read[(4, dtype)][0], round(raw(LLAMA.replace("rows:1", "rows:4").format(dtype))["pct_triad"], 6))
            self.assertFalse(read[(4, dtype)][2])
        text = section_text(window_of(data))
        self.assertIn(f"llama, rows:1, kv 16,384, fp32, 2 threads (all): {fmt.pct(100 * entry['gbs_f32'] / triad, 0)} "
                      "(its `types/` point)", text)


    def test_the_prefill_target_reads_the_prefill_types_point_where_there_is_one(self):
        data = with_types(altered(prefill_n=4096), {"f16": 0.95, "bf16": 0.88}, {"f16": 0.03, "bf16": 0.02},
                          point=PREFILL_TYPES.format(2))
        targets = ad.targets(window_of(data))["prefill"]
        self.assertEqual([(t.point.threads, round(t.measured, 3), t.noise, t.met, t.call_by_call) for t in targets],
                         [(1, 0.511, targets[0].noise, False, False), (2, 0.95, 0.03, True, True)])
        # without the prefill points, the types point alone gives the target
        alone = copy.deepcopy(data)
        alone["benchmarks"] = [b for b in alone["benchmarks"] if not b["run_name"].startswith("prefill/")]
        self.assertEqual([(t.point.threads, t.measured, t.call_by_call) for t in ad.targets(window_of(alone))["prefill"]],
                         [(2, 0.95, True)])
        # a types point of another n, or of another kernel, is not the target's
        other = with_types(altered(prefill_n=4096), {"f16": 0.95, "bf16": 0.88}, {"f16": 0.03, "bf16": 0.02},
                           point=PREFILL_TYPES.format(2).replace("prefill:4096", "prefill:1024"))
        self.assertFalse(any(t.call_by_call for t in ad.targets(window_of(other))["prefill"]))
        other = with_types(altered(prefill_n=4096), {"f16": 0.95, "bf16": 0.88}, {"f16": 0.03, "bf16": 0.02},
                           point=PREFILL_TYPES.format(2).replace("avx512f", "avx2"))
        self.assertFalse(any(t.call_by_call for t in ad.targets(window_of(other))["prefill"]))


def section_text(window) -> str:
    """The section's text built alone (no figures): its paragraphs, bullets and table cells."""
    doc = Document("t", "s")
    narrative_decode.section(doc, window, {})
    return support.document_text(doc)


class Report(unittest.TestCase):
    """The report of the backward fixture's run with the decode fixture next to it."""

    @classmethod
    def setUpClass(cls):
        cls.run_dir = Path(tempfile.mkdtemp(prefix="decode-run-", dir=support.output_root()))
        for source, name in ((support.BACKWARD_FIXTURE, "results.json"), (FIXTURE, ld.FILE_NAME)):
            shutil.copy(source, cls.run_dir / name)
        with redirect_stdout(io.StringIO()):
            cls.status = report.main([str(cls.run_dir)])
        cls.md = (cls.run_dir / "report.md").read_text(encoding="utf-8")
        cls.section = cls.md.split(f"\n## {narrative_decode.TITLE}\n")[1].split("\n## ")[0]
        cls.window = ld.load_file(FIXTURE)

    def test_section_after_the_backward_with_its_figures(self):
        self.assertEqual(self.status, 0)
        titles = [line[3:] for line in self.md.splitlines() if line.startswith("## ")]
        self.assertEqual(titles[titles.index("The backward pass") + 1], narrative_decode.TITLE)
        for stem in narrative_decode.FIGURES:
            self.assertTrue((self.run_dir / f"{stem}.png").is_file(), stem)
            self.assertTrue((self.run_dir / f"{stem}.svg").is_file(), stem)
            self.assertIn(f"]({stem}.png)", self.section)
        page = (self.run_dir / "report.html").read_text(encoding="utf-8")
        self.assertIn('<section id="decoding-against-a-kv-cache">', page)
        self.assertIn('<figure id="fig11_decode_time_per_token"', page)

    def test_numbers_are_the_analysis(self):
        self.assertIn("**Intel(R) Xeon(R) Processor** (2 CPUs)", self.section)
        self.assertIn("13.6 GB/s on 1 thread, 27.1 GB/s on 2 threads (all)", self.section)
        row = next(r for r in ad.rows(self.window) if (r.layout, r.rows, r.kv, r.threads) == ("llama", 1, 16384, 2))
        self.assertIn(f"llama, rows:1, kv 16,384, fp16, 2 threads (all) at {fmt.ratio(row.speedup('f16'))}",
                      self.section)
        self.assertIn("2.07x", self.section)
        self.assertIn("136 MB per CPU of this run", self.section)  # the shared, huge L3
        self.assertEqual(self.section.count("cannot be read from this run"), 3)
        self.assertIn("it has n = 1,024; there fp16 reaches 0.511x on 1 thread, 0.388x on 2 threads (all)",
                      self.section)
        summary = self.md.split("## Summary")[1].split("\n## ")[0]
        self.assertIn("Decoding against a KV cache (`tiled/simd/avx512f`, `decode.json`)", summary)

    def test_targets_read_where_the_run_has_their_points(self):
        text = section_text(window_of(altered(l3_bytes=32 * 2 ** 20, prefill_n=4096)))
        self.assertNotIn("cannot be read", text)
        self.assertIn("decode reads K/V at ≥ 75% of the triad: not met (0 of 6 points)", text)
        self.assertIn("as fast as fp32: not met (2 of 4 points; at 2 of the other 2 the target lies beyond the roofline) "
                      "(llama, rows:1, kv 16,384, fp16, 2 threads (all): "
                      "2.07x", text)
        self.assertIn("fp16 ≥ 0.900x the fp32 GFLOP/s: not met (0 of 2 points) (1 thread: 0.511x", text)

    def test_the_types_table_and_the_target_call_by_call(self):
        data = with_types(altered(l3_bytes=32 * 2 ** 20), {"f16": 1.5, "bf16": 1.9}, {"f16": 0.04, "bf16": 0.01})
        text = section_text(window_of(data))
        self.assertIn("The storage types called by turns", text)
        self.assertIn("llama | 1 | 16,384 | 2 | 2,000 µs · 67.1 GB/s | 1,000 µs · 67.1 GB/s | "
                      "1,100 µs · 61.0 GB/s | 1.50x (CV 4.0%) | 1.90x (CV 1.0%) | 30", text)
        self.assertIn("as fast as fp32: not met (1 of 4 points; at 2 of the other 3 the target lies beyond the roofline) "
                      "(llama, rows:1, kv 16,384, fp16, 2 threads (all): "
                      "1.50x call by call", text)
        self.assertNotIn("called by turns", section_text(self.window))
        summary = narrative_decode.summary_item(window_of(data))
        self.assertIn("called by turns, fp16 1.50x and bf16 1.90x over 1 `types/` points", summary)
        # a window of types points alone (the decode study's call-by-call command): their table, no targets
        text = section_text(window_of(types_alone(data)))
        self.assertIn("holds no measured decode point", text)
        self.assertIn("1.50x (CV 4.0%) | 1.90x (CV 1.0%) | 30", text)
        failed = section_text(window_of(with_types(RAW, {}, {}, error="failed: out of memory")))
        self.assertIn("1 types point(s) measured nothing: " + TYPES_POINT + ": failed: out of memory", failed)

    def test_the_roofline_paragraph_names_the_targets_beyond_it(self):
        text = section_text(window_of(altered(l3_bytes=32 * 2 ** 20)))
        self.assertIn("llama, rows:4, kv 16,384, fp16, 2 threads (all): 1.22x, both sides at the roofline give 1.63x",
                      text)
        self.assertIn("27.1 GB/s and 354 GFLOP/s, a balance of 13.0 FLOPs per byte", text)
        self.assertIn("llama, rows:4 (16 query rows per K/V head) does 16.0 FLOPs per fp16 byte and 16.0 FLOPs per "
                      "bf16 byte, so there fp16 and bf16 run at most 1.63x as fast as fp32 with both at the roofline.",
                      text)
        self.assertNotIn("read K/V at most", text)  # no bandwidth target beyond the roofline here
        # beyond a smaller L3 both kv lengths' targets lie beyond the roofline: each type named once
        text = section_text(window_of(altered(l3_bytes=4 * 2 ** 20)))
        self.assertIn("llama, rows:4, kv 4,096, fp16, 2 threads (all)", text)
        self.assertIn("so there fp16 and bf16 run at most 1.63x as fast as fp32 with both at the roofline.", text)
        # where the FMAs bound a point below the triad but the target is within reach, the bound is shown and
        # the point is not counted beyond the roofline (16 FLOPs per byte against a balance of 13.0: 82%)
        self.assertIn("llama, rows:4, kv 16,384, fp16, 2 threads (all): 26%, the roofline allows at most 82%", text)
        self.assertIn("llama, rows:4, kv 16,384, fp32, 2 threads (all): 43%; llama, rows:4, kv 16,384, fp16", text)
        self.assertIn("decode reads K/V at ≥ 75% of the triad: not met (9 of 18 points)", text)
        self.assertNotIn("A call takes at least", section_text(self.window))  # no target read: no paragraph

    def test_the_prefill_types_table_and_its_target_call_by_call(self):
        data = with_types(altered(prefill_n=4096), {"f16": 0.95, "bf16": 0.88}, {"f16": 0.03, "bf16": 0.02},
                          point=PREFILL_TYPES.format(2))
        text = section_text(window_of(data))
        self.assertIn("Prefill, the storage types called by turns", text)
        self.assertIn("\n4,096 | 2 | 2.00 ms · 2,150 | 1.00 ms · 4,300 | 1.10 ms · 3,910 | "
                      "0.950x (CV 3.0%) | 0.880x (CV 2.0%) | 30", text)
        self.assertIn("fp16 ≥ 0.900x the fp32 GFLOP/s: not met (1 of 2 points) (1 thread: 0.511x; "
                      "2 threads (all): 0.950x call by call)", text)
        self.assertNotIn("Prefill, the storage types called by turns", section_text(self.window))
        self.assertIn("0.950x (CV 3.0%) | 0.880x (CV 2.0%) | 30", section_text(window_of(types_alone(data))))
        failed = section_text(window_of(with_types(RAW, {}, {}, error="failed: out of memory",
                                                   point=PREFILL_TYPES.format(1))))
        self.assertIn("1 prefill types point(s) measured nothing: " + PREFILL_TYPES.format(1) + ": failed: out of memory",
                      failed)

    def test_a_second_kernel_and_more_start_lengths(self):
        """As the full preset writes them: `tiled/simd/avx2` by name beside the dispatched kernel, and the
        generation loop from several start lengths (here a second one, made from the first)."""
        data = copy.deepcopy(RAW)
        extra = []
        for b in RAW["benchmarks"]:
            times = ("real_time", "call_us", "token_us", "first_us", "last_us")
            avx2 = {k: v.replace("avx512f", "avx2") if k in ("name", "run_name") else v for k, v in b.items()}
            extra.append(dict(avx2, **{k: b[k] * 1.5 for k in times if k in b and b["aggregate_name"] != "cv"}))
            if b["run_name"].startswith("generate/"):
                longer = {k: v.replace("start:4096", "start:16384") if k in ("name", "run_name") else v
                          for k, v in b.items()}
                longer.update({k: b[k] * 3 for k in times if k in b and b["aggregate_name"] != "cv"},
                              kv_bytes_end=b["kv_bytes_end"] * (16384 + 64) / (4096 + 64))
                extra.append(longer)
        data["benchmarks"] += extra
        window = window_of(data)
        self.assertEqual([k for k, _, _ in ad.kernel_ratios(window)], ["tiled/simd/avx2"])
        self.assertEqual(len(ad.step_fits(window, "tiled/simd/avx512f")), 6)
        text = section_text(window)
        self.assertIn("(and `tiled/simd/avx2` by name)", text)
        self.assertIn("`tiled/simd/avx2` takes 1.50x its time per call (median over 48 points)", text)
        self.assertIn("as if each added byte were read at", text)
        from attnbench_report.figures import decode_bandwidth as fig_decode_bandwidth
        from attnbench_report.figures import decode_time as fig_decode_time

        for module in (fig_decode_time, fig_decode_bandwidth):
            self.assertTrue(module.draw(window, window.path.parent).png.is_file())

    def test_without_decode_json(self):
        md = (support.fixture_report() / "report.md").read_text(encoding="utf-8")
        self.assertNotIn(narrative_decode.TITLE, md)
        self.assertFalse((support.fixture_report() / "fig11_decode_time_per_token.png").exists())
        self.assertIsNone(narrative_decode.summary_item(None))

    def test_unreadable_decode_json_is_left_out(self):
        folder = Path(tempfile.mkdtemp(prefix="attnbench-decode-", dir=support.output_root()))
        shutil.copy(support.FIXTURE, folder / "results.json")
        (folder / ld.FILE_NAME).write_text("{not json", encoding="utf-8")
        run = loader.load([folder]).runs[0]
        err = io.StringIO()
        with redirect_stderr(err):
            self.assertIsNone(report.load_decode(run))
        self.assertIn("decode.json", err.getvalue())
        self.assertIn("leaves out its decode section", err.getvalue())


if __name__ == "__main__":
    unittest.main()
