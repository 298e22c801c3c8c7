"""The float64 attention the Python tests compare with: the three steps as the attention module
writes them in NumPy, over arrays of shape (..., n, d), K/V heads broadcast by grouped-query
attention, the causal mask and sliding windows in both alignments; and its backward pass, the
textbook gradients."""
import numpy as np


def _grouped(q, k, v):
    """K and V as float64 with every key/value head repeated for the query heads that read it."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    if q.ndim >= 3 and k.shape[-3] != q.shape[-3]:
        group = q.shape[-3] // k.shape[-3]
        k, v = np.repeat(k, group, axis=-3), np.repeat(v, group, axis=-3)
    return q, k, v


def seen_keys(n, m, causal=False, window=None, alignment="bottom_right"):
    """(n, m) booleans: query row i sees key j. Row i's diagonal key is i + m - n (bottom_right)
    or i (top_left); causal hides the keys after it, window W keeps the W keys ending at it
    (a pair (left, right) also bounds the keys after it by right)."""
    diagonal = np.arange(n)[:, None] + (m - n if alignment == "bottom_right" else 0)
    j = np.arange(m)[None, :]
    left, right = window if isinstance(window, tuple) else (window, None)
    seen = np.ones((n, m), dtype=bool)
    if causal:
        seen &= j <= diagonal
    if right is not None:
        seen &= j <= diagonal + right
    if left is not None:
        seen &= j > diagonal - left
    return seen


def _weights(q, k, causal, scale, window=None, alignment="bottom_right", softcap=None, alibi=None,
             mask=None):
    """P = softmax(scale Q Kᵀ) per row, with the row max subtracted; a row that sees no key (the
    causal mask with more queries than keys, a window past the keys) is all zeros, as the
    library's zero rows are."""
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = scale * q @ np.swapaxes(k, -1, -2)
    if softcap is not None:  # logit soft-capping: s -> softcap tanh(s / softcap)
        s = softcap * np.tanh(s / softcap)
    if alibi is not None:  # ALiBi: query head h adds -alibi[h] |j - d(i)|, d(i) the row's diagonal key
        n, m = s.shape[-2:]
        diagonal = np.arange(n)[:, None] + (m - n if alignment == "bottom_right" else 0)
        distance = np.abs(np.arange(m)[None, :] - diagonal)
        slopes = np.asarray(alibi, dtype=np.float64)
        s = s - (slopes[:, None, None] if s.ndim >= 3 else slopes[0]) * distance  # (n, d): one head
    if mask is not None:  # a mask tensor, broadcast: bool keeps (True) or drops, float32 is added
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask.astype(np.float64)
    if causal or window is not None:
        n, m = s.shape[-2:]
        s = np.where(seen_keys(n, m, causal, window, alignment), s, -np.inf)
    top = s.max(axis=-1, keepdims=True)
    visible = np.isfinite(top)
    p = np.exp(s - np.where(visible, top, 0))
    total = p.sum(axis=-1, keepdims=True)
    return np.where(visible, p / np.where(visible, total, 1), 0), scale


def attention(q, k, v, causal=False, scale=None, window=None, alignment="bottom_right", softcap=None,
              alibi=None, mask=None):
    q, k, v = _grouped(q, k, v)
    p, _ = _weights(q, k, causal, scale, window, alignment, softcap, alibi, mask)
    return p @ v


def attention_backward(q, k, v, d_o, causal=False, scale=None, window=None,
                       alignment="bottom_right", softcap=None, alibi=None, mask=None):
    """(dQ, dK, dV) in float64 of the loss whose gradient with respect to O is dO:
    dV = Pᵀ dO, dP = dO Vᵀ, dS = P ∘ (dP − rowsum(dP ∘ P)), dQ = scale dS K, dK = scale dSᵀ Q;
    under grouped-query attention a key/value head's dK and dV sum its query heads'."""
    kv_shape = k.shape
    q, k, v = _grouped(q, k, v)
    d_o = d_o.astype(np.float64)
    p, scale = _weights(q, k, causal, scale, window, alignment, softcap, alibi, mask)
    dv = np.swapaxes(p, -1, -2) @ d_o
    dp = d_o @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))
    if softcap is not None:  # the cap's derivative at the scaled score: 1 - tanh(s / softcap)^2
        ds = ds * (1 - np.tanh(scale * q @ np.swapaxes(k, -1, -2) / softcap) ** 2)
    dq = scale * ds @ k
    dk = scale * np.swapaxes(ds, -1, -2) @ q
    if dk.shape != kv_shape:  # sum each group of query heads into its key/value head
        grouped = kv_shape[:-2] + (dk.shape[-3] // kv_shape[-3],) + kv_shape[-2:]
        dk = dk.reshape(grouped).sum(axis=-3)
        dv = dv.reshape(grouped).sum(axis=-3)
    return dq, dk, dv
