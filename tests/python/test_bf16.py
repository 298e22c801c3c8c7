"""attention() with a bf16-products kernel (python/attnbench_module.cpp): bfloat16 arrays as NumPy
users hold them (ml_dtypes.bfloat16) taken as their float32 values, and the result against the
float64 reference on the bfloat16-rounded inputs within one bfloat16 rounding of the weights.

ctest runs it with python_test (tests/CMakeLists.txt), the built package on PYTHONPATH.
"""
import unittest

import numpy as np

import attnbench

from numpy_reference import attention as reference  # noqa: E402

try:
    import ml_dtypes
except ImportError:  # the project's .venv has it
    ml_dtypes = None


def normal(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


def bf16_kernels():
    return [k["name"] for k in attnbench.kernels() if k["available"] and k["products"] == "bf16"]


@unittest.skipIf(ml_dtypes is None, "ml_dtypes not installed")
class Bf16Products(unittest.TestCase):
    def test_listed_with_their_products_and_storage(self):
        for k in attnbench.kernels():
            if k["products"] == "bf16":
                self.assertEqual(k["kv_dtypes"], ["bf16"])
                if k["available"]:
                    self.assertTrue(k["has_backward"], k["name"])
        self.assertIn("tiled/scalar-bf16", bf16_kernels())  # runs on every CPU

    def test_within_one_weight_rounding_of_the_rounded_reference(self):
        for qs, ks in (((1, 24), (53, 24)), ((4, 37, 16), (2, 70, 16)), ((2, 4, 3, 5), (2, 1, 130, 5))):
            q, k, v = normal(*qs, seed=1), normal(*ks, seed=2), normal(*ks, seed=3)
            q16, k16, v16 = (x.astype(ml_dtypes.bfloat16) for x in (q, k, v))
            want = reference(*(x.astype(np.float32) for x in (q16, k16, v16)), False)
            for kernel in bf16_kernels():
                o = attnbench.attention(q, k, v, kernel=kernel)
                self.assertEqual((o.shape, o.dtype), (q.shape, np.float32))
                # each weight rounded once (2^-8 relative), V's mix moved by at most that
                np.testing.assert_allclose(o, want, atol=2 ** -8 * np.abs(v16.astype(np.float32)).max(),
                                           err_msg=f"{kernel} {qs}")
                self.assertGreater(np.abs(o - reference(q, k, v, False)).max(), 1e-5)  # rounding is real
                # bfloat16 arrays are their float32 values: the same call, bit for bit
                o16 = attnbench.attention(q16, k16, v16, kernel=kernel)
                self.assertTrue(np.array_equal(o16.view(np.uint32), o.view(np.uint32)), kernel)

    def test_gradients_within_the_weight_rounding_of_the_rounded_reference(self):
        from numpy_reference import attention_backward as reference_backward  # noqa: E402
        q, k, v, d_o = normal(37, 24, seed=44), normal(53, 24, seed=45), normal(53, 24, seed=46), normal(37, 24, seed=47)
        rounded = [x.astype(ml_dtypes.bfloat16).astype(np.float32) for x in (q, k, v, d_o)]
        for causal in (False, True):
            want = reference_backward(*rounded, causal, 0.3)
            for kernel in bf16_kernels():
                o, lse = attnbench.attention(q, k, v, causal=causal, scale=0.3, kernel=kernel, return_lse=True)
                grads = attnbench.attention_backward(q, k, v, o, lse, d_o, causal=causal, scale=0.3, kernel=kernel)
                for name, got, expected in zip(("dq", "dk", "dv"), grads, want):
                    # each term has one factor (P or dS) rounded once: 2^-8 relative, well within 2^-5
                    error = np.abs(got - expected).max() / (1 + np.abs(expected).max())
                    self.assertLess(error, 2 ** -5, f"{kernel} {name} causal={causal}")

    def test_float16_storage_is_refused_naming_the_argument(self):
        q = normal(4, 8)
        with self.assertRaisesRegex(attnbench.Error, r"^kv_dtype = f16: kernel tiled/scalar-bf16 stores K and V as bf16"):
            attnbench.attention(q, q, q, kernel="tiled/scalar-bf16", kv_dtype="f16")


@unittest.skipIf(ml_dtypes is None, "ml_dtypes not installed")
class Bf16Output(unittest.TestCase):
    def test_out_dtype_bf16_is_the_float32_result_rounded_as_ml_dtypes_rounds(self):
        q, k, v = normal(2, 19, 8, seed=1), normal(2, 23, 8, seed=2), normal(2, 23, 8, seed=3)
        cache = attnbench.KvCache(2, 8, 32)
        cache.append(k, v)
        for kernel in ("tiled/simd", "tiled/scalar"):
            want = attnbench.attention(q, k, v, causal=True, kernel=kernel)
            for out_dtype in ("bf16", ml_dtypes.bfloat16):
                o, lse = attnbench.attention(q, k, v, causal=True, kernel=kernel, out_dtype=out_dtype,
                                             return_lse=True)
                self.assertEqual(o.dtype, ml_dtypes.bfloat16)
                self.assertEqual(lse.dtype, np.float32)
                self.assertEqual(o.tobytes(), want.astype(ml_dtypes.bfloat16).tobytes(), kernel)
            self.assertEqual(attnbench.attention(q, k, v, causal=True, kernel=kernel, out_dtype="f32").tobytes(),
                             want.tobytes())
        through_cache = cache.attention(q, causal=True, out_dtype="bf16")
        self.assertEqual(through_cache.tobytes(),
                         attnbench.attention(q, k, v, causal=True, kernel=cache.kernel).astype(ml_dtypes.bfloat16).tobytes())

    def test_a_bad_out_dtype_is_named(self):
        q = normal(4, 8)
        with self.assertRaisesRegex(ValueError, r"^out_dtype: 'float16', expected 'f32' or 'bf16'"):
            attnbench.attention(q, q, q, out_dtype=np.float16)
        with self.assertRaisesRegex(TypeError, r"^out_dtype: expected 'f32' or 'bf16', got 3"):
            attnbench.attention(q, q, q, out_dtype=3)


if __name__ == "__main__":
    unittest.main()
