"""attention(kv_dtype=...) and attnbench.KvCache (python/attnbench_module.cpp) against the float64
reference on K and V rounded as the storage type rounds them, a cache's calls against the plain
call with the same kv_dtype bit for bit, and every error the new arguments and calls raise.

ctest runs it with python_test (tests/CMakeLists.txt), the built package on PYTHONPATH.
"""
import unittest

import numpy as np

import attnbench

from numpy_reference import attention as reference  # noqa: E402

try:
    import ml_dtypes
except ImportError:  # the bf16 reference needs it; the project's .venv has it
    ml_dtypes = None

DTYPES = ("f32", "f16", "bf16")
QUANTISED = ("q8_0", "q4_0")  # tiled/simd only
BYTES = {"f32": 4, "f16": 2, "bf16": 2}


def normal(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


def quantised(x, dtype):
    """x (..., d) stored as ggml's q8_0 or q4_0 and read back: each row in blocks of 32 along d
    (the last padded with zeros), quantised as ggml's reference quantize_row_q8_0_ref / _q4_0_ref,
    in float32 step for step."""
    d = x.shape[-1]
    blocks = -(-d // 32)
    padded = np.zeros(x.shape[:-1] + (blocks * 32,), np.float32)
    padded[..., :d] = x
    b = padded.reshape(x.shape[:-1] + (blocks, 32))
    with np.errstate(divide="ignore"):
        if dtype == "q8_0":
            scale = np.abs(b).max(axis=-1, keepdims=True) / np.float32(127)
            inverse = np.where(scale != 0, np.float32(1) / scale, np.float32(0)).astype(np.float32)
            y = b * inverse
            codes = np.sign(y) * np.floor(np.abs(y) + np.float32(0.5))  # roundf: half away from zero
        else:
            at = np.abs(b).argmax(axis=-1)[..., None]
            scale = np.take_along_axis(b, at, axis=-1) / np.float32(-8)
            inverse = np.where(scale != 0, np.float32(1) / scale, np.float32(0)).astype(np.float32)
            codes = np.minimum(15, np.trunc(b * inverse + np.float32(8.5))) - 8
    values = scale.astype(np.float16).astype(np.float32) * codes.astype(np.float32)
    return values.reshape(padded.shape)[..., :d].astype(np.float32)


def rounded(x, dtype):
    """x stored as `dtype` and read back, as the library stores K and V (to nearest, ties even)."""
    if dtype in QUANTISED:
        return quantised(x, dtype)
    if dtype == "f16":
        return x.astype(np.float16).astype(np.float32)
    if dtype == "bf16":
        return x.astype(ml_dtypes.bfloat16).astype(np.float32)
    return x


def bits(x):
    return x.view(np.uint32)


def storing(dtype):
    """The available float32-products kernels that store K and V as `dtype` (the bf16-products
    kernels round Q and the weights too: test_bf16.py)."""
    return [k["name"] for k in attnbench.kernels()
            if k["available"] and dtype in k["kv_dtypes"] and k["products"] == "f32"]


def cache_kernels():
    """Kernels a KvCache takes: the available ones with a packed layout (they store f16 as well)."""
    return storing("f16")


# (q shape, k shape): one head, grouped-query heads, a batch; lengths that break the tiles.
CASES = [((1, 24), (53, 24)), ((4, 37, 16), (2, 70, 16)), ((2, 4, 3, 5), (2, 1, 130, 5))]


@unittest.skipIf(ml_dtypes is None, "ml_dtypes not installed")
class KvDtype(unittest.TestCase):
    def test_every_storing_kernel_matches_float64_reference_on_rounded_k_v(self):
        for dtype in DTYPES:
            kernels = storing(dtype)
            self.assertIn("tiled/simd", kernels)
            for qs, ks in CASES:
                q, k, v = normal(*qs, seed=1), normal(*ks, seed=2), normal(*ks, seed=3)
                for causal in (False, True):
                    want = reference(q, rounded(k, dtype), rounded(v, dtype), causal)
                    for kernel in kernels:
                        o = attnbench.attention(q, k, v, causal=causal, kernel=kernel, kv_dtype=dtype)
                        self.assertEqual((o.shape, o.dtype), (q.shape, np.float32))
                        np.testing.assert_allclose(o, want, atol=2e-6,
                                                   err_msg=f"{kernel} {dtype} {qs} {ks} causal={causal}")

    def test_quantised_storage_matches_float64_reference_on_ggml_blocks(self):
        for dtype in QUANTISED:
            self.assertEqual(storing(dtype), [k for k in storing("f16") if k.startswith("tiled/simd")])
            for qs, ks in CASES + [((3, 70), (90, 70))]:  # d = 70: a padded third block
                q, k, v = normal(*qs, seed=1), normal(*ks, seed=2), normal(*ks, seed=3)
                for causal in (False, True):
                    want = reference(q, rounded(k, dtype), rounded(v, dtype), causal)
                    for kernel in storing(dtype):
                        o = attnbench.attention(q, k, v, causal=causal, kernel=kernel, kv_dtype=dtype)
                        np.testing.assert_allclose(o, want, atol=2e-6,
                                                   err_msg=f"{kernel} {dtype} {qs} {ks} causal={causal}")
            # the quantisation is real: 8 or 4 bits move the output
            q, k, v = normal(8, 64, seed=4), normal(64, 64, seed=5), normal(64, 64, seed=6)
            self.assertGreater(np.abs(attnbench.attention(q, k, v, kv_dtype=dtype) -
                                      attnbench.attention(q, k, v)).max(), 1e-3)

    def test_quantised_cache_equals_the_plain_call_bit_for_bit(self):
        for dtype in QUANTISED:
            k, v, q = normal(2, 100, 40, seed=7), normal(2, 100, 40, seed=8), normal(4, 1, 40, seed=9)
            cache = attnbench.KvCache(2, 40, 128, kv_dtype=dtype)
            for t in range(100):
                cache.append(k[:, t:t + 1].copy(), v[:, t:t + 1].copy())
            self.assertEqual(cache.dtype, dtype)
            self.assertTrue(np.array_equal(bits(cache.attention(q)),
                                           bits(attnbench.attention(q, k, v, kv_dtype=dtype))))
        with self.assertRaisesRegex(ValueError, "kv_dtype.*q8_0.*naive/simd"):
            attnbench.attention(q, k, v, kernel="naive/simd", kv_dtype="q8_0")
        bad = k.copy()
        bad[1, 3, 5] = np.nan
        with self.assertRaisesRegex(ValueError, r"k.*nan.*finite values only"):
            attnbench.attention(q, bad, v, kv_dtype="q8_0")

    def test_quantised_query_matches_float64_reference_on_the_rounded_query(self):
        # quantise_query: Q rounded to q8_0 as well (ggml's way), Q K^T on those values; decode
        # shapes (one row a head, grouped heads) take integer dot products on AVX-512 VNNI.
        for dtype in QUANTISED:
            for qs, ks in [((8, 1, 64), (2, 300, 64)), ((4, 3, 70), (4, 90, 70)), ((50, 64), (200, 64))]:
                q, k, v = normal(*qs, seed=11), normal(*ks, seed=12), normal(*ks, seed=13)
                want = reference(quantised(q, "q8_0"), rounded(k, dtype), rounded(v, dtype), False)
                o = attnbench.attention(q, k, v, kv_dtype=dtype, quantise_query=True)
                np.testing.assert_allclose(o, want, atol=2e-6, err_msg=f"{dtype} {qs} {ks}")
                cache = attnbench.KvCache(ks[0] if len(ks) == 3 else 1, ks[-1], ks[-2], kv_dtype=dtype)
                cache.append(k if len(ks) == 3 else k[None], v if len(ks) == 3 else v[None])
                if len(qs) == 3:
                    self.assertTrue(np.array_equal(bits(cache.attention(q, quantise_query=True)), bits(o)))
        q, k, v = normal(2, 64, seed=1), normal(9, 64, seed=2), normal(9, 64, seed=3)
        with self.assertRaisesRegex(ValueError, r"quantise_query.*needs K stored quantised"):
            attnbench.attention(q, k, v, kv_dtype="f16", quantise_query=True)

    def test_16_bit_storage_rounds_k_and_v(self):
        # Not the float32 result: the rounding is real (and the rounded reference above is met).
        q, k, v = normal(8, 32, seed=4), normal(64, 32, seed=5), normal(64, 32, seed=6)
        exact = attnbench.attention(q, k, v)
        for dtype in ("f16", "bf16"):
            self.assertGreater(np.abs(attnbench.attention(q, k, v, kv_dtype=dtype) - exact).max(), 1e-5)

    def test_f32_default_and_numpy_spellings_are_the_same_call(self):
        q, k, v = normal(3, 9, 16, seed=7), normal(3, 40, 16, seed=8), normal(3, 40, 16, seed=9)
        plain = attnbench.attention(q, k, v, threads=1)
        for spelling in ("f32", "float32", np.float32, np.dtype(np.float32)):
            self.assertTrue(np.array_equal(bits(plain), bits(attnbench.attention(q, k, v, threads=1,
                                                                                  kv_dtype=spelling))))
        for dtype, spellings in (("f16", ("float16", np.float16, np.dtype("float16"))),
                                 ("bf16", ("bfloat16", ml_dtypes.bfloat16))):
            want = attnbench.attention(q, k, v, threads=1, kv_dtype=dtype)
            for spelling in spellings:
                got = attnbench.attention(q, k, v, threads=1, kv_dtype=spelling)
                self.assertTrue(np.array_equal(bits(want), bits(got)), (dtype, spelling))
            # And the same bits on every thread count.
            self.assertTrue(np.array_equal(bits(want), bits(attnbench.attention(q, k, v, kv_dtype=dtype))))

    def test_return_lse_with_16_bit_storage(self):
        q, k, v = normal(5, 8, seed=10), normal(12, 8, seed=11), normal(12, 8, seed=12)
        o, lse = attnbench.attention(q, k, v, kv_dtype="bf16", return_lse=True)
        self.assertTrue(np.array_equal(bits(o), bits(attnbench.attention(q, k, v, kv_dtype="bf16"))))
        s = q.astype(np.float64) @ rounded(k, "bf16").T.astype(np.float64) / np.sqrt(8)
        np.testing.assert_allclose(lse, np.log(np.exp(s).sum(axis=-1)), atol=1e-5)


class Cache(unittest.TestCase):
    def filled(self, ks, dtype, kernel=None, appends=(), seed=20, capacity=None):
        """A cache for K and V of shape `ks` (rank 2..4) filled by appends of the given token counts
        (the rest one token at a time), and the K and V appended."""
        k, v = normal(*ks, seed=seed), normal(*ks, seed=seed + 1)
        dims = (1,) * (4 - len(ks)) + ks
        cache = attnbench.KvCache(dims[1], dims[3], capacity or dims[2], dims[0], kv_dtype=dtype,
                                  kernel=kernel)
        counts = list(appends) + [1] * (ks[-2] - sum(appends))
        at = 0
        for count in counts:
            cache.append(k[..., at:at + count, :].copy(), v[..., at:at + count, :].copy())
            at += count
        return cache, k, v

    def test_calls_equal_the_plain_call_with_the_same_kv_dtype_bit_for_bit(self):
        for kernel in (None, "naive/simd"):
            for dtype in DTYPES:
                for qs, ks in CASES:
                    cache, k, v = self.filled(ks, dtype, kernel, appends=(ks[-2] - 3,), seed=21)
                    q = normal(*qs, seed=22)
                    # and windows: a decode step reads only the keys its window reaches
                    for mask in (dict(causal=False), dict(causal=True), dict(causal=True, window=5),
                                 dict(window=(7, 2), alignment="top_left")):
                        plain = attnbench.attention(q, k, v, kernel=kernel, kv_dtype=dtype, return_lse=True,
                                                    **mask)
                        for got in (attnbench.attention(q, cache=cache, return_lse=True, **mask),
                                    cache.attention(q, return_lse=True, **mask),
                                    attnbench.attention(q, cache=cache, kv_dtype=dtype, kernel=kernel, threads=1,
                                                        return_lse=True, **mask)):
                            for a, b in zip(plain, got):
                                self.assertTrue(np.array_equal(bits(a), bits(b)),
                                                f"{kernel} {dtype} {qs} {ks} {mask}")

    def test_decoding_one_token_at_a_time_equals_the_plain_call_at_every_length(self):
        for dtype in DTYPES:
            cache = attnbench.KvCache(2, 16, 40, kv_dtype=dtype)
            k, v, q = normal(2, 40, 16, seed=23), normal(2, 40, 16, seed=24), normal(4, 40, 16, seed=25)
            cache.append(k[:, :17].copy(), v[:, :17].copy())  # prefill
            for t in range(17, 40):
                cache.append(k[:, t:t + 1].copy(), v[:, t:t + 1].copy())
                q_t = q[:, t:t + 1].copy()
                want = attnbench.attention(q_t, k[:, :t + 1].copy(), v[:, :t + 1].copy(), kv_dtype=dtype)
                self.assertTrue(np.array_equal(bits(want), bits(attnbench.attention(q_t, cache=cache))),
                                f"{dtype} length {t + 1}")

    @unittest.skipIf(ml_dtypes is None, "ml_dtypes not installed")
    def test_matches_float64_reference_on_rounded_k_v(self):
        for dtype in DTYPES:
            for qs, ks in CASES:
                cache, k, v = self.filled(ks, dtype, appends=(7,), seed=26)
                q = normal(*qs, seed=27)
                for causal in (False, True):
                    np.testing.assert_allclose(attnbench.attention(q, cache=cache, causal=causal),
                                               reference(q, rounded(k, dtype), rounded(v, dtype), causal),
                                               atol=2e-6, err_msg=f"{dtype} {qs} {ks}")

    def test_truncate_clear_and_append_again(self):
        cache, k, v = self.filled((2, 30, 8), "f16", appends=(30,), seed=28, capacity=48)
        q = normal(4, 3, 8, seed=29)
        other_k, other_v = normal(2, 10, 8, seed=30), normal(2, 10, 8, seed=31)
        cache.truncate(20)  # a rejected speculative step: its tokens replaced by others
        self.assertEqual(cache.length, 20)
        cache.append(other_k, other_v)
        want = attnbench.attention(q, np.concatenate([k[:, :20], other_k], axis=1),
                                   np.concatenate([v[:, :20], other_v], axis=1), kv_dtype="f16")
        self.assertTrue(np.array_equal(bits(want), bits(attnbench.attention(q, cache=cache))))
        cache.truncate(cache.length)  # keeping everything is allowed
        cache.clear()
        self.assertEqual((cache.length, len(cache), cache.kv_bytes), (0, 0, 0))
        cache.append(other_k, other_v)
        want = attnbench.attention(q, other_k, other_v, kv_dtype="f16")
        self.assertTrue(np.array_equal(bits(want), bits(attnbench.attention(q, cache=cache))))
        cache.truncate(0)
        self.assertEqual(cache.length, 0)

    def test_properties(self):
        default = next(k["runs"] for k in attnbench.kernels() if k["available"])
        for dtype in DTYPES:
            cache = attnbench.KvCache(3, 10, 50, 2, kv_dtype=dtype)
            self.assertEqual((cache.kv_heads, cache.head_dim, cache.capacity, cache.batch, cache.dtype),
                             (3, 10, 50, 2, dtype))
            self.assertEqual(cache.kernel, default)
            self.assertEqual((cache.length, cache.kv_bytes), (0, 0))
            cache.append(normal(2, 3, 7, 10), normal(2, 3, 7, 10))
            self.assertEqual((cache.length, len(cache)), (7, 7))
            self.assertEqual(cache.kv_bytes, 2 * 2 * 3 * 7 * 10 * BYTES[dtype])
            self.assertGreaterEqual(cache.storage_bytes, 2 * 2 * 3 * 50 * 10 * BYTES[dtype])
            self.assertIn(f"kv_dtype='{dtype}'", repr(cache))
            self.assertIn("length 7", repr(cache))
        self.assertEqual(attnbench.KvCache(1, 4, 4, kernel="naive/simd").kernel,
                         next(k["runs"] for k in attnbench.kernels() if k["name"] == "naive/simd"))
        self.assertEqual(attnbench.KvCache(1, 4, 4, kv_dtype=np.float16).dtype, "f16")

    def test_every_kernel_with_a_packed_layout_keeps_a_cache(self):
        q = normal(2, 5, 12, seed=32)
        for kernel in cache_kernels():
            for dtype in DTYPES:
                cache, k, v = self.filled((1, 33, 12), dtype, kernel, appends=(30,), seed=33)
                want = attnbench.attention(q, k, v, kernel=kernel, kv_dtype=dtype)
                self.assertTrue(np.array_equal(bits(want), bits(attnbench.attention(q, cache=cache))),
                                f"{kernel} {dtype}")

    def test_appends_and_calls_from_two_python_threads(self):
        # One thread decodes token by token while this one calls on the cache: every call sees the
        # cache between two appends, so its result is the plain call's at some length.
        import threading
        k, v, q = normal(2, 64, 16, seed=34), normal(2, 64, 16, seed=35), normal(4, 1, 16, seed=36)
        want = {attnbench.attention(q, k[:, :n].copy(), v[:, :n].copy(), kv_dtype="f16").tobytes()
                for n in range(1, 65)}
        cache = attnbench.KvCache(2, 16, 64, kv_dtype="f16")
        cache.append(k[:, :1].copy(), v[:, :1].copy())
        writer = threading.Thread(target=lambda: [cache.append(k[:, t:t + 1].copy(), v[:, t:t + 1].copy())
                                                  for t in range(1, 64)])
        writer.start()
        calls = 0
        while writer.is_alive() or calls == 0:
            self.assertIn(attnbench.attention(q, cache=cache, threads=1).tobytes(), want)
            calls += 1
        writer.join()
        self.assertEqual(cache.length, 64)


class BadInput(unittest.TestCase):
    q, k = normal(6, 8, seed=40), normal(9, 8, seed=41)

    def raises(self, error, pattern, call, *args, **kwargs):
        with self.assertRaisesRegex(error, pattern):
            call(*args, **kwargs)

    def test_kv_dtype(self):
        q, k = self.q, self.k
        self.raises(ValueError, r"^kv_dtype: 'f8' is no K/V storage type, expected 'f32', 'f16', 'bf16', 'q8_0' or 'q4_0'",
                    attnbench.attention, q, k, k, kv_dtype="f8")
        self.raises(ValueError, r"^kv_dtype: 'float64' is no K/V storage type", attnbench.attention, q, k, k,
                    kv_dtype=np.float64)
        self.raises(TypeError, r"^kv_dtype: expected 'f32', 'f16', 'bf16', 'q8_0' or 'q4_0', got 16 \(int\)", attnbench.attention,
                    q, k, k, kv_dtype=16)
        self.raises(ValueError, r"^kv_dtype: 'object' is no K/V storage type", attnbench.attention, q, k, k,
                    kv_dtype=list)  # a type NumPy maps to its object dtype
        for kernel in ("tiled/scalar", "naive/openblas"):
            self.raises(attnbench.Error, f"^kv_dtype = f16: kernel {kernel} stores K and V as f32 only",
                        attnbench.attention, q, k, k, kernel=kernel, kv_dtype="f16")
        # A finite value the 16-bit type would turn into an infinity, named with its index.
        big = k.copy()
        big[2, 3] = 70000.0
        self.raises(attnbench.Error, r"^k = \[19\] 70000: a finite value that f16 storage would turn into an "
                    r"infinity", attnbench.attention, q, big, k, kv_dtype="f16")
        self.raises(attnbench.Error, r"^v = \[19\] 70000", attnbench.attention, q, k, big, kv_dtype="f16")
        attnbench.attention(q, big, big, kv_dtype="bf16")  # bfloat16 holds it
        self.raises(TypeError, r"^k: None; pass K and V as arrays, or cache=KvCache", attnbench.attention, q)
        self.raises(TypeError, r"^v: None", attnbench.attention, q, k)

    def test_cache_constructor(self):
        for name, args in (("kv_heads", (0, 8, 4)), ("head_dim", (1, 0, 4)), ("capacity", (1, 8, 0)),
                           ("batch", (1, 8, 4, 0))):
            self.raises(attnbench.Error, f"^{name} = 0: must be at least 1", attnbench.KvCache, *args)
        self.raises(attnbench.Error, r"^head_dim = -1: must be at least 1", attnbench.KvCache, 1, -1, 4)
        self.raises(attnbench.Error, r"^capacity = overflow: .* does not fit in 64 bits",
                    attnbench.KvCache, 1, 8, 1 << 62)
        self.raises(attnbench.Error, r"^kernel = tiled/scalar: reads K and V in place, so it has no packed layout",
                    attnbench.KvCache, 1, 8, 4, kernel="tiled/scalar")
        self.raises(attnbench.Error, r"^kv_dtype = bf16: kernel naive/openblas stores K and V as f32 only",
                    attnbench.KvCache, 1, 8, 4, kernel="naive/openblas", kv_dtype="bf16")
        self.raises(ValueError, r"^kernel: 'tiled/gpu' is no registry kernel", attnbench.KvCache, 1, 8, 4,
                    kernel="tiled/gpu")
        self.raises(ValueError, r"^kv_dtype: 'int8' is no K/V storage type", attnbench.KvCache, 1, 8, 4,
                    kv_dtype=np.int8)
        self.raises(TypeError, r"^kv_dtype: expected 'f32', 'f16', 'bf16', 'q8_0' or 'q4_0', got None", attnbench.KvCache, 1, 8, 4,
                    kv_dtype=None)
        with self.assertRaises(TypeError):
            attnbench.KvCache(1, 8, 4, 1, "f16")  # kv_dtype is keyword-only

    def test_append(self):
        cache = attnbench.KvCache(2, 8, 12, kv_dtype="f16")
        k = normal(2, 10, 8, seed=42)
        cache.append(k, k)
        before = attnbench.attention(normal(2, 1, 8), cache=cache)

        def unchanged():
            self.assertEqual(cache.length, 10)
            self.assertTrue(np.array_equal(bits(before), bits(attnbench.attention(normal(2, 1, 8), cache=cache))))

        self.raises(ValueError, r"^k: 3 tokens exceed the cache's room: it holds 10 of its capacity of 12 tokens",
                    cache.append, k[:, :3].copy(), k[:, :3].copy())
        unchanged()
        big = k[:, :2].copy()
        big[1, 1, 7] = -1e6
        self.raises(attnbench.Error, r"^k = \[31\] -1000000: a finite value that f16 storage would turn into an "
                    r"infinity", cache.append, big, k[:, :2].copy())
        self.raises(attnbench.Error, r"^v = \[31\] -1000000", cache.append, k[:, :2].copy(), big)
        unchanged()
        two = k[:, :2].copy()
        self.raises(TypeError, r"^k: dtype float64, expected float32", cache.append, two.astype(np.float64), two)
        self.raises(TypeError, r"^v: dtype float16", cache.append, two, two.astype(np.float16))
        self.raises(TypeError, r"^v: expected a numpy.ndarray of float32, got list", cache.append, two, two.tolist())
        self.raises(ValueError, r"^v: shape \(2, 1, 8\) must equal k's \(2, 2, 8\)", cache.append, two,
                    two[:, :1].copy())
        self.raises(ValueError, r"^k: kv_heads 3 \(shape \(3, 2, 8\)\) must equal the cache's kv_heads 2",
                    cache.append, normal(3, 2, 8), normal(3, 2, 8))
        self.raises(ValueError, r"^k: kv_heads 1 \(shape \(2, 8\)\) must equal the cache's kv_heads 2",
                    cache.append, two[0], two[0])
        self.raises(ValueError, r"^k: head_dim 4 \(shape \(2, 2, 4\)\) must equal the cache's head_dim 8",
                    cache.append, two[..., :4].copy(), two[..., :4].copy())
        self.raises(ValueError, r"^k: batch 3 \(shape \(3, 2, 2, 8\)\) must equal the cache's batch 1",
                    cache.append, normal(3, 2, 2, 8), normal(3, 2, 2, 8))
        self.raises(ValueError, r"^k: shape \(8,\) has rank 1", cache.append, two[0, 0], two[0, 0])
        self.raises(ValueError, r"^k: not C-contiguous", cache.append, normal(2, 8, 2).transpose(0, 2, 1), two)
        self.raises(ValueError, r"^threads: -1 must be >= 0", cache.append, two, two, threads=-1)
        unchanged()
        cache.append(two, two)  # exactly the room left
        self.assertEqual(cache.length, 12)

    def test_truncate(self):
        cache = attnbench.KvCache(1, 8, 12)
        cache.append(self.k, self.k)
        self.raises(attnbench.Error, r"^length = 10: the cache holds only 9 tokens", cache.truncate, 10)
        self.raises(ValueError, r"^length: -1 must be >= 0", cache.truncate, -1)
        self.assertEqual(cache.length, 9)

    def test_attention_on_a_cache(self):
        cache = attnbench.KvCache(2, 8, 16, 2, kv_dtype="bf16")
        q = normal(2, 4, 3, 8, seed=43)
        self.raises(ValueError, r"^cache: holds no tokens \(length 0\); append K and V first", attnbench.attention,
                    q, cache=cache)
        cache.append(normal(2, 2, 5, 8), normal(2, 2, 5, 8))
        self.raises(TypeError, r"^cache: expected an attnbench.KvCache, got list", attnbench.attention, q,
                    cache=[])
        self.raises(TypeError, r"^k: got ndarray, must be None when cache= holds K and V", attnbench.attention,
                    q, q, cache=cache)
        self.raises(TypeError, r"^v: got ndarray, must be None", attnbench.attention, q, None, q, cache=cache)
        self.raises(ValueError, r"^kv_dtype: 'f16', but the cache stores bf16", attnbench.attention, q,
                    cache=cache, kv_dtype="f16")
        self.raises(ValueError, r"^kv_dtype: 'f32', but the cache stores bf16", attnbench.attention, q,
                    cache=cache, kv_dtype="f32")
        self.raises(ValueError, r"^q: batch 1 \(shape \(4, 3, 8\)\) must equal the cache's batch 2",
                    attnbench.attention, q[0].copy(), cache=cache)
        self.raises(ValueError, r"^q: head dim 4 must equal the cache's head_dim 8", attnbench.attention,
                    q[..., :4].copy(), cache=cache)
        self.raises(ValueError, r"^q: 3 heads \(shape \(2, 3, 3, 8\)\) must be a multiple of the cache's kv_heads 2",
                    attnbench.attention, q[:, :3].copy(), cache=cache)
        self.raises(TypeError, r"^q: dtype float64", attnbench.attention, q.astype(np.float64), cache=cache)
        self.raises(attnbench.Error, f"^cache = {cache.kernel}: is packed in that kernel's layout, which kernel "
                    "tiled/scalar does not read", attnbench.attention, q, cache=cache, kernel="tiled/scalar")
        self.raises(ValueError, r"^kernel: 'tiled/gpu' is no registry kernel", attnbench.attention, q,
                    cache=cache, kernel="tiled/gpu")
        self.raises(ValueError, r"^threads: -1 must be >= 0", cache.attention, q, threads=-1)
        self.raises(attnbench.Error, r"^shape.q_len = 0", cache.attention, q[:, :, :0].copy())
        with self.assertRaises(TypeError):
            cache.attention(q, True)  # causal is keyword-only


if __name__ == "__main__":
    unittest.main()
