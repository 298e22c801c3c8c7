"""ggml's `flash_attn_ext` (llama.cpp's CPU attention) as a contender, through ctypes on the CPU
backend that scripts/setup.sh builds into .venv/ggml/ (ATTNBENCH_GGML names another lib folder).

Used as llama.cpp uses it: a graph of one `ggml_flash_attn_ext` node (scale 1/sqrt(d), no ALiBi,
no soft-capping, an f16 mask of -inf above the diagonal for a causal point) whose tensors live in a
CPU backend buffer allocated once per point; each timed call is `ggml_backend_graph_compute` on the
backend's OpenMP threads (`ggml_backend_cpu_set_n_threads`). K and V are stored as f32, the type every
other contender of the window reads, or, in the quantised decode window, as ggml's q8_0 blocks
(`ggml_quantize_chunk`). Which of the CPU kernel's paths ran follows from its dispatch rule
(ggml-cpu/ops.cpp), recorded as each entry's label."""
from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path

import numpy as np

from . import passes
from .forward import Contender
from .passes import Decode

F32, F16, Q8_0 = 0, 1, 8  # enum ggml_type
TYPES = {"f32": F32, "q8_0": Q8_0}
SPLIT_KV_MIN_KEYS = 512  # ops.cpp: one query row over at least this many f32/f16 keys splits the keys
TILE_Q = 64  # ops.cpp: GGML_FA_TILE_Q, the query rows from which f32/f16 K/V take the tiled path


class _InitParams(ctypes.Structure):
    _fields_ = [("mem_size", ctypes.c_size_t), ("mem_buffer", ctypes.c_void_p), ("no_alloc", ctypes.c_bool)]


def lib_dir() -> Path:
    return Path(os.environ.get("ATTNBENCH_GGML", Path(sys.prefix) / "ggml" / "lib"))


def _load():
    """(base, cpu) libraries with their signatures, or (None, reason)."""
    folder = lib_dir()
    try:
        base = ctypes.CDLL(str(folder / "libggml-base.so"), mode=ctypes.RTLD_GLOBAL)
        cpu = ctypes.CDLL(str(folder / "libggml-cpu.so"), mode=ctypes.RTLD_GLOBAL)
    except OSError as error:
        return None, f"{error} (scripts/setup.sh builds ggml into {folder})"
    p, size, i64 = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int64
    for lib, name, res, args in (
            (base, "ggml_version", ctypes.c_char_p, []),
            (base, "ggml_tensor_overhead", size, []), (base, "ggml_graph_overhead", size, []),
            (base, "ggml_init", p, [_InitParams]), (base, "ggml_free", None, [p]),
            (base, "ggml_new_tensor_4d", p, [p, ctypes.c_int, i64, i64, i64, i64]),
            (base, "ggml_flash_attn_ext", p, [p, p, p, p, p, ctypes.c_float, ctypes.c_float, ctypes.c_float]),
            (base, "ggml_new_graph", p, [p]), (base, "ggml_build_forward_expand", None, [p, p]),
            (base, "ggml_nbytes", size, [p]),
            (base, "ggml_backend_alloc_ctx_tensors", p, [p, p]),
            (base, "ggml_backend_buffer_get_size", size, [p]), (base, "ggml_backend_buffer_free", None, [p]),
            (base, "ggml_backend_tensor_set", None, [p, p, size, size]),
            (base, "ggml_backend_tensor_get", None, [p, p, size, size]),
            (base, "ggml_backend_graph_compute", ctypes.c_int, [p, p]), (base, "ggml_backend_free", None, [p]),
            (base, "ggml_quantize_chunk", size, [ctypes.c_int, p, p, i64, i64, i64, p]),
            (cpu, "ggml_backend_cpu_init", p, []), (cpu, "ggml_backend_cpu_set_n_threads", None, [p, ctypes.c_int]),
            (cpu, "ggml_cpu_has_avx512", ctypes.c_int, []), (cpu, "ggml_cpu_has_avx2", ctypes.c_int, [])):
        function = getattr(lib, name)
        function.restype, function.argtypes = res, args
    return (base, cpu), ""


_LIBS, GGML_ERROR = _load()


def version() -> str:
    if _LIBS is None:
        return "missing"
    return f"{_LIBS[0].ggml_version().decode()} (the llama.cpp of llama-cpp-python 0.3.36)"


def _isa() -> str:
    cpu = _LIBS[1]
    return "AVX-512" if cpu.ggml_cpu_has_avx512() else "AVX2" if cpu.ggml_cpu_has_avx2() else "SSE"


def _f32(a: np.ndarray):
    return np.ascontiguousarray(a, dtype=np.float32).ctypes.data_as(ctypes.c_void_p)


class _Graph:
    """One flash_attn_ext node over q (q_heads, rows, d) and k, v (kv_heads, keys, d) on the CPU backend."""

    def __init__(self, q, k, v, causal: bool, threads: int, kv_type: int):
        base, cpu = _LIBS
        self.base = base
        (heads, rows, d), (kv_heads, keys, _) = q.shape, k.shape
        self.ctx = base.ggml_init(_InitParams(base.ggml_tensor_overhead() * 8 + base.ggml_graph_overhead(), None, True))
        self.backend = self.buffer = None
        self.tq = base.ggml_new_tensor_4d(self.ctx, F32, d, rows, heads, 1)
        self.tk, self.tv = (base.ggml_new_tensor_4d(self.ctx, kv_type, d, keys, kv_heads, 1) for _ in range(2))
        self.tmask = base.ggml_new_tensor_4d(self.ctx, F16, keys, rows, 1, 1) if causal else None
        self.out = base.ggml_flash_attn_ext(self.ctx, self.tq, self.tk, self.tv, self.tmask,
                                            float(1.0 / np.sqrt(d)), 0.0, 0.0)
        self.graph = base.ggml_new_graph(self.ctx)
        base.ggml_build_forward_expand(self.graph, self.out)
        self.backend = cpu.ggml_backend_cpu_init()
        cpu.ggml_backend_cpu_set_n_threads(self.backend, threads)
        self.buffer = base.ggml_backend_alloc_ctx_tensors(self.ctx, self.backend)
        self._set(self.tq, np.ascontiguousarray(q, dtype=np.float32))
        for tensor, x in ((self.tk, k), (self.tv, v)):
            self._set(tensor, self._stored(x, kv_type))
        if causal:  # ggml's causal mask: 0 where a key is visible, -inf (f16) above the diagonal
            above = np.triu(np.ones((rows, keys), dtype=bool), k=1 + keys - rows)
            self._set(self.tmask, np.where(above, np.float16(-np.inf), np.float16(0)))
        self.shape = (rows, heads, d)

    def _stored(self, x: np.ndarray, kv_type: int) -> np.ndarray:
        if kv_type == F32:
            return np.ascontiguousarray(x, dtype=np.float32)
        rows, d = x.size // x.shape[-1], x.shape[-1]
        out = np.empty(rows * d // 32 * 34, dtype=np.uint8)  # q8_0: 34 bytes per 32 values
        self.base.ggml_quantize_chunk(kv_type, _f32(x), out.ctypes.data_as(ctypes.c_void_p), 0, rows, d, None)
        return out

    def _set(self, tensor, data: np.ndarray) -> None:
        if data.nbytes != self.base.ggml_nbytes(tensor):
            raise RuntimeError(f"ggml tensor of {self.base.ggml_nbytes(tensor)} bytes, data of {data.nbytes}")
        self.base.ggml_backend_tensor_set(tensor, data.ctypes.data_as(ctypes.c_void_p), 0, data.nbytes)

    def compute(self) -> None:
        status = self.base.ggml_backend_graph_compute(self.backend, self.graph)
        if status != 0:
            raise RuntimeError(f"ggml_backend_graph_compute returned status {status}")

    def output(self) -> np.ndarray:
        o = np.empty(self.shape, dtype=np.float32)  # [rows][heads][d]: ggml's result is permuted
        self.base.ggml_backend_tensor_get(self.out, o.ctypes.data_as(ctypes.c_void_p), 0, o.nbytes)
        return o

    def scratch_bytes(self) -> float:
        return float(self.base.ggml_backend_buffer_get_size(self.buffer))

    def free(self) -> None:
        if self.buffer:
            self.base.ggml_backend_buffer_free(self.buffer)
        if self.backend:
            self.base.ggml_backend_free(self.backend)
        self.base.ggml_free(self.ctx)
        self.buffer = self.backend = self.ctx = None


class _Ggml:
    """What the forward and decode contenders share: the description, the missing check, the graph."""

    kv_dtype = "f32"

    def __init__(self):
        self.graph = None
        self.label = ""
        self.description = {"role": "peer", "library": "ggml", "version": version(), "fused": True,
                            "threading": "OpenMP (ggml's CPU backend, ggml_backend_cpu_set_n_threads)",
                            "how": f"ggml_flash_attn_ext in a one-node graph, ggml_backend_graph_compute on the "
                                   f"CPU backend (built -march=native), K/V {self.kv_dtype}, tensors set once "
                                   f"per point"}

    def unsupported(self, point):
        return "" if _LIBS is not None else f"missing: ggml (.venv/ggml, scripts/setup.sh): {GGML_ERROR}"

    def scratch_bytes(self):
        return self.graph.scratch_bytes() if self.graph else float("nan")

    def run(self):
        self.graph.compute()

    def release(self):
        super().release()
        if self.graph is not None:
            self.graph.free()
        self.graph = None


class GgmlFlashAttn(_Ggml, Contender):
    """The forward of one head: Q, K, V (n, d), f32."""

    name = "ggml/flash_attn_ext"

    def prepare(self, point, q, k, v):
        super().prepare(point, q, k, v)
        self.graph = _Graph(q[None], k[None], v[None], point["causal"], point["threads"], F32)
        rows = point["n"]
        path = "tiled path" if rows >= TILE_Q else "one-row chunks"
        self.label = f"flash_attn_ext, f32 K/V, {path} ({_isa()}) by ggml's dispatch rule"

    def output(self):
        return np.ascontiguousarray(self.graph.output()[:, 0])


class GgmlDecode(_Ggml, Decode):
    """One-row decode of the grouped-query layer: q (q_heads, 1, d), k, v (kv_heads, n, d); ggml
    broadcasts each K/V head to its query heads."""

    name = "ggml/flash_attn_ext"

    def prepare(self, point, q, k, v):
        super().prepare(point, q, k, v)
        kv_type = TYPES[self.kv_dtype]
        self.graph = _Graph(q, k, v, False, point["threads"], kv_type)
        split = kv_type in (F32, F16) and point["n"] >= SPLIT_KV_MIN_KEYS
        path = "split-KV path (the keys split over the threads)" if split else "query heads over the threads"
        self.label = f"flash_attn_ext, {self.kv_dtype} K/V, {path} ({_isa()}) by ggml's dispatch rule"

    def output(self):
        return np.ascontiguousarray(self.graph.output()[0][:, None, :])


class GgmlDecodeQ8(GgmlDecode):
    """The same with K and V stored as q8_0 blocks (llama.cpp's `--cache-type-k q8_0 --cache-type-v
    q8_0`): ggml rounds the query to q8_0 for its integer Q K^T and widens V to f32 per key."""

    kv_dtype = "q8_0"


class GgmlPrefill(_Ggml, passes.Prefill):
    """Causal prefill of the grouped-query layer: q (q_heads, n, d), k, v (kv_heads, n, d), f32."""

    name = "ggml/flash_attn_ext"

    def prepare(self, point, q, k, v):
        super().prepare(point, q, k, v)
        self.graph = _Graph(q, k, v, point["causal"], point["threads"], F32)
        path = "tiled path" if point["n"] >= TILE_Q else "one-row chunks"
        self.label = f"flash_attn_ext, f32 K/V, {path} ({_isa()}) by ggml's dispatch rule"

    def output(self):
        return np.ascontiguousarray(self.graph.output().transpose(1, 0, 2))  # [n][heads][d] -> [heads][n][d]
