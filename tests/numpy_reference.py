"""The float64 attention the Python tests compare with: the three steps as the attention module
writes them in NumPy, over arrays of shape (..., n, d), K/V heads broadcast by grouped-query
attention, the bottom-right causal mask."""
import numpy as np


def attention(q, k, v, causal=False, scale=None):
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    if q.ndim >= 3 and k.shape[-3] != q.shape[-3]:
        group = q.shape[-3] // k.shape[-3]
        k, v = np.repeat(k, group, axis=-3), np.repeat(v, group, axis=-3)
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = scale * q @ np.swapaxes(k, -1, -2)
    if causal:
        n, m = s.shape[-2:]
        s = np.where(np.arange(m)[None, :] <= np.arange(n)[:, None] + (m - n), s, -np.inf)
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    return (p / p.sum(axis=-1, keepdims=True)) @ v
