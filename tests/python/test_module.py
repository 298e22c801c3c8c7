"""The Python module `attnbench` (python/attnbench_module.cpp) on NumPy arrays.

ctest runs it with the built module on PYTHONPATH and the CLI's path in ATTNBENCH_CLI:
  PYTHONPATH=build/python ATTNBENCH_CLI=build/bin/attnbench /usr/bin/python3 -m unittest \
      discover -s tests/python
"""
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

import numpy as np

import attnbench

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for numpy_reference
from numpy_reference import attention as reference  # noqa: E402

CLI = os.environ.get("ATTNBENCH_CLI")


def normal(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


class Results(unittest.TestCase):
    def test_matches_float64_reference_for_every_rank_gqa_and_causal(self):
        cases = [((37, 24), (53, 24)), ((4, 37, 24), (2, 53, 24)), ((2, 4, 9, 5), (2, 1, 70, 5))]
        for qs, ks in cases:
            for causal in (False, True):
                q, k, v = normal(*qs, seed=1), normal(*ks, seed=2), normal(*ks, seed=3)
                o = attnbench.attention(q, k, v, causal=causal, threads=1)
                self.assertEqual(o.shape, q.shape)
                self.assertEqual(o.dtype, np.float32)
                np.testing.assert_allclose(o, reference(q, k, v, causal), atol=2e-6)

    def test_scale_kernel_and_threads_are_passed_through(self):
        q, k, v = normal(20, 8, seed=4), normal(30, 8, seed=5), normal(30, 8, seed=6)
        np.testing.assert_allclose(attnbench.attention(q, k, v, scale=0.3, kernel="naive/scalar"),
                                   reference(q, k, v, scale=0.3), atol=2e-6)
        one = attnbench.attention(q, k, v, threads=1)
        self.assertTrue(np.array_equal(one, attnbench.attention(q, k, v, threads=2)))
        self.assertTrue(np.array_equal(one, attnbench.attention(q, k, v)))  # None: every core

    def test_inputs_are_not_modified_and_read_only_arrays_work(self):
        q, k, v = normal(16, 8, seed=7), normal(16, 8, seed=8), normal(16, 8, seed=9)
        copies = [x.copy() for x in (q, k, v)]
        for x in (q, k, v):
            x.setflags(write=False)
        attnbench.attention(q, k, v)
        for x, c in zip((q, k, v), copies):
            self.assertTrue(np.array_equal(x, c))

    @unittest.skipUnless(CLI, "ATTNBENCH_CLI not set")
    def test_bitwise_equal_to_the_cli(self):
        # GQA over two heads, several heads, and decoding (the split-key path).
        shapes = [((1, 2, 70, 33), (1, 1, 129, 33)), ((3, 200, 64), (3, 300, 64)), ((3, 17), (4097, 17))]
        with tempfile.TemporaryDirectory() as tmp:
            for i, (qs, ks) in enumerate(shapes):
                q, k, v = normal(*qs, seed=10 + i), normal(*ks, seed=20 + i), normal(*ks, seed=30 + i)
                paths = {}
                for name, x in (("q", q), ("k", k), ("v", v)):
                    paths[name] = os.path.join(tmp, f"{name}{i}.npy")
                    np.save(paths[name], x)
                for kernel in ("tiled/simd", "naive/simd/avx2", "tiled/scalar", "naive/openblas"):
                    for causal in (False, True):
                        out = os.path.join(tmp, "o.npy")
                        subprocess.run([CLI, "run", "--q", paths["q"], "--k", paths["k"], "--v", paths["v"],
                                        "--out", out, "--kernel", kernel, "--threads", "2"]
                                       + (["--causal"] if causal else []), check=True, capture_output=True)
                        mine = attnbench.attention(q, k, v, causal=causal, kernel=kernel, threads=2)
                        self.assertTrue(np.array_equal(mine.view(np.uint32), np.load(out).view(np.uint32)),
                                        f"{kernel} {qs} {ks} causal={causal}")

    def test_releases_the_gil_while_computing(self):
        # One thread runs a call of a few tenths of a second; this one counts meanwhile. With the GIL
        # held for the call, this thread would stall for its whole length.
        q = normal(1536, 64, seed=11)
        start = time.perf_counter()
        attnbench.attention(q, q, q, kernel="naive/scalar", threads=1)
        call = time.perf_counter() - start
        worker = threading.Thread(target=attnbench.attention, args=(q, q, q),
                                  kwargs={"kernel": "naive/scalar", "threads": 1})
        stamps = [time.perf_counter()]
        worker.start()
        while worker.is_alive():
            stamps.append(time.perf_counter())
        worker.join()
        longest_stall = max(np.diff(stamps)) if len(stamps) > 1 else call
        self.assertLess(longest_stall, call / 3, f"call {call:.3f} s, longest stall {longest_stall:.3f} s")


class TheModulesExercises(unittest.TestCase):
    """The attention module's exercises 1-4, written as the module writes them, on attention()."""

    def test_1_worked_example_weights(self):
        # One query whose scores against three keys are (2.1, 0.4, 1.3); V = I, so O is the weights.
        scores = np.array([2.1, 0.4, 1.3], dtype=np.float32)
        q = np.array([[1, 0, 0]], dtype=np.float32)
        k = np.zeros((3, 3), dtype=np.float32)
        k[:, 0] = scores
        weights = attnbench.attention(q, k, np.eye(3, dtype=np.float32), scale=1.0)[0]
        np.testing.assert_allclose(weights, [0.61, 0.11, 0.28], atol=0.005)  # as the module rounds
        self.assertAlmostEqual(float(weights.sum()), 1.0, places=6)
        self.assertAlmostEqual(float(weights[0] / weights[2]), float(np.exp(0.8)), places=5)

    def test_2_bottleneck(self):
        # Retrieve v_p from n keys: one mean-pooled summary (scale 0, uniform weights) loses it as n
        # grows; attention with a query along k_p finds it.
        rng = np.random.default_rng(12)
        for n in (25, 200):
            pooled_err, attended_err = [], []
            for _ in range(8):
                keys = rng.standard_normal((n, 8)).astype(np.float32)
                keys /= np.linalg.norm(keys, axis=1, keepdims=True)
                values = rng.standard_normal((n, 8)).astype(np.float32)
                p = int(rng.integers(n))
                target = values[p]
                query = (100 * keys[p])[None, :]
                pooled = attnbench.attention(query, keys, values, scale=0.0)[0]
                attended = attnbench.attention(query, keys, values, scale=1.0)[0]
                pooled_err.append(np.linalg.norm(pooled - target) / np.linalg.norm(target))
                attended_err.append(np.linalg.norm(attended - target) / np.linalg.norm(target))
            self.assertGreater(np.mean(pooled_err), 0.8, n)
            self.assertLess(np.mean(attended_err), 0.1, n)
            np.testing.assert_allclose(pooled, values.mean(axis=0), atol=1e-5)

    def test_3_alignment_crosses(self):
        # "the black cat" queries "le chat noir" on axes (article, animal, colour).
        source = np.array([[2.0, 0.2, 0.0], [0.1, 2.0, 0.3], [0.0, 0.3, 2.0]], dtype=np.float32)
        target = np.array([[2.0, 0.1, 0.1], [0.1, 0.2, 2.0], [0.2, 2.0, 0.1]], dtype=np.float32)
        weights = attnbench.attention(target, source, np.eye(3, dtype=np.float32))
        np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-6)
        self.assertEqual(list(weights.argmax(axis=1)), [0, 2, 1])  # the-le, black-noir, cat-chat

    def test_4_self_attention_is_blind_to_order_until_positions_are_added(self):
        rng = np.random.default_rng(13)
        words = rng.standard_normal((3, 16)).astype(np.float32)  # dog, bites, man
        order = [2, 1, 0]  # man bites dog
        pooled = lambda x: attnbench.attention(x, x, x).mean(axis=0)
        np.testing.assert_allclose(pooled(words), pooled(words[order]), atol=1e-6)
        out = attnbench.attention(words, words, words)
        np.testing.assert_allclose(attnbench.attention(words[order], words[order], words[order]),
                                   out[order], atol=1e-6)  # permuting the inputs permutes the outputs
        i = np.arange(16)
        positions = np.array([[np.sin(t / 10000 ** (2 * (c // 2) / 16)) if c % 2 == 0 else
                               np.cos(t / 10000 ** (2 * (c // 2) / 16)) for c in i] for t in range(3)],
                             dtype=np.float32)
        a, b = words + positions, words[order] + positions
        self.assertGreater(float(np.abs(pooled(a) - pooled(b)).max()), 1e-3)


class BadInput(unittest.TestCase):
    q = normal(10, 8, seed=14)

    def raises(self, error, pattern, *args, **kwargs):
        with self.assertRaisesRegex(error, pattern):
            attnbench.attention(*args, **kwargs)

    def test_dtype_type_and_rank(self):
        q = self.q
        self.raises(TypeError, r"^q: dtype float64, expected float32", q.astype(np.float64), q, q)
        self.raises(TypeError, r"^v: dtype float16", q, q, q.astype(np.float16))
        self.raises(TypeError, r"^k: expected a numpy.ndarray of float32, got list", q, q.tolist(), q)
        self.raises(TypeError, r"^q: expected a numpy.ndarray", None, q, q)
        self.raises(ValueError, r"^q: shape \(8,\) has rank 1", q[0], q, q)
        self.raises(ValueError, r"^k: shape \(1, 1, 1, 1, 10, 8\) has rank 6", q, q.reshape(1, 1, 1, 1, 10, 8), q)

    def test_layout_and_shapes(self):
        q = self.q
        self.raises(ValueError, r"^k: not C-contiguous .*np.ascontiguousarray\(k\)", q, q.T.copy().T, q)
        self.raises(ValueError, r"^q: not C-contiguous", q[::2], q, q)
        self.raises(ValueError, r"must have the rank of q", q, q[None], q[None])
        self.raises(ValueError, r"^v: shape \(9, 8\) must equal k's \(10, 8\)", q, q, q[:9].copy())
        self.raises(ValueError, r"^k: head dim 4 must equal q's 8", q, q[:, :4].copy(), q[:, :4].copy())
        q4, k4 = normal(2, 3, 5, 8), normal(1, 3, 5, 8)
        self.raises(ValueError, r"^k: batch 1 must equal q's 2", q4, k4, k4)
        q3, k3 = normal(3, 5, 8), normal(2, 5, 8)
        self.raises(attnbench.Error, r"^shape.q_heads = 3: must be a multiple of shape.kv_heads = 2", q3, k3, k3)

    def test_library_errors_name_field_and_value(self):
        q = self.q
        self.assertTrue(issubclass(attnbench.Error, ValueError))
        self.raises(attnbench.Error, r"^shape.q_len = 0: must be at least 1", q[:0], q, q)
        self.raises(attnbench.Error, r"^shape.head_dim = 0", np.zeros((3, 0), np.float32),
                    np.zeros((3, 0), np.float32), np.zeros((3, 0), np.float32))
        self.raises(attnbench.Error, r"^options.scale = nan: must be finite", q, q, q, scale=float("nan"))
        self.raises(attnbench.Error, r"^options.threads = 5000", q, q, q, threads=5000)
        # A naive score matrix past the memory budget (half of RAM) fails before anything is allocated.
        long = np.zeros((1 << 17, 1), np.float32)
        self.raises(attnbench.Error, r"^options.memory_budget_bytes = .*needs 68719476736 bytes", long, long, long,
                    kernel="naive/scalar")

    def test_arguments_of_the_module(self):
        q = self.q
        self.raises(ValueError, r"^kernel: 'tiled/gpu' is no registry kernel", q, q, q, kernel="tiled/gpu")
        self.raises(ValueError, r"^threads: -1 must be >= 0", q, q, q, threads=-1)
        with self.assertRaises(TypeError):
            attnbench.attention(q, q, q, True)  # causal is keyword-only


class Kernels(unittest.TestCase):
    def test_every_registry_kernel_with_its_fields(self):
        kernels = attnbench.kernels()
        names = [k["name"] for k in kernels]
        self.assertIn("tiled/simd", names)
        self.assertEqual(len(names), len(set(names)))
        for k in kernels:
            self.assertEqual(k["name"].split("/")[:2], [k["strategy"], k["backend"]])
            self.assertIn(k["isa"], ("generic", "sse4.2", "avx2", "avx512f"))
            if k["dispatches"]:
                self.assertIn(k["runs"], names)
                self.assertTrue(k["runs"].startswith(k["name"] + "/"))
            else:
                self.assertEqual(k["runs"], k["name"])
            if k["available"]:
                q = normal(5, 3)
                np.testing.assert_allclose(attnbench.attention(q, q, q, kernel=k["name"]), reference(q, q, q),
                                           atol=2e-6)

    @unittest.skipUnless(CLI, "ATTNBENCH_CLI not set")
    def test_same_list_as_the_cli(self):
        header, *listed = subprocess.run([CLI, "list"], check=True, capture_output=True, text=True).stdout.splitlines()
        self.assertEqual(header.split()[:2], ["kernel", "backward"])
        self.assertEqual([line.split()[0] for line in listed], [k["name"] for k in attnbench.kernels()])


if __name__ == "__main__":
    unittest.main()
