"""attnbench: scaled dot-product attention on the CPU, O = softmax(Q K^T * scale) V.

The library's kernels (naive and tiled; scalar, auto-vectorised, xsimd per ISA, OpenBLAS) on
float32 NumPy arrays, read in place, with the GIL released while they run:

    import attnbench, numpy as np
    o = attnbench.attention(q, k, v, causal=True)               # (n, d), (h, n, d), (b, h, n, d)
    o = attnbench.attention(q, k, v, kv_dtype="bf16")           # K and V stored as bfloat16
    o = attnbench.attention(q, k, v, causal=True, window=4096)  # a sliding window (docs/masks.md)
    o, lse = attnbench.attention(q, k, v, return_lse=True)
    dq, dk, dv = attnbench.attention_backward(q, k, v, o, lse, d_o)
    cache = attnbench.KvCache(kv_heads=2, head_dim=64, capacity=4096, kv_dtype="f16")
    cache.append(k, v)                                          # prefill, then one token a step
    o = attnbench.attention(q, cache=cache)
    attnbench.kernels()                                         # the registry, in priority order

Errors are TypeError or ValueError naming the argument and its value; what the library itself
rejects is attnbench.Error, a ValueError.
"""
from ._core import Error, KvCache, __version__, alibi_slopes, attention, attention_backward, kernels

__all__ = ["Error", "KvCache", "__version__", "alibi_slopes", "attention", "attention_backward", "kernels"]
