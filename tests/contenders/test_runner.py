"""The Python contenders' window (python/attnbench_contenders/) against the real C helper.

ATTNBENCH_CAPI names build/lib/libattnbench_capi.so (ctest sets it, and PYTHONPATH=python)."""
import json
import os
import random
import tempfile
import time
import unittest
from pathlib import Path

import numpy as np

import attnbench_contenders as contenders
from attnbench_contenders import ggml, onednn_graph, passes
from attnbench_contenders.window import q8_0_values

ROOT = Path(__file__).resolve().parents[2]
CAPI = os.environ.get("ATTNBENCH_CAPI", str(ROOT / "build" / "lib" / "libattnbench_capi.so"))


class OffByOneKey(contenders.NumpyInplace):
    """A wrong contender: drops the last key, as an off-by-one in a loop bound would."""

    name = "broken/drops_last_key"

    def prepare(self, point, q, k, v):
        super().prepare(point, q[:], k[:-1].copy(), v[:-1].copy())
        self.s = np.empty((point["n"], point["n"] - 1), dtype=np.float32)


class Absent(contenders.Contender):
    name = "absent/library"
    description = {"role": "peer"}

    def unsupported(self, point):
        return "missing: a library this machine lacks"


class ScaledDq(passes.TorchSdpaTraining):
    """A wrong training step: dQ off by 1%, as a missing factor in one gradient would be."""

    name = "broken/scaled_dq"

    def gradients(self):
        dq, dk, dv = super().gradients()
        return dq * np.float32(1.01), dk, dv


class RunnerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.capi = contenders.Capi(CAPI)
        cls.blas = contenders.OpenBlas()

    def test_quick_window_runs_every_contender_checked_and_interleaved(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "python_contenders.json"
            contenders.main(["--preset", "quick", "--lib", CAPI, "--out", str(out), "--filter", "n:256"])
            data = json.loads(out.read_text())
        context = data["context"]
        self.assertEqual(context["attnbench_window"], "python")
        names = {json.loads(v)["library"] for k, v in context.items() if k.startswith("contender ")}
        self.assertEqual(names, {"attnbench", "NumPy", "PyTorch", "OpenVINO", "ONNX Runtime", "ggml", "oneDNN"})
        # attnbench's kernel with the role and fusion the benchmark gives it.
        ours = json.loads(context[f"contender {self.capi.resolve('tiled/simd')}"])
        self.assertEqual((ours["role"], ours["fused"]), ("attnbench", True))
        self.assertEqual(self.capi.role("naive/openblas"), ("baseline", False))
        runs = {}
        for e in data["benchmarks"]:
            self.assertFalse(e.get("error_occurred"), e.get("error_message"))
            runs.setdefault(e["run_name"], []).append(e)
        kernels = {name.split("/n:")[0] for name in runs}
        self.assertIn(self.capi.resolve("tiled/simd"), kernels)
        self.assertTrue({"numpy/textbook", "numpy/inplace", "torch/matmul", "torch/sdpa", "openvino/sdpa",
                         "onnxruntime/mha", "ggml/flash_attn_ext", "onednn/graph"} <= kernels, kernels)
        # The fused contenders record the kernel that ran, point by point.
        for name, entries in runs.items():
            if name.startswith(("torch/sdpa", "openvino/sdpa", "onnxruntime/mha", "ggml/", "onednn/")):
                self.assertTrue(entries[0].get("label"), name)
        for name, entries in runs.items():
            self.assertEqual(sorted(e["repetition_index"] for e in entries), [0, 1, 2], name)
            for e in entries:
                self.assertGreater(e["GFLOP/s"], 0)
                self.assertLess(e["oracle_error_ratio"], 1.0)
        # Rounds alternate: repetition 0 of every contender at a point comes before any repetition 1.
        point = [e for e in data["benchmarks"] if e["run_name"].endswith("/n:256/d:64/threads:1/causal:0")]
        indices = [e["repetition_index"] for e in point]
        self.assertEqual(indices, sorted(indices))

    def test_a_wrong_contender_is_recorded_failed_and_not_timed(self):
        point = {"pass": "forward", "n": 96, "d": 16, "causal": False, "threads": 1}
        entries = contenders.run_point(point, [OffByOneKey(self.blas), contenders.NumpyInplace(self.blas)],
                                       self.capi, self.blas, 2, 0.0, 10.0, random.Random(1), lambda _: None)
        broken = [e for e in entries if e["run_name"].startswith("broken/")]
        self.assertEqual(len(broken), 1)
        self.assertTrue(broken[0]["error_occurred"])
        self.assertTrue(broken[0]["error_message"].startswith("failed: oracle check: "), broken[0]["error_message"])
        good = [e for e in entries if e["run_name"].startswith("numpy/inplace/")]
        self.assertEqual(len(good), 2)
        self.assertFalse(any(e.get("error_occurred") for e in good))

    def test_a_missing_contender_and_a_causal_point_are_recorded(self):
        point = {"pass": "forward", "n": 64, "d": 8, "causal": True, "threads": 1}
        entries = contenders.run_point(point, [Absent(), contenders.NumpyTextbook(self.blas),
                                               contenders.TorchSdpa(self.blas)],
                                       self.capi, self.blas, 1, 0.0, 10.0, random.Random(1), lambda _: None)
        absent = [e for e in entries if e["run_name"].startswith("absent/")]
        self.assertEqual(absent[0]["error_message"], "missing: a library this machine lacks")
        for prefix in ("numpy/textbook/", "torch/sdpa/"):  # causal passes the oracle's causal check
            e = [e for e in entries if e["run_name"].startswith(prefix)]
            self.assertEqual(len(e), 1)
            self.assertFalse(e[0].get("error_occurred"), e[0].get("error_message"))

    def test_training_step_and_decode_points_check_and_time_both_sides(self):
        torch_sdpa = contenders.TorchSdpa(self.blas)
        ours = contenders.Attnbench(self.capi, "tiled/simd")
        for point, sides in (
                ({"pass": "forward+backward", "n": 300, "d": 24, "causal": True, "threads": 2},
                 [passes.AttnbenchTraining(self.capi, ours.name, ours.description),
                  passes.TorchSdpaTraining(torch_sdpa.description), ScaledDq(torch_sdpa.description)]),
                ({"pass": "decode", "n": 700, "d": 32, "q_heads": 8, "kv_heads": 2, "causal": False, "threads": 2},
                 [passes.AttnbenchDecode(self.capi, ours.name, ours.description),
                  passes.TorchSdpaDecode(torch_sdpa.description)])):
            entries = contenders.run_point(point, sides, self.capi, self.blas, 2, 0.0, 10.0, random.Random(1),
                                           lambda _: None)
            for side in sides:
                mine = [e for e in entries if e["run_name"].startswith(side.name + "/")]
                if side.name.startswith("broken/"):  # the 1% error in dQ fails the gradients' check
                    self.assertTrue(mine[0]["error_message"].startswith("failed: oracle check: dq"),
                                    mine[0]["error_message"])
                    continue
                self.assertEqual(len(mine), 2, side.name)
                self.assertFalse(any(e.get("error_occurred") for e in mine), mine[0].get("error_message"))
                self.assertTrue(mine[0]["label"], side.name)
                pass_ = "/pass:forward+backward" if point["pass"] != "decode" else "/heads:8/kv_heads:2/"
                self.assertIn(pass_, mine[0]["run_name"])

    def test_ggml_forward_and_decode_f32_and_q8_0_pass_the_oracle_check(self):
        layer = {"pass": "decode", "n": 700, "d": 64, "q_heads": 8, "kv_heads": 2, "causal": False, "threads": 2}
        ours = contenders.Attnbench(self.capi, "tiled/simd")
        for point, sides in (
                ({"pass": "forward", "n": 77, "d": 24, "causal": True, "threads": 2}, [ggml.GgmlFlashAttn()]),
                (layer, [ggml.GgmlDecode()]),
                (dict(layer, dtype="q8_0"), [ggml.GgmlDecodeQ8(),
                                             passes.AttnbenchDecodeQ8(self.capi, ours.name, ours.description)])):
            entries = contenders.run_point(point, sides, self.capi, self.blas, 2, 0.0, 10.0, random.Random(1),
                                           lambda _: None)
            self.assertEqual(len(entries), 2 * len(sides), point)
            for e in entries:
                self.assertFalse(e.get("error_occurred"), e.get("error_message"))
                self.assertLess(e["oracle_error_ratio"], 1.0)
            labels = {e["run_name"].split("/")[0]: e["label"] for e in entries}
            self.assertIn(point.get("dtype", "f32") + " K/V", labels["ggml"])

    def test_onednn_graph_f32_and_bf16_pass_the_oracle_check_and_say_how_they_partitioned(self):
        # Shapes that fit no block (n = 77, odd d), causal and not, one and two threads.
        for point in ({"pass": "forward", "n": 77, "d": 23, "causal": True, "threads": 2},
                      {"pass": "forward", "n": 130, "d": 64, "causal": False, "threads": 1}):
            for side, dtype in ((onednn_graph.OnednnGraph(), "f32"), (onednn_graph.OnednnGraphBf16(), "bf16")):
                self.assertEqual(side.description["dtype"], dtype)
                entries = contenders.run_point(dict(point, dtype=dtype), [side], self.capi, self.blas, 2, 0.0,
                                               10.0, random.Random(1), lambda _: None)
                self.assertEqual(len(entries), 2, entries[0].get("error_message"))
                for e in entries:
                    self.assertFalse(e.get("error_occurred"), e.get("error_message"))
                    self.assertLess(e["oracle_error_ratio"], 1.0)
                    # e.g. "3 partitions (2 + 1 + 1 ops), scores materialised between them, f32"
                    self.assertRegex(e["label"], rf"^\d+ partitions? \([\d + ]+ ops\), .*, {dtype}$")
                    fused = e["label"].startswith("1 partition ")
                    self.assertEqual(fused, e["scratch_bytes"] == 0, e)

    def test_prefill_points_check_and_time_every_side(self):
        point = {"pass": "prefill", "n": 77, "d": 32, "q_heads": 8, "kv_heads": 2, "causal": True, "threads": 2}
        by_pass = contenders.window.contenders_by_pass(self.capi, self.blas)
        entries = contenders.run_point(point, by_pass["prefill"], self.capi, self.blas, 2, 0.0, 10.0,
                                       random.Random(1), lambda _: None)
        self.assertEqual({e["run_name"].split("/q:")[0] for e in entries},
                         {self.capi.resolve("tiled/simd"), "torch/sdpa", "onnxruntime/gqa", "ggml/flash_attn_ext"})
        for e in entries:
            self.assertFalse(e.get("error_occurred"), e.get("error_message"))
            self.assertIn("/q:77/kv:77/heads:8/kv_heads:2/d:32/threads:2/causal:1", e["run_name"])
            self.assertLess(e["oracle_error_ratio"], 1.0)
            self.assertTrue(e["label"])

    def test_q8_0_values_are_a_fixed_point_of_ggml_q8_0(self):
        # Stored again as q8_0 (by ggml's own quantiser), the values give back the same bytes.
        x = q8_0_values(np.random.default_rng(3).standard_normal((4, 96), dtype=np.float32) * 3)
        self.assertTrue(np.array_equal(q8_0_values(x), x))
        graph = ggml._Graph(x[None, :1], x[None], x[None], False, 1, ggml.Q8_0)
        try:
            once, again = graph._stored(x, ggml.Q8_0), graph._stored(q8_0_values(x), ggml.Q8_0)
        finally:
            graph.free()
        self.assertTrue(np.array_equal(once, again))
        self.assertFalse(np.array_equal(x, np.random.default_rng(3).standard_normal((4, 96), dtype=np.float32) * 3))

    def _window(self, factory: str, threads: str) -> list:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "python_contenders.json"
            contenders.main(["--preset", "quick", "--lib", CAPI, "--out", str(out), "--factory", factory,
                             "--point-timeout", "20", "--filter", f"/n:256/d:64/threads:{threads}/causal:0$"])
            return json.loads(out.read_text())["benchmarks"]

    def test_a_crash_fails_its_point_and_the_window_goes_on(self):
        entries = self._window("faulty_contenders:aborting", "[12]")
        one = [e for e in entries if "/threads:1/" in e["run_name"]]
        self.assertEqual(len(one), 2)  # both contenders of the point, each recorded failed with why
        for e in one:
            self.assertTrue(e["error_message"].startswith("failed: crashed: "), e["error_message"])
        two = [e for e in entries if "/threads:2/" in e["run_name"]]  # the next point, a fresh worker
        self.assertTrue(two and not any(e.get("error_occurred") for e in two), two)

    def test_a_hang_fails_its_point_after_the_timeout(self):
        start = time.perf_counter()
        entries = self._window("faulty_contenders:hanging", "1")
        self.assertLess(time.perf_counter() - start, 120)
        self.assertEqual({e["error_message"].split(":")[1].strip() for e in entries}, {"hung"})


if __name__ == "__main__":
    unittest.main()
