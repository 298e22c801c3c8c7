"""Type stubs of the extension attnbench._core (python/attnbench_module.cpp): what editors, type
checkers and help() show. Keep in step with the module's signatures."""
from collections.abc import Sequence
from typing import Any, Literal, TypeAlias, TypedDict, overload

import numpy as np
import numpy.typing as npt

__version__: str

Float32Array: TypeAlias = npt.NDArray[np.float32]
KvDtype: TypeAlias = Literal["f32", "f16", "bf16"] | type | np.dtype[Any]
OutDtype: TypeAlias = Literal["f32", "bf16"] | type | np.dtype[Any] | None
""""f32" (None, np.float32) or "bf16" (ml_dtypes.bfloat16): O's type; a bf16 O is an
ml_dtypes.bfloat16 array, where the annotations say Float32Array."""
Alignment: TypeAlias = Literal["bottom_right", "top_left"]
Causal: TypeAlias = bool | Alignment
Window: TypeAlias = int | tuple[int | None, int | None] | None
Mask: TypeAlias = npt.NDArray[np.bool_] | npt.NDArray[np.float32] | None
"""A bool (True: the key takes part) or float32 (added to the score) mask broadcasting to
(batch, q_heads, q_len, kv_len), its last axis kv_len."""
""""f32", "f16" or "bf16", or a NumPy dtype or scalar type of float32, float16 or bfloat16."""

class Error(ValueError):
    """An invalid shape, option, size or value, as the library reports it: the message names the
    field (or the argument) and its value, e.g. 'shape.q_len = 0: must be at least 1'."""

class KernelInfo(TypedDict):
    """One registry entry, as kernels() lists it."""

    name: str
    """"strategy/backend[/isa]", e.g. "tiled/simd/avx2"."""
    strategy: Literal["naive", "tiled"]
    backend: Literal["scalar", "autovec", "simd", "openblas"]
    isa: Literal["generic", "sse4.2", "avx2", "avx512f", "avx512bf16", "amxbf16"]
    products: Literal["f32", "bf16"]
    available: bool
    """Whether it runs on this CPU."""
    dispatches: bool
    """Whether it picks its best ISA variant at run time."""
    runs: str
    """The kernel it runs here: itself, or the variant a dispatching entry picks."""
    has_backward: bool
    """Whether the kernel it runs has a backward pass (attention_backward)."""
    kv_dtypes: list[Literal["f32", "f16", "bf16"]]
    """The K/V storage types it takes (attention's kv_dtype, KvCache)."""

class KvCache:
    """One layer's keys and values, kept packed for attention() to read as they are.

    The cache holds up to `capacity` tokens for batch x kv_heads key/value heads of head_dim
    elements, stored as kv_dtype in the layout of `kernel`. Each append packs (and rounds) only the
    new tokens; attention(q, cache=cache) reads them with no copy and equals, bit for bit,
    attention(q, k, v, kv_dtype=cache.dtype) on the K and V appended so far. Safe to share between
    Python threads.
    """

    def __init__(self, kv_heads: int, head_dim: int, capacity: int, batch: int = 1, *,
                 kv_dtype: KvDtype = "f32", kernel: str | None = None) -> None:
        """An empty cache for batch x kv_heads heads of head_dim elements, up to capacity tokens.

        Args:
            kv_heads: key/value heads per batch entry (>= 1); the queries' heads must be a multiple.
            head_dim: elements per key and value row (>= 1); the queries' last axis.
            capacity: most tokens the cache holds (>= 1); its storage is allocated now.
            batch: batch entries (>= 1), the queries' first axis when they have rank 4.
            kv_dtype: how K and V are stored: "f32", "f16" or "bf16".
            kernel: a kernel name with a packed layout (tiled/simd, naive/simd or an ISA variant),
                default the registry's first that runs here.

        Raises:
            Error: a size below 1, a kernel that reads K and V in place, a kv_dtype it does not
                store. ValueError: an unknown kernel or kv_dtype name. TypeError: a bad kv_dtype.
        """
    def append(self, k: Float32Array, v: Float32Array, *, threads: int | None = None) -> None:
        """Appends K and V rows of new tokens, rounded to the cache's dtype.

        Args:
            k: float32 keys of shape (tokens, head_dim), (kv_heads, tokens, head_dim) or
                (batch, kv_heads, tokens, head_dim), C-contiguous, the cache's sizes.
            v: float32 values of k's shape.
            threads: packing threads, None for every core.

        Raises:
            TypeError: k or v not a float32 ndarray. ValueError: shapes that differ from each other
                or the cache's, more tokens than the capacity has left. Error: a finite value the
                16-bit dtype would turn into an infinity. The cache is unchanged on any error.
        """
    def truncate(self, length: int) -> None:
        """Keeps the first `length` tokens and forgets the rest.

        Args:
            length: tokens to keep, 0 to the cache's length.

        Raises:
            ValueError: a negative length. Error: more tokens than the cache holds.
        """
    def clear(self) -> None:
        """Forgets every token; the capacity and the storage are kept."""
    @overload
    def attention(self, q: Float32Array, *, causal: Causal = False, window: Window = None,
                  alignment: Alignment | None = None, scale: float | None = None,
                  softcap: float | None = None, alibi_slopes: Sequence[float] | None = None,
                  kernel: str | None = None, threads: int | None = None,
                  return_lse: Literal[False] = False, mask: Mask = None,
                  quantise_query: bool = False, out_dtype: OutDtype = None) -> Float32Array: ...
    @overload
    def attention(self, q: Float32Array, *, causal: Causal = False, window: Window = None,
                  alignment: Alignment | None = None, scale: float | None = None,
                  softcap: float | None = None, alibi_slopes: Sequence[float] | None = None,
                  kernel: str | None = None, threads: int | None = None,
                  return_lse: Literal[True], mask: Mask = None,
                  quantise_query: bool = False, out_dtype: OutDtype = None) -> tuple[Float32Array, Float32Array]: ...
    def __len__(self) -> int:
        """Tokens the cache holds now (its length)."""
    @property
    def length(self) -> int:
        """Tokens the cache holds now."""
    @property
    def capacity(self) -> int:
        """Most tokens the cache holds."""
    @property
    def dtype(self) -> Literal["f32", "f16", "bf16"]:
        """How K and V are stored."""
    @property
    def batch(self) -> int:
        """Batch entries."""
    @property
    def kv_heads(self) -> int:
        """Key/value heads per batch entry."""
    @property
    def head_dim(self) -> int:
        """Elements per key and value row."""
    @property
    def kernel(self) -> str:
        """The kernel whose layout the cache keeps (the variant that runs here)."""
    @property
    def kv_bytes(self) -> int:
        """Bytes of K and V a call over the cache's length reads."""
    @property
    def storage_bytes(self) -> int:
        """Bytes the cache holds, padding included."""

@overload
def attention(q: Float32Array, k: Float32Array | None = None, v: Float32Array | None = None, *,
              causal: Causal = False, window: Window = None,
                  alignment: Alignment | None = None, scale: float | None = None,
                  softcap: float | None = None, alibi_slopes: Sequence[float] | None = None, kernel: str | None = None,
              threads: int | None = None, return_lse: Literal[False] = False,
              kv_dtype: KvDtype | None = None, cache: KvCache | None = None,
              mask: Mask = None, quantise_query: bool = False, out_dtype: OutDtype = None) -> Float32Array: ...
@overload
def attention(q: Float32Array, k: Float32Array | None = None, v: Float32Array | None = None, *,
              causal: Causal = False, window: Window = None,
                  alignment: Alignment | None = None, scale: float | None = None,
                  softcap: float | None = None, alibi_slopes: Sequence[float] | None = None, kernel: str | None = None,
              threads: int | None = None, return_lse: Literal[True],
              kv_dtype: KvDtype | None = None,
              cache: KvCache | None = None, mask: Mask = None,
              quantise_query: bool = False, out_dtype: OutDtype = None) -> tuple[Float32Array, Float32Array]: ...
def attention(q: Float32Array, k: Float32Array | None = None, v: Float32Array | None = None, *,
              causal: Causal = False, window: Window = None,
                  alignment: Alignment | None = None, scale: float | None = None,
                  softcap: float | None = None, alibi_slopes: Sequence[float] | None = None, kernel: str | None = None,
              threads: int | None = None, return_lse: bool = False,
              kv_dtype: KvDtype | None = None,
              cache: KvCache | None = None,
              mask: Mask = None, quantise_query: bool = False, out_dtype: OutDtype = None) -> Float32Array | tuple[Float32Array, Float32Array]:
    """O = softmax(Q K^T * scale) V for float32 arrays of shape (n, d), (h, n, d) or (b, h, n, d).

    Args:
        q: float32 queries, C-contiguous.
        k: float32 keys of q's rank and head dim, possibly fewer heads (grouped-query attention);
            None with cache.
        v: float32 values of k's shape; None with cache.
        causal: True (bottom-right), or "bottom_right" / "top_left": the causal mask aligned so.
        window: None, W (a row sees at most the W keys ending at its diagonal key), or
            (left, right) for non-causal local attention (either None: unbounded).
        alignment: where the diagonal sits, "bottom_right" (default) or "top_left".
        scale: multiplies every score, default 1/sqrt(d).
        softcap: None, or C: every scaled score s becomes C tanh(s / C) (Gemma 2).
        alibi_slopes: ALiBi, one slope per query head (alibi_slopes() gives the paper's).
        kernel: a name from kernels(), default the first that runs here (with cache: the cache's).
        threads: worker threads, None for every core.
        return_lse: also return each query row's log-sum-exp (what attention_backward takes).
        kv_dtype: how the call stores K and V: "f32", "f16" or "bf16"; default "f32", with cache
            the cache's. Inputs, outputs and accumulation stay float32.
        cache: a KvCache holding K and V (then k and v are None).
        mask: None, or a bool (True: the key takes part) or float32 (added to the score; -inf
            removes the key) array broadcasting to (batch, q_heads, q_len, kv_len), as PyTorch's
            attn_mask; within causal and window.
        quantise_query: with K stored as "q8_0" or "q4_0", round the query rows to q8_0 too
            (ggml's way) and compute Q K^T on them: integer dot products on AVX-512 VNNI.
        out_dtype: O's type, "f32" (default) or "bf16" (an ml_dtypes.bfloat16 array, rounded to
            nearest even from the float32 result).

    Returns:
        O of q's shape, or (O, LSE) with return_lse.

    Raises:
        TypeError, ValueError, Error: naming the argument and its value.
    """

def attention_backward(q: Float32Array, k: Float32Array, v: Float32Array, o: Float32Array,
                       lse: Float32Array, d_o: Float32Array, *, causal: Causal = False,
                       window: Window = None, alignment: Alignment | None = None,
                       scale: float | None = None, softcap: float | None = None, alibi_slopes: Sequence[float] | None = None, kernel: str | None = None,
                       threads: int | None = None,
                       mask: Mask = None) -> tuple[Float32Array, Float32Array, Float32Array]:
    """(dQ, dK, dV) of the loss whose gradient with respect to O is d_o.

    Args:
        q, k, v: as given to attention().
        o, lse: as attention(..., return_lse=True) returned them.
        d_o: gradient of the loss with respect to O, of q's shape.
        causal, window, alignment, scale, softcap, alibi_slopes, mask: as given to attention().
        kernel: a kernel whose has_backward is true, default the first available one.
        threads: worker threads, None for every core; the result is the same for any.

    Returns:
        dQ of q's shape, dK and dV of k's shape.
    """

def alibi_slopes(heads: int) -> list[float]:
    """ALiBi's slopes for `heads` query heads, as the paper defines them."""

def kernels() -> list[KernelInfo]:
    """Every registry kernel in priority order."""
