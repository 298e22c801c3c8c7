"""The Python package `attnbench` (python/attnbench/, its extension python/attnbench_module.cpp) on
NumPy arrays.

ctest runs it with the project's Python, the built package on PYTHONPATH and the CLI's path in
ATTNBENCH_CLI:
  PYTHONPATH=build/python ATTNBENCH_CLI=build/bin/attnbench .venv/bin/python -m unittest \
      discover -s tests/python
"""
import os
import subprocess
import tempfile
import threading
import time
import unittest

import numpy as np

import attnbench

from numpy_reference import attention as reference  # noqa: E402
from numpy_reference import attention_backward as reference_backward  # noqa: E402

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

    def test_windows_and_alignments_match_the_reference(self):
        # A window that ends inside the key blocks, a local (two-sided) one, top-left causal with
        # q_len != kv_len (rows that see no key included), every rank, grouped-query heads.
        cases = [((37, 24), (53, 24)), ((4, 53, 24), (2, 37, 24)), ((2, 4, 9, 5), (2, 1, 70, 5))]
        masks = [dict(causal=True, window=7), dict(causal="top_left"), dict(causal="top_left", window=3),
                 dict(window=(5, 2)), dict(window=(None, 0), alignment="top_left"), dict(window=1000)]
        for qs, ks in cases:
            q, k, v = normal(*qs, seed=7), normal(*ks, seed=8), normal(*ks, seed=9)
            for mask in masks:
                want = reference(q, k, v, mask.get("causal", False) is not False, None, mask.get("window"),
                                 mask.get("alignment") or (mask["causal"] if isinstance(mask.get("causal"), str)
                                                           else "bottom_right"))
                for kernel in ("tiled/scalar", None):
                    o = attnbench.attention(q, k, v, kernel=kernel, threads=2, **mask)
                    np.testing.assert_allclose(o, want, atol=2e-6, err_msg=f"{kernel} {qs} {ks} {mask}")

    def test_softcap_matches_the_reference_forward_and_backward(self):
        q, k, v, d_o = normal(2, 40, 16, seed=11) * 3, normal(2, 50, 16, seed=12) * 3, normal(2, 50, 16, seed=13), \
            normal(2, 40, 16, seed=14)
        for mask in (dict(), dict(causal=True, window=9)):
            for cap in (1.5, 30.0):
                want = reference(q, k, v, mask.get("causal", False), None, mask.get("window"), softcap=cap)
                for kernel in ("tiled/scalar", "naive/scalar", None):
                    o, lse = attnbench.attention(q, k, v, softcap=cap, kernel=kernel, return_lse=True, **mask)
                    np.testing.assert_allclose(o, want, atol=1e-5, err_msg=f"{kernel} {mask} cap {cap}")  # scores to ~30
                    grads = attnbench.attention_backward(q, k, v, o, lse, d_o, softcap=cap, kernel=kernel, **mask)
                    expected = reference_backward(q, k, v, d_o, mask.get("causal", False), None, mask.get("window"),
                                                  softcap=cap)
                    for name, got, e in zip(("dq", "dk", "dv"), grads, expected):
                        self.assertLess(relative_error(got, e), 1e-5, f"{kernel} {name} {mask} cap {cap}")
        capped = attnbench.attention(q, k, v, softcap=1.5, threads=1)
        self.assertFalse(np.allclose(capped, attnbench.attention(q, k, v, threads=1), atol=1e-3))  # it caps
        self.assertRaisesRegex(attnbench.Error, r"^options.softcap = 0.000000: must be finite and above 0",
                               attnbench.attention, q, k, v, softcap=0.0)
        self.assertRaisesRegex(attnbench.Error, r"^options.softcap = nan", attnbench.attention, q, k, v,
                               softcap=float("nan"))

    def test_alibi_matches_the_reference_forward_and_backward(self):
        q, k, v, d_o = normal(6, 30, 8, seed=15), normal(2, 45, 8, seed=16), normal(2, 45, 8, seed=17), \
            normal(6, 30, 8, seed=18)
        slopes = attnbench.alibi_slopes(6)
        self.assertEqual(len(slopes), 6)
        for mask in (dict(causal=True), dict(), dict(causal="top_left", window=7)):
            causal = mask.get("causal", False)
            alignment = causal if isinstance(causal, str) else "bottom_right"
            want = reference(q, k, v, causal is not False, None, mask.get("window"), alignment, alibi=slopes)
            expected = reference_backward(q, k, v, d_o, causal is not False, None, mask.get("window"), alignment,
                                          alibi=slopes)
            for kernel in ("tiled/scalar", None):
                o, lse = attnbench.attention(q, k, v, alibi_slopes=slopes, kernel=kernel, return_lse=True, **mask)
                np.testing.assert_allclose(o, want, atol=2e-6, err_msg=f"{kernel} {mask}")
                grads = attnbench.attention_backward(q, k, v, o, lse, d_o, alibi_slopes=np.array(slopes),
                                                     kernel=kernel, **mask)
                for name, got, e in zip(("dq", "dk", "dv"), grads, expected):
                    self.assertLess(relative_error(got, e), 1e-5, f"{kernel} {name} {mask}")
        self.assertRaisesRegex(attnbench.Error, r"^options.alibi_slopes = 2 slopes: must hold one per query head",
                               attnbench.attention, q, k, v, alibi_slopes=[0.5, 0.25])
        self.assertRaisesRegex(attnbench.Error, r"^options.alibi_slopes\[1\] = nan", attnbench.attention, q, k, v,
                               alibi_slopes=[0.5, float("nan"), 1, 1, 1, 1])
        self.assertRaises(TypeError, attnbench.attention, q, k, v, alibi_slopes="steep")

    def test_mask_tensors_match_the_reference_forward_and_backward(self):
        q, k, v, d_o = normal(2, 6, 30, 8, seed=25), normal(2, 2, 45, 8, seed=26), normal(2, 2, 45, 8, seed=27), \
            normal(2, 6, 30, 8, seed=28)
        rng = np.random.default_rng(29)
        padding = np.ones((2, 1, 1, 45), dtype=bool)
        padding[1, ..., 40:] = False                       # batch 1's last 5 keys are padding
        keep = rng.random((6, 30, 45)) > 0.3                # per head and row, broadcast over the batch
        keep[:, 4] = False                                  # a row it leaves no key: zeros
        bias = rng.normal(0, 2, (2, 1, 30, 45)).astype(np.float32)
        bias[rng.random(bias.shape) < 0.1] = -np.inf
        transposed = np.ascontiguousarray(keep.transpose(0, 2, 1)).transpose(0, 2, 1)  # not C-contiguous
        for mask, extra in ((padding, dict()), (keep, dict(causal=True)), (bias, dict(window=9)),
                            (transposed, dict())):
            want = reference(q, k, v, extra.get("causal", False), None, extra.get("window"), mask=mask)
            expected = reference_backward(q, k, v, d_o, extra.get("causal", False), None, extra.get("window"),
                                          mask=mask)
            for kernel in ("tiled/scalar", "naive/scalar", None):
                o, lse = attnbench.attention(q, k, v, mask=mask, kernel=kernel, return_lse=True, **extra)
                np.testing.assert_allclose(o, want, atol=2e-6, err_msg=f"{kernel} {mask.dtype} {extra}")
                grads = attnbench.attention_backward(q, k, v, o, lse, d_o, mask=mask, kernel=kernel, **extra)
                for name, got, e in zip(("dq", "dk", "dv"), grads, expected):
                    self.assertLess(relative_error(got, e), 1e-5, f"{kernel} {name} {mask.dtype} {extra}")
        self.assertTrue(np.all(attnbench.attention(q, k, v, mask=keep)[:, :, 4] == 0))
        # the cache's call takes it too: decode one row over a padded cache
        cache = attnbench.KvCache(2, 8, 64, batch=2)
        cache.append(k, v)
        row = np.ascontiguousarray(q[:, :, -1:])
        np.testing.assert_allclose(cache.attention(row, mask=padding), reference(row, k, v, mask=padding), atol=2e-6)
        self.assertRaisesRegex(TypeError, r"^mask: dtype float64, expected bool", attnbench.attention, q, k, v,
                               mask=bias.astype(np.float64))
        self.assertRaisesRegex(TypeError, r"^mask: dtype >f4, expected bool .* in native byte order",
                               attnbench.attention, q, k, v, mask=bias.astype(">f4"))
        self.assertRaisesRegex(TypeError, r"^mask: expected a bool or float32 ndarray, got list", attnbench.attention,
                               q, k, v, mask=[[True]])
        self.assertRaisesRegex(ValueError, r"^mask: shape \(3, 30, 45\) does not broadcast to \(batch, q_heads, "
                               r"q_len, kv_len\) = \(2, 6, 30, 45\)", attnbench.attention, q, k, v,
                               mask=np.ones((3, 30, 45), dtype=bool))
        self.assertRaisesRegex(ValueError, r"its last axis must be kv_len", attnbench.attention, q, k, v,
                               mask=np.ones((30, 1), dtype=bool))

    def test_window_arguments_are_checked(self):
        q = normal(8, 4, seed=10)
        self.assertRaisesRegex(ValueError, r"^window: 0 must be at least 1", attnbench.attention, q, q, q, window=0)
        self.assertRaisesRegex(ValueError, r"^window\[1\] \(right\): -1 must be at least 0",
                               attnbench.attention, q, q, q, window=(3, -1))
        self.assertRaisesRegex(ValueError, r"^window: a right side of 2 with causal", attnbench.attention, q, q, q,
                               causal=True, window=(3, 2))
        self.assertRaisesRegex(ValueError, r"^causal: 'diagonal' must be 'bottom_right' or 'top_left'",
                               attnbench.attention, q, q, q, causal="diagonal")
        self.assertRaisesRegex(ValueError, r"^alignment: 'bottom_right' contradicts causal='top_left'",
                               attnbench.attention, q, q, q, causal="top_left", alignment="bottom_right")
        self.assertRaisesRegex(TypeError, r"^window: expected an int or None, got float", attnbench.attention,
                               q, q, q, window=2.5)
        self.assertRaisesRegex(ValueError, r"^window: a sequence of 3 items", attnbench.attention, q, q, q,
                               window=(1, 2, 3))
        np.testing.assert_array_equal(attnbench.attention(q, q, q, window=np.int64(3), threads=1),
                                      attnbench.attention(q, q, q, window=3, threads=1))

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
        self.raises(ValueError, r"^k = \(1, 10, 8\): has 3 dimensions, q has 2", q, q[None], q[None])
        self.raises(ValueError, r"^v = \(9, 8\): must equal k's shape \(10, 8\)", q, q, q[:9].copy())
        self.raises(ValueError, r"^k = \(10, 4\): head dim 4 must equal q's 8", q, q[:, :4].copy(),
                    q[:, :4].copy())
        q4, k4 = normal(2, 3, 5, 8), normal(1, 3, 5, 8)
        self.raises(ValueError, r"^k = \(1, 3, 5, 8\): batch 1 must equal q's 2", q4, k4, k4)
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


def backward_kernels():
    """The float32-products kernels with a backward (the bf16 ones round: test_bf16.py)."""
    return [k["name"] for k in attnbench.kernels()
            if k["available"] and k["has_backward"] and k["products"] == "f32"]


def relative_error(got, want):
    """The largest |got - want| over 1 + the largest |want|: float32 against float64 gradients,
    whatever their size."""
    return float(np.abs(got - want).max() / (1 + np.abs(want).max()))


class Backward(unittest.TestCase):
    def test_numpy_reference_against_central_differences(self):
        # The yardstick itself: its gradients are those of its forward, to finite-difference accuracy
        # (float64, h = 1e-6), GQA and fully masked causal rows included.
        rng = np.random.default_rng(40)
        for qs, ks, causal in (((2, 4, 5, 3), (2, 2, 7, 3), False), ((6, 3), (4, 3), True)):
            q, k, v, d_o = (rng.standard_normal(s) for s in (qs, ks, ks, qs))
            grads = reference_backward(q, k, v, d_o, causal, 0.7)
            for which, grad in enumerate(grads):
                numeric = np.zeros_like(grad)
                for at in np.ndindex(grad.shape):
                    sides = []
                    for h in (1e-6, -1e-6):
                        args = [q.copy(), k.copy(), v.copy()]
                        args[which][at] += h
                        sides.append(float((reference(*args, causal, 0.7) * d_o).sum()))
                    numeric[at] = (sides[0] - sides[1]) / 2e-6
                self.assertLess(np.abs(numeric - grad).max(), 1e-7, f"{'qkv'[which]} {qs} {ks}")

    def test_return_lse(self):
        q, k, v = normal(2, 12, 8, seed=41), normal(1, 5, 8, seed=42), normal(1, 5, 8, seed=43)
        plain = attnbench.attention(q, k, v, causal=True, threads=1)
        o, lse = attnbench.attention(q, k, v, causal=True, threads=1, return_lse=True)
        self.assertTrue(np.array_equal(o, plain))
        self.assertEqual((lse.shape, lse.dtype), ((2, 12), np.float32))
        s = q.astype(np.float64) @ k[0].T.astype(np.float64) / np.sqrt(8)
        visible = np.arange(5)[None, :] <= np.arange(12)[:, None] - 7
        with np.errstate(divide="ignore"):
            want = np.log(np.where(visible, np.exp(s), 0).sum(axis=-1))
        self.assertTrue(np.all(lse[:, :7] == -np.inf))  # rows that see no key
        np.testing.assert_allclose(lse[:, 7:], want[:, 7:], atol=1e-5)

    def test_gradients_match_float64_reference_for_every_rank_gqa_and_causal(self):
        cases = [((37, 24), (53, 24)), ((4, 37, 24), (2, 53, 24)), ((2, 4, 9, 5), (2, 1, 70, 5)), ((12, 8), (5, 8))]
        kernels = backward_kernels()
        self.assertIn("tiled/scalar", kernels)
        for qs, ks in cases:
            q, k, v, d_o = normal(*qs, seed=44), normal(*ks, seed=45), normal(*ks, seed=46), normal(*qs, seed=47)
            for causal, window, alignment in ((False, None, None), (True, None, None), (True, 6, "top_left"),
                                              (False, (4, 3), None)):
                mask = dict(causal=causal, window=window, alignment=alignment)
                want = reference_backward(q, k, v, d_o, causal, 0.3, window, alignment or "bottom_right")
                for kernel in kernels:
                    o, lse = attnbench.attention(q, k, v, scale=0.3, kernel=kernel, return_lse=True, **mask)
                    grads = attnbench.attention_backward(q, k, v, o, lse, d_o, scale=0.3, kernel=kernel,
                                                         threads=2, **mask)
                    for name, got, expected in zip(("dq", "dk", "dv"), grads, want):
                        self.assertEqual((got.shape, got.dtype), (expected.shape, np.float32), name)
                        self.assertLess(relative_error(got, expected), 1e-5,
                                        f"{kernel} {name} {qs} {ks} {mask}")

    def test_default_kernel_threads_and_read_only_inputs(self):
        q, k, v, d_o = normal(40, 16, seed=48), normal(40, 16, seed=49), normal(40, 16, seed=50), normal(40, 16, seed=51)
        o, lse = attnbench.attention(q, k, v, return_lse=True)
        for x in (q, k, v, o, lse, d_o):
            x.setflags(write=False)
        one = attnbench.attention_backward(q, k, v, o, lse, d_o, threads=1)
        for threads in (2, None):
            for a, b in zip(one, attnbench.attention_backward(q, k, v, o, lse, d_o, threads=threads)):
                self.assertTrue(np.array_equal(a.view(np.uint32), b.view(np.uint32)), threads)
        first = attnbench.attention_backward(q, k, v, o, lse, d_o, kernel=backward_kernels()[0], threads=1)
        for a, b in zip(one, first):  # None: the first available kernel with a backward
            self.assertTrue(np.array_equal(a, b))
        for got, want in zip(one, reference_backward(q, k, v, d_o)):
            self.assertLess(relative_error(got, want), 1e-5)

    @unittest.skipUnless(CLI, "ATTNBENCH_CLI not set")
    def test_bitwise_equal_to_the_cli(self):
        # The CLI runs the kernel's forward for O and LSE itself, then the same backward.
        q, k, v, d_o = normal(1, 4, 70, 33, seed=55), normal(1, 2, 129, 33, seed=56), normal(1, 2, 129, 33, seed=57), \
            normal(1, 4, 70, 33, seed=58)
        with tempfile.TemporaryDirectory() as tmp:
            paths = {}
            for name, x in (("q", q), ("k", k), ("v", v), ("do", d_o)):
                paths[name] = os.path.join(tmp, f"{name}.npy")
                np.save(paths[name], x)
            grads = [os.path.join(tmp, f"d{x}.npy") for x in "qkv"]
            for kernel in backward_kernels():
                for causal in (False, True):
                    subprocess.run([CLI, "backward", "--q", paths["q"], "--k", paths["k"], "--v", paths["v"],
                                    "--do", paths["do"], "--dq", grads[0], "--dk", grads[1], "--dv", grads[2],
                                    "--kernel", kernel, "--threads", "2"] + (["--causal"] if causal else []),
                                   check=True, capture_output=True)
                    o, lse = attnbench.attention(q, k, v, causal=causal, kernel=kernel, return_lse=True)
                    mine = attnbench.attention_backward(q, k, v, o, lse, d_o, causal=causal, kernel=kernel)
                    for name, got, path in zip("qkv", mine, grads):
                        self.assertTrue(np.array_equal(got.view(np.uint32), np.load(path).view(np.uint32)),
                                        f"{kernel} d{name} causal={causal}")

    def test_bad_inputs(self):
        q, d_o = normal(6, 8, seed=52), normal(6, 8, seed=53)
        kv = normal(5, 8, seed=54)
        o, lse = attnbench.attention(q, kv, kv, return_lse=True)

        def raises(error, pattern, *args, **kwargs):
            with self.assertRaisesRegex(error, pattern):
                attnbench.attention_backward(*args, **kwargs)

        raises(ValueError, r"^o: shape \(6, 7\) must equal q's \(6, 8\)", q, kv, kv, o[:, :7].copy(), lse, d_o)
        raises(ValueError, r"^d_o: shape \(1, 6, 8\) must equal q's \(6, 8\)", q, kv, kv, o, lse, d_o[None])
        raises(ValueError, r"^lse: shape \(6, 1\) must equal q's without its last axis, \(6,\)", q, kv, kv, o,
               lse[:, None].copy(), d_o)
        raises(TypeError, r"^lse: dtype float64", q, kv, kv, o, lse.astype(np.float64), d_o)
        raises(TypeError, r"^d_o: expected a numpy.ndarray", q, kv, kv, o, lse, d_o.tolist())
        raises(ValueError, r"^o: not C-contiguous", q, kv, kv, normal(8, 6).T, lse, d_o)
        raises(ValueError, r"^v = \(4, 8\): must equal k's shape \(5, 8\)", q, kv, kv[:4].copy(), o, lse, d_o)
        raises(ValueError, r"^kernel: 'tiled/gpu' is no registry kernel", q, kv, kv, o, lse, d_o, kernel="tiled/gpu")
        for k in attnbench.kernels():
            if k["available"] and not k["has_backward"]:
                raises(ValueError, f"^kernel: '{k['name']}' has no backward pass", q, kv, kv, o, lse, d_o,
                       kernel=k["name"])
        raises(ValueError, r"^threads: -1 must be >= 0", q, kv, kv, o, lse, d_o, threads=-1)
        raises(attnbench.Error, r"^options.scale = inf: must be finite", q, kv, kv, o, lse, d_o, scale=float("inf"))
        raises(attnbench.Error, r"^shape.q_len = 0", q[:0], kv, kv, o[:0], lse[:0], d_o[:0])
        # The naive backward's P and dS past the budget (half of RAM): refused before computing.
        long = np.zeros((1 << 17, 1), np.float32)
        raises(attnbench.Error, r"^options.memory_budget_bytes = .*P and dS need 137438953472 bytes", long, long,
               long, long, long[:, 0].copy(), long, kernel="naive/scalar")
        with self.assertRaises(TypeError):
            attnbench.attention_backward(q, kv, kv, o, lse, d_o, True)  # causal is keyword-only


class Kernels(unittest.TestCase):
    def test_every_registry_kernel_with_its_fields(self):
        kernels = attnbench.kernels()
        names = [k["name"] for k in kernels]
        self.assertIn("tiled/simd", names)
        self.assertEqual(len(names), len(set(names)))
        for k in kernels:
            backend = k["backend"] + ("-bf16" if k["products"] == "bf16" else "")
            self.assertEqual(k["name"].split("/")[:2], [k["strategy"], backend])
            self.assertIn(k["isa"], ("generic", "sse4.2", "avx2", "avx512f", "avx512bf16",
                                      "amxbf16"))
            self.assertIsInstance(k["has_backward"], bool)
            if k["dispatches"]:
                self.assertIn(k["runs"], names)
                self.assertTrue(k["runs"].startswith(k["name"] + "/"))
            else:
                self.assertEqual(k["runs"], k["name"])
            if k["available"]:
                q = normal(5, 3)
                # bf16 products round Q, K, V and the weights to 8 significant bits
                atol = 2 ** -6 * np.abs(q).max() if k["products"] == "bf16" else 2e-6
                np.testing.assert_allclose(attnbench.attention(q, q, q, kernel=k["name"]), reference(q, q, q),
                                           atol=atol)

    @unittest.skipUnless(CLI, "ATTNBENCH_CLI not set")
    def test_same_list_as_the_cli(self):
        header, *listed = subprocess.run([CLI, "list"], check=True, capture_output=True, text=True).stdout.splitlines()
        self.assertEqual(header.split()[:2], ["kernel", "backward"])
        self.assertEqual([line.split()[:2] for line in listed],
                         [[k["name"], "yes" if k["has_backward"] else "no"] for k in attnbench.kernels()])


if __name__ == "__main__":
    unittest.main()
