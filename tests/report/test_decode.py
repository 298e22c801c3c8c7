"""The decode window in the report: loader_decode on the real quick run's decode.json (names, medians
and CVs as the JSON has them, errors, repetitions only, a name it cannot read), analysis_decode's
numbers recomputed here from the raw JSON, the targets on the fixture (none can be read) and on
altered copies (a smaller L3, an n = 4096 prefill), and the section "Decoding against a KV cache" in
the report built with the fixture next to the results, or without it."""
from __future__ import annotations

import json
import tempfile
import unittest
from pathlib import Path

import support
import loader
import loader_decode as ld

FIXTURE = support.ROOT / "tests" / "fixtures" / "quick_decode.json"
RAW = json.loads(FIXTURE.read_text(encoding="utf-8"))


def raw(name: str, aggregate: str = "median") -> dict:
    """The fixture's aggregate entry of the point whose run_name starts with `name` + "/"."""
    return next(b for b in RAW["benchmarks"] if b["run_name"].startswith(name + "/") and b["aggregate_name"] == aggregate)


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
        c = ld.parse_name("prefill/tiled/simd/avx512f/n:1024/d:128/type:f32/threads:2/min_time:0.050/repeats:3/real_time")
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
        errors = [{"name": failed, "run_name": failed, "run_type": "iteration", "repetitions": 2, "error_occurred": True,
                   "error_message": "failed: cache full"}] * 2
        w = window_of({"context": {}, "benchmarks": reps + errors})
        p = w.table.one(family="decode")
        self.assertEqual((p.value("time_us"), p.value("token_us")), (2000.0, 2000.0))
        self.assertAlmostEqual(p.cv["time_us"], 2 ** 0.5 / 2)
        bad = w.table.one(family="prefill")
        self.assertEqual((bad.skipped, bad.status, bad.reason), (True, "failed", "cache full"))
        with self.assertRaisesRegex(ValueError, "decode.json: benchmark name"):
            window_of({"benchmarks": [dict(reps[0], name="x/y", run_name="x/y")]})

    def test_absent_next_to_a_run(self):
        run = loader.load([support.FIXTURE]).runs[0]
        self.assertIsNone(ld.load_next_to(run))


if __name__ == "__main__":
    unittest.main()
