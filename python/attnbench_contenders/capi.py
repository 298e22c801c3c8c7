"""libattnbench_capi.so through ctypes, and the OpenBLAS NumPy calls."""
from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

# Rows of a point the oracle check reads (bench/oracle_check.hpp: evenly spaced, first and last).
CHECK_ROWS = 16


class Capi:
    """libattnbench_capi.so through ctypes."""

    def __init__(self, path: str):
        self.lib = ctypes.CDLL(path)
        size_p = ctypes.POINTER(ctypes.c_size_t)
        f32 = ctypes.POINTER(ctypes.c_float)
        self.lib.attnbench_c_preset.restype = ctypes.c_int
        self.lib.attnbench_c_preset.argtypes = [
            ctypes.c_char_p, ctypes.c_size_t, size_p, size_p, ctypes.POINTER(ctypes.c_int), size_p,
            ctypes.c_size_t, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_double),
            ctypes.POINTER(ctypes.c_double)]
        self.lib.attnbench_c_version.restype = ctypes.c_char_p
        self.lib.attnbench_c_git_commit.restype = ctypes.c_char_p
        self.lib.attnbench_c_git_dirty.restype = ctypes.c_char_p
        self.lib.attnbench_c_resolve.restype = ctypes.c_char_p
        self.lib.attnbench_c_resolve.argtypes = [ctypes.c_char_p]
        self.lib.attnbench_c_role.restype = ctypes.c_char_p
        self.lib.attnbench_c_role.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
        self.lib.attnbench_c_attention.restype = ctypes.c_int
        self.lib.attnbench_c_attention.argtypes = [
            ctypes.c_char_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int,
            f32, f32, f32, f32, ctypes.c_char_p, ctypes.c_size_t]
        size = ctypes.c_size_t
        self.lib.attnbench_c_preset_pass.restype = ctypes.c_int
        self.lib.attnbench_c_preset_pass.argtypes = [ctypes.c_char_p, ctypes.c_int, size_p, size]
        self.lib.attnbench_c_attention_gqa.restype = ctypes.c_int
        self.lib.attnbench_c_attention_gqa.argtypes = [ctypes.c_char_p, size, size, size, size, size, ctypes.c_int,
                                                       f32, f32, f32, f32, ctypes.c_char_p, size]
        self.lib.attnbench_c_training_step.restype = ctypes.c_int
        self.lib.attnbench_c_training_step.argtypes = [ctypes.c_char_p, size, size, size, ctypes.c_int] + \
            [f32] * 9 + [ctypes.c_char_p, size]
        self.lib.attnbench_c_cache_new.restype = ctypes.c_void_p
        self.lib.attnbench_c_cache_new.argtypes = [ctypes.c_char_p, ctypes.c_char_p, size, size, size, f32, f32,
                                                   size, ctypes.c_char_p, size]
        self.lib.attnbench_c_cache_free.argtypes = [ctypes.c_void_p]
        self.lib.attnbench_c_cache_attention.restype = ctypes.c_int
        self.lib.attnbench_c_cache_attention.argtypes = [ctypes.c_void_p, size, size, ctypes.c_int, ctypes.c_int,
                                                         f32, f32, size, ctypes.c_char_p, size]
        self.lib.attnbench_c_check_gqa.restype = ctypes.c_int
        self.lib.attnbench_c_check_gqa.argtypes = [size, size, size, size, size, ctypes.c_int, f32, f32, f32, f32,
                                                   size, ctypes.POINTER(ctypes.c_double), ctypes.c_char_p, size]
        self.lib.attnbench_c_check_gradients.restype = ctypes.c_int
        self.lib.attnbench_c_check_gradients.argtypes = [size, size, ctypes.c_int] + [f32] * 7 + [
            ctypes.POINTER(ctypes.c_double), ctypes.c_char_p, size]
        for check in (self.lib.attnbench_c_check, self.lib.attnbench_c_check_bf16):
            check.restype = ctypes.c_int
            check.argtypes = [
                ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int, f32, f32, f32, f32, ctypes.c_size_t,
                ctypes.POINTER(ctypes.c_double), ctypes.c_char_p, ctypes.c_size_t]

    def preset(self, name: str, all_threads: int) -> tuple[list[dict], int, float, float]:
        cap = 256
        n, d, t = (ctypes.c_size_t * cap)(), (ctypes.c_size_t * cap)(), (ctypes.c_size_t * cap)()
        causal = (ctypes.c_int * cap)()
        reps, min_time, budget = ctypes.c_int(), ctypes.c_double(), ctypes.c_double()
        count = self.lib.attnbench_c_preset(name.encode(), all_threads, n, d, causal, t, cap,
                                            ctypes.byref(reps), ctypes.byref(min_time), ctypes.byref(budget))
        if count < 0:
            raise SystemExit(f"contenders.py: --preset {name}: unknown preset (quick or full)")
        points = [{"n": n[i], "d": d[i], "causal": bool(causal[i]), "threads": t[i]} for i in range(count)]
        return points, reps.value, min_time.value, budget.value

    def build(self) -> dict:
        """The helper's build as the C++ windows' contexts give it: version, commit, dirty flag."""
        return {"attnbench_version": self.lib.attnbench_c_version().decode(),
                "git_commit": self.lib.attnbench_c_git_commit().decode(),
                "git_dirty": self.lib.attnbench_c_git_dirty().decode()}

    def preset_pass(self, name: str, pass_: str) -> list[int]:
        """The preset's training-step lengths ("forward+backward"), decode cache lengths ("decode") or
        prefill lengths ("prefill")."""
        out = (ctypes.c_size_t * 64)()
        which = {"forward+backward": 0, "decode": 1, "prefill": 2}[pass_]
        count = self.lib.attnbench_c_preset_pass(name.encode(), which, out, 64)
        return list(out[:max(count, 0)])

    def resolve(self, kernel: str) -> str:
        name = self.lib.attnbench_c_resolve(kernel.encode())
        if name is None:
            raise SystemExit(f"contenders.py: no kernel {kernel!r} in the registry")
        return name.decode()

    def role(self, kernel: str) -> tuple[str, bool]:
        """The kernel's role as the benchmark gives it, and whether it is fused."""
        fused = ctypes.c_int()
        role = self.lib.attnbench_c_role(kernel.encode(), ctypes.byref(fused))
        if role is None:
            raise SystemExit(f"contenders.py: no kernel {kernel!r} in the registry")
        return role.decode(), bool(fused.value)

    def attention(self, kernel: bytes, q, k, v, o, threads: int, causal: bool) -> None:
        error = ctypes.create_string_buffer(512)
        n, d = q.shape
        if self.lib.attnbench_c_attention(kernel, n, d, threads, int(causal), _ptr(q), _ptr(k), _ptr(v),
                                          _ptr(o), error, len(error)) != 0:
            raise RuntimeError(error.value.decode())

    def attention_gqa(self, kernel: bytes, q, k, v, o, threads: int, causal: bool) -> None:
        """O ([q_heads][n][d]) of Q ([q_heads][n][d]) over K, V ([kv_heads][n][d])."""
        error = ctypes.create_string_buffer(512)
        (q_heads, n, d), kv_heads = q.shape, k.shape[0]
        if self.lib.attnbench_c_attention_gqa(kernel, q_heads, kv_heads, n, d, threads, int(causal), _ptr(q), _ptr(k),
                                              _ptr(v), _ptr(o), error, len(error)) != 0:
            raise RuntimeError(error.value.decode())

    def training_step(self, kernel: bytes, q, k, v, d_o, o, lse, dq, dk, dv, threads: int, causal: bool) -> None:
        error = ctypes.create_string_buffer(512)
        n, d = q.shape
        if self.lib.attnbench_c_training_step(kernel, n, d, threads, int(causal),
                                              *(_ptr(x) for x in (q, k, v, d_o, o, lse, dq, dk, dv)),
                                              error, len(error)) != 0:
            raise RuntimeError(error.value.decode())

    def cache_new(self, kernel: bytes, k, v, threads: int, kv_dtype: str = "f32"):
        """A KvCache holding k and v ([kv_heads][kv_len][d]) stored as `kv_dtype`; freed by cache_free."""
        error = ctypes.create_string_buffer(512)
        kv_heads, kv_len, d = k.shape
        cache = self.lib.attnbench_c_cache_new(kernel, kv_dtype.encode(), kv_heads, kv_len, d, _ptr(k), _ptr(v),
                                               threads, error, len(error))
        if not cache:
            raise RuntimeError(error.value.decode())
        return cache

    def cache_free(self, cache) -> None:
        self.lib.attnbench_c_cache_free(cache)

    def cache_attention(self, cache, q, o, threads: int, causal: bool, quantise_query: bool = False) -> None:
        error = ctypes.create_string_buffer(512)
        q_heads, q_len, _ = q.shape
        if self.lib.attnbench_c_cache_attention(cache, q_heads, q_len, int(causal), int(quantise_query), _ptr(q),
                                                _ptr(o), threads, error, len(error)) != 0:
            raise RuntimeError(error.value.decode())

    def check_gqa(self, q, k, v, o, causal: bool) -> tuple[bool, float, str]:
        """The oracle check of O ([q_heads][q_len][d]) for K, V ([kv_heads][kv_len][d])."""
        worst, failure = ctypes.c_double(), ctypes.create_string_buffer(512)
        (q_heads, q_len, d), (kv_heads, kv_len, _) = q.shape, k.shape
        passed = self.lib.attnbench_c_check_gqa(q_heads, kv_heads, q_len, kv_len, d, int(causal), _ptr(q), _ptr(k),
                                                _ptr(v), _ptr(o), CHECK_ROWS, ctypes.byref(worst), failure,
                                                len(failure))
        return bool(passed), worst.value, failure.value.decode()

    def check_gradients(self, q, k, v, d_o, dq, dk, dv, causal: bool) -> tuple[bool, float, str]:
        """Every element of dQ, dK, dV of one head against the backward oracle (small n)."""
        worst, failure = ctypes.c_double(), ctypes.create_string_buffer(512)
        n, d = q.shape
        passed = self.lib.attnbench_c_check_gradients(n, d, int(causal), *(_ptr(x) for x in (q, k, v, d_o, dq, dk, dv)),
                                                      ctypes.byref(worst), failure, len(failure))
        return bool(passed), worst.value, failure.value.decode()

    def check(self, q, k, v, o, causal: bool, bf16: bool = False) -> tuple[bool, float, str]:
        """O of one head against the oracle; `bf16`: on bfloat16-rounded inputs, allowing one bfloat16
        rounding of the weights and of the output (a bf16 implementation's check)."""
        worst = ctypes.c_double()
        failure = ctypes.create_string_buffer(512)
        n, d = q.shape
        check = self.lib.attnbench_c_check_bf16 if bf16 else self.lib.attnbench_c_check
        passed = check(n, d, int(causal), _ptr(q), _ptr(k), _ptr(v), _ptr(o), CHECK_ROWS,
                       ctypes.byref(worst), failure, len(failure))
        return bool(passed), worst.value, failure.value.decode()


def _ptr(a: np.ndarray):
    assert a.dtype == np.float32 and a.flags.c_contiguous
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_float))


def _numpy_openblas() -> str | None:
    """The file of the OpenBLAS that NumPy calls, as loaded in this process: the one inside NumPy's
    own installation (a wheel bundles a copy, numpy.libs/libscipy_openblas64_*.so), else the first
    OpenBLAS mapped (a distribution's NumPy links the system's). Other copies may be loaded too
    (libattnbench_capi.so links the system's for naive/openblas); their threads are not NumPy's."""
    try:
        maps = Path("/proc/self/maps").read_text().splitlines()
    except OSError:
        return None
    fields = (line.split(None, 5) for line in maps)
    paths = list(dict.fromkeys(f[5] for f in fields if len(f) == 6 and "openblas" in f[5].lower()))
    home = str(Path(np.__file__).resolve().parents[1])
    ours = [p for p in paths if p.startswith(home)]
    return (ours or paths or [None])[0]


class OpenBlas:
    """NumPy's OpenBLAS (its sgemm), by its exported names: `openblas_*` in a system build,
    `scipy_openblas_*64_` in the copy NumPy's wheel bundles (64-bit integers, names prefixed)."""

    def __init__(self):
        self.lib, self.path = None, _numpy_openblas()
        if self.path is None:
            return
        try:
            lib = ctypes.CDLL(self.path)
        except OSError:
            return
        for prefix, suffix in (("openblas_", ""), ("scipy_openblas_", "64_"), ("scipy_openblas_", "")):
            if hasattr(lib, f"{prefix}set_num_threads{suffix}"):
                self.lib = lib
                self._set = getattr(lib, f"{prefix}set_num_threads{suffix}")
                self._corename = getattr(lib, f"{prefix}get_corename{suffix}")
                self._config = getattr(lib, f"{prefix}get_config{suffix}")
                self._corename.restype = self._config.restype = ctypes.c_char_p
                break

    def set_threads(self, threads: int) -> None:
        if self.lib is not None:
            self._set(threads)

    def corename(self) -> str:
        return self._corename().decode() if self.lib else "not loaded"

    def config(self) -> str:
        return self._config().decode() if self.lib else "not loaded"
