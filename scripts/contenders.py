#!/usr/bin/env python3
"""The Python contenders' window: NumPy, PyTorch, OpenVINO and ONNX Runtime beside attnbench's
`tiled/simd`, in one process.

    .venv/bin/python scripts/contenders.py --preset quick|full --lib build/lib/libattnbench_capi.so \
        --out DIR/python_contenders.json [--filter REGEX]

Run with the project's Python (.venv/, scripts/setup.sh: NumPy and PyTorch as requirements.txt pins them).

Every point of the contender preset (the same list as `attnbench_bench --contenders`, read through
the C helper) runs every contender here: `tiled/simd` (as it resolves) through the C helper, NumPy's
three steps as the attention module writes them (`numpy/textbook`: new arrays at every step;
`numpy/inplace`: one score buffer, every step in place), and PyTorch (`torch/matmul`: matmul,
softmax, matmul; `torch/sdpa`: `torch.nn.functional.scaled_dot_product_attention` on one batch of one
head, the layout whose CPU dispatch takes the fused kernel; the version and the path it took are
recorded in the JSON's context), OpenVINO's CPU `ScaledDotProductAttention` (`openvino/sdpa`) and
ONNX Runtime's CPU `MultiHeadAttention` (`onnxruntime/mha`), each compiled once per point as a
deployment compiles it, the kernel that ran in each entry's `label`. Each contender
is prepared, called once (the warm-up) and checked against the float64 oracle by the benchmark's own
check (`attnbench_c_check`, 16 sampled rows) before it is timed; one that fails is recorded as
failed, one that is missing or cannot run a point (causal) is recorded with the reason.

Timing: rounds that alternate the contenders in a shuffled order, one repetition of each per round,
so the ratios at a point come from one window; a repetition is the mean of enough calls to last the
preset's minimum time (one call if it is longer). The output is Google Benchmark's JSON schema
(plain repetitions, `run_name`, `GFLOP/s`, `flops_per_call`, `scratch_bytes`, errors as
`error_occurred`), which the report's loader reads beside the C++ windows.

Threads: NumPy's OpenBLAS pool through its `openblas_set_num_threads` (the wheel's copy of OpenBLAS,
its symbols prefixed), PyTorch's ATen pool and its own BLAS (MKL in the PyPI build) through
`torch.set_num_threads`, attnbench's through its `threads` argument. `OMP_WAIT_POLICY=PASSIVE` is
set (unless already set) before torch loads: on 2 cores ATen's OpenMP threads and OpenBLAS's would
otherwise spin against each other.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import platform
import random
import re
import socket
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before numpy, torch and their OpenMP load

import numpy as np  # noqa: E402

try:
    import torch  # noqa: E402
except ImportError as error:  # recorded at every point as missing
    torch = None
    TORCH_ERROR = str(error)

try:
    import openvino  # noqa: E402
    import openvino.opset13 as ov_ops  # noqa: E402
except ImportError as error:
    openvino = None
    OPENVINO_ERROR = str(error)

try:
    import onnx  # noqa: E402
    import onnxruntime  # noqa: E402
except ImportError as error:
    onnxruntime = None
    ONNXRUNTIME_ERROR = str(error)

CHECK_ROWS = 16


# A pause before every timed repetition. OpenBLAS's idle threads (NumPy's, PyTorch's matmul) keep
# spinning for a while after a call before they sleep; a contender timed right after one of them
# would share the cores with those spinning threads. The pause gives every contender the same quiet
# start, and changes no contender's own configuration.
SETTLE_SECONDS = 0.2


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
        self.lib.attnbench_c_resolve.restype = ctypes.c_char_p
        self.lib.attnbench_c_resolve.argtypes = [ctypes.c_char_p]
        self.lib.attnbench_c_role.restype = ctypes.c_char_p
        self.lib.attnbench_c_role.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
        self.lib.attnbench_c_attention.restype = ctypes.c_int
        self.lib.attnbench_c_attention.argtypes = [
            ctypes.c_char_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int,
            f32, f32, f32, f32, ctypes.c_char_p, ctypes.c_size_t]
        self.lib.attnbench_c_check.restype = ctypes.c_int
        self.lib.attnbench_c_check.argtypes = [
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

    def check(self, q, k, v, o, causal: bool) -> tuple[bool, float, str]:
        worst = ctypes.c_double()
        failure = ctypes.create_string_buffer(512)
        n, d = q.shape
        passed = self.lib.attnbench_c_check(n, d, int(causal), _ptr(q), _ptr(k), _ptr(v), _ptr(o), CHECK_ROWS,
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


def torch_blas() -> str:
    """The BLAS PyTorch was built with (BLAS_INFO of its build settings: mkl in the PyPI build)."""
    if torch is None:
        return "none"
    found = re.search(r"BLAS_INFO=(\w+)", torch.__config__.show())
    return found.group(1) if found else "unknown"


# ------------------------------------------------------------------------------------------------
# The contenders: describe(), unsupported(point), prepare(point, q, k, v), run(), output()
# ------------------------------------------------------------------------------------------------

class Contender:
    name = ""
    description: dict = {}

    def unsupported(self, point: dict) -> str:
        return ""

    def prepare(self, point: dict, q, k, v) -> None:
        self.point, self.q, self.k, self.v = point, q, k, v
        self.scale = np.float32(1.0 / math.sqrt(point["d"]))
        n = point["n"]
        self.mask = np.triu(np.ones((n, n), dtype=bool), k=1) if point["causal"] else None

    def scratch_bytes(self) -> float:
        return math.nan

    def release(self) -> None:
        self.q = self.k = self.v = self.mask = None


class Attnbench(Contender):
    """A registry kernel (`tiled/simd`) through the C helper, on the runner's own arrays; its role
    and fusion as the benchmark describes them. (Not naive/openblas: its sgemm calls, one per task of
    the kernel's own threads, would each start the pool of an OpenBLAS whose thread count this
    runner sets for NumPy's calls, or, when NumPy bundles its own copy, does not set at all.)"""

    def __init__(self, capi: Capi, kernel: str):
        self.capi, self.name = capi, capi.resolve(kernel)
        self.kernel = self.name.encode()
        role, fused = capi.role(self.name)
        self.description = {"role": role, "library": "attnbench",
                            "version": capi.lib.attnbench_c_version().decode(),
                            "threading": "oneTBB task_arena of the call's threads", "fused": fused,
                            "how": "the registry kernel through libattnbench_capi.so (ctypes), timed from Python"}

    def prepare(self, point, q, k, v):
        super().prepare(point, q, k, v)
        self.o = np.empty_like(q)

    def run(self):
        self.capi.attention(self.kernel, self.q, self.k, self.v, self.o, self.point["threads"], self.point["causal"])

    def output(self):
        return self.o


class NumpyTextbook(Contender):
    """The attention module's three steps, each making a new array."""

    name = "numpy/textbook"

    def __init__(self, blas: OpenBlas):
        self.description = {"role": "peer", "library": "NumPy", "version": np.__version__,
                            "threading": f"OpenBLAS {blas.corename()} pthreads (sgemm only), openblas_set_num_threads",
                            "fused": False,
                            "how": "S = Q @ K.T * scale; S - max; np.exp; / sum; P @ V, a new array per step"}

    def run(self):
        s = self.q @ self.k.T * self.scale
        if self.mask is not None:
            s = np.where(self.mask, -np.inf, s)
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        p = p / p.sum(axis=-1, keepdims=True)
        self.o = p @ self.v

    def output(self):
        return np.ascontiguousarray(self.o, dtype=np.float32)


class NumpyInplace(Contender):
    """The same steps in one preallocated score buffer, every step in place."""

    name = "numpy/inplace"

    def __init__(self, blas: OpenBlas):
        self.description = {"role": "peer", "library": "NumPy", "version": np.__version__,
                            "threading": f"OpenBLAS {blas.corename()} pthreads (sgemm only), openblas_set_num_threads",
                            "fused": False,
                            "how": "np.matmul(Q, K.T, out=S); S *= scale; S -= max; np.exp(S, out=S); S /= sum; "
                                   "np.matmul(S, V, out=O)"}

    def prepare(self, point, q, k, v):
        super().prepare(point, q, k, v)
        n = point["n"]
        self.s = np.empty((n, n), dtype=np.float32)
        self.o = np.empty_like(q)
        self.additive = np.where(self.mask, np.float32(-np.inf), np.float32(0)) if self.mask is not None else None

    def run(self):
        s = self.s
        np.matmul(self.q, self.k.T, out=s)
        s *= self.scale
        if self.additive is not None:
            s += self.additive
        s -= s.max(axis=1, keepdims=True)
        np.exp(s, out=s)
        s /= s.sum(axis=1, keepdims=True)
        np.matmul(s, self.v, out=self.o)

    def output(self):
        return self.o

    def scratch_bytes(self):
        return float(self.s.nbytes)

    def release(self):
        super().release()
        self.s = self.additive = None


class TorchContender(Contender):
    fused = False

    def __init__(self, blas: OpenBlas):
        threading = f"ATen OpenMP pool and {torch_blas()} sgemm threads (torch.set_num_threads)"
        version = torch.__version__ if torch is not None else "not installed"
        self.description = {"role": "peer", "library": "PyTorch", "version": version, "threading": threading,
                            "fused": self.fused, "how": self.how}

    def unsupported(self, point):
        return "" if torch is not None else f"missing: PyTorch (torch, requirements.txt): {TORCH_ERROR}"

    def prepare(self, point, q, k, v):
        super().prepare(point, q, k, v)
        self.tq, self.tk, self.tv = (torch.from_numpy(x) for x in (q, k, v))
        self.tmask = torch.from_numpy(self.mask) if self.mask is not None else None

    def output(self):
        return np.ascontiguousarray(self.o.numpy(), dtype=np.float32)

    def release(self):
        super().release()
        self.tq = self.tk = self.tv = self.tmask = self.o = None


class TorchMatmul(TorchContender):
    name = "torch/matmul"
    how = "torch.softmax(Q @ K.T * scale (masked_fill for causal), -1) @ V"

    def run(self):
        with torch.no_grad():
            s = torch.matmul(self.tq, self.tk.transpose(-2, -1)) * float(self.scale)
            if self.tmask is not None:
                s = s.masked_fill(self.tmask, -math.inf)
            self.o = torch.matmul(torch.softmax(s, dim=-1), self.tv)


def sdpa_path(probe=None, causal: bool = False) -> str:
    """The path PyTorch's dispatch takes for scaled_dot_product_attention on `probe` as q, k and v
    (default a (1, 1, 64, 64) fp32 CPU tensor), as its own chooser names it (its CPU choices: the
    fused flash-attention kernel or math)."""
    if torch is None:
        return "not installed"
    try:
        probe = torch.zeros((1, 1, 64, 64)) if probe is None else probe
        choice = torch._fused_sdp_choice(probe, probe, probe, None, 0.0, causal)
        return torch.nn.attention.SDPBackend(choice).name.lower()
    except (AttributeError, RuntimeError, TypeError, ValueError):  # a private API: may move
        return "unknown"


class TorchSdpa(TorchContender):
    """scaled_dot_product_attention on the layout it is made for, (batch, heads, n, d) with one of
    each: a 2-D or 3-D input goes the unfused math path on the CPU, a 4-D one the fused kernel."""

    name = "torch/sdpa"

    def __init__(self, blas: OpenBlas):
        path = sdpa_path()
        self.fused = path == "flash_attention"
        self.how = f"torch.nn.functional.scaled_dot_product_attention on (1, 1, n, d), is_causal (its CPU path: {path})"
        super().__init__(blas)

    def prepare(self, point, q, k, v):
        super().prepare(point, q, k, v)
        self.label = f"{sdpa_path(self.tq[None, None], point['causal'])} (torch._fused_sdp_choice)"

    def run(self):
        with torch.no_grad():
            self.o = torch.nn.functional.scaled_dot_product_attention(
                self.tq[None, None], self.tk[None, None], self.tv[None, None], is_causal=self.point["causal"])[0, 0]


class OpenVinoSdpa(Contender):
    """OpenVINO's ScaledDotProductAttention (opset13) in a one-node model compiled for the CPU
    plugin, as a deployment compiles it: once per shape, f32 inference precision, a latency hint
    with one stream and the point's threads. The kernel that ran is the runtime model's node (its
    layer and primitive type), recorded as each entry's label."""

    name = "openvino/sdpa"

    def __init__(self):
        version = openvino.get_version() if openvino is not None else "not installed"
        self.description = {"role": "peer", "library": "OpenVINO", "version": version, "fused": True,
                            "threading": "the CPU plugin's own pool (INFERENCE_NUM_THREADS, one stream)",
                            "how": "opset13.scaled_dot_product_attention(q, k, v, causal) on (1, 1, n, d), "
                                   "compile_model('CPU', f32), infer request reused"}

    def unsupported(self, point):
        return "" if openvino is not None else f"missing: OpenVINO (openvino, requirements.txt): {OPENVINO_ERROR}"

    def prepare(self, point, q, k, v):
        super().prepare(point, q, k, v)
        n, d = point["n"], point["d"]
        params = [ov_ops.parameter([1, 1, n, d], openvino.Type.f32, name=x) for x in "qkv"]
        node = ov_ops.scaled_dot_product_attention(*params, causal=point["causal"])
        model = openvino.Model([node], params, "sdpa")
        compiled = openvino.Core().compile_model(model, "CPU", {
            "INFERENCE_NUM_THREADS": point["threads"], "INFERENCE_PRECISION_HINT": "f32",
            "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1})
        self.request = compiled.create_infer_request()
        self.inputs = [x.reshape(1, 1, n, d) for x in (q, k, v)]
        info = [{key: op.get_rt_info()[key].astype(str) for key in op.get_rt_info().keys()}
                for op in compiled.get_runtime_model().get_ordered_ops()]
        sdpa = [i for i in info if "ScaledDotProductAttention" in i.get("originalLayersNames", "")]
        if not sdpa or any(i.get("runtimePrecision") != "f32" for i in sdpa):
            raise RuntimeError(f"the plugin did not run the SDPA node in f32: {sdpa}")
        # e.g. "Subgraph jit_avx512_f32 f32 (Multiply,Softmax,ScaledDotProductAttention)": the
        # plugin's fused MHA subgraph, or its ScaledDotProductAttention node.
        self.label = "; ".join(f"{i['layerType']} {i['primitiveType']} {i['runtimePrecision']} "
                               f"({i['originalLayersNames'].strip(',')})" for i in sdpa)

    def run(self):
        self.request.infer(self.inputs, share_inputs=True)

    def output(self):
        return np.ascontiguousarray(self.request.get_output_tensor(0).data[0, 0], dtype=np.float32)

    def release(self):
        super().release()
        self.request = self.inputs = None


class OnnxRuntimeMha(Contender):
    """ONNX Runtime's CPU MultiHeadAttention (com.microsoft) in a one-node model, one head: an
    InferenceSession per shape with the point's intra-op threads. For float32 without a mask or
    causal flag its kernel is MLAS's flash attention; `unidirectional` (causal) takes its unfused
    path (scores materialised), which is recorded as the entry's label and `fused` per point."""

    name = "onnxruntime/mha"

    def __init__(self):
        version = onnxruntime.__version__ if onnxruntime is not None else "not installed"
        self.description = {"role": "peer", "library": "ONNX Runtime", "version": version, "fused": True,
                            "threading": "its intra-op thread pool (intra_op_num_threads, inter_op 1)",
                            "how": "com.microsoft.MultiHeadAttention(num_heads=1, unidirectional=causal) on "
                                   "(1, n, d), CPUExecutionProvider, session.run"}

    def unsupported(self, point):
        return "" if onnxruntime is not None else \
            f"missing: ONNX Runtime (onnxruntime, onnx, requirements.txt): {ONNXRUNTIME_ERROR}"

    def prepare(self, point, q, k, v):
        super().prepare(point, q, k, v)
        n, d = point["n"], point["d"]
        helper, f32 = onnx.helper, onnx.TensorProto.FLOAT
        node = helper.make_node("MultiHeadAttention", ["q", "k", "v"], ["o"], domain="com.microsoft",
                                num_heads=1, unidirectional=int(point["causal"]))
        io = [helper.make_tensor_value_info(x, f32, [1, n, d]) for x in ("q", "k", "v", "o")]
        graph = helper.make_graph([node], "mha", io[:3], io[3:])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                        helper.make_opsetid("com.microsoft", 1)])
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = point["threads"]
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                                    providers=["CPUExecutionProvider"])
        self.feed = {"q": q[None], "k": k[None], "v": v[None]}
        self.label = ("MultiHeadAttention: ApplyAttention (unfused, unidirectional)" if point["causal"]
                      else "MultiHeadAttention: MlasFlashAttention")

    def run(self):
        self.o = self.session.run(None, self.feed)[0]

    def output(self):
        return np.ascontiguousarray(self.o[0], dtype=np.float32)

    def release(self):
        super().release()
        self.session = self.feed = self.o = None


# ------------------------------------------------------------------------------------------------
# The window
# ------------------------------------------------------------------------------------------------

def point_name(contender: str, p: dict) -> str:
    return f"{contender}/n:{p['n']}/d:{p['d']}/threads:{p['threads']}/causal:{int(p['causal'])}"


def flops_of(p: dict) -> float:
    n, d = p["n"], p["d"]
    pairs = n * (n + 1) / 2 if p["causal"] else n * n
    return 4.0 * pairs * d


def error_entry(name: str, message: str, repetitions: int) -> dict:
    return {"name": name, "run_name": name, "run_type": "iteration", "repetitions": repetitions,
            "repetition_index": 0, "threads": 1, "iterations": 0, "real_time": 0, "cpu_time": 0,
            "time_unit": "ms", "error_occurred": True, "error_message": message}


def set_threads(blas: OpenBlas, threads: int) -> None:
    blas.set_threads(threads)
    if torch is not None:
        torch.set_num_threads(threads)


def run_point(p: dict, contenders: list, capi: Capi, blas: OpenBlas, reps: int, min_time: float,
              budget: float, rng: random.Random, log) -> list:
    """Every contender at point `p`: prepare, warm up, check, then `reps` alternating rounds."""
    entries = []
    set_threads(blas, p["threads"])
    gen = np.random.default_rng(1)
    q, k, v = (gen.standard_normal((p["n"], p["d"]), dtype=np.float32) for _ in range(3))
    ready = []  # (contender, iterations per repetition, check ratio)
    for c in contenders:
        name = point_name(c.name, p)
        why = c.unsupported(p)
        if why:
            entries.append(error_entry(name, why, reps))
            continue
        try:
            c.prepare(p, q, k, v)
            start = time.perf_counter()
            c.run()  # the warm-up, and the output the check reads
            call = time.perf_counter() - start
            passed, worst, failure = capi.check(q, k, v, c.output(), p["causal"])
        except Exception as error:  # noqa: BLE001 - any contender failure is recorded, never fatal
            c.release()
            entries.append(error_entry(name, f"failed: {type(error).__name__}: {error}", reps))
            continue
        if not passed:
            c.release()
            entries.append(error_entry(name, f"failed: oracle check: {failure}", reps))
        elif call > budget:
            c.release()
            entries.append(error_entry(name, f"skipped: the warm-up call took {call:.1f} s, over the preset's "
                                             f"{budget:.2f} s budget", reps))
        else:
            ready.append((c, max(1, int(math.ceil(min_time / max(call, 1e-9)))) if call < min_time else 1, worst))
    for rep in range(reps):
        order = list(ready)
        rng.shuffle(order)
        for c, iterations, worst in order:
            time.sleep(SETTLE_SECONDS)
            start = time.perf_counter()
            for _ in range(iterations):
                c.run()
            seconds = (time.perf_counter() - start) / iterations
            flops = flops_of(p)
            entries.append({
                "name": point_name(c.name, p), "run_name": point_name(c.name, p), "run_type": "iteration",
                "repetitions": reps, "repetition_index": rep, "threads": 1, "iterations": iterations,
                "real_time": seconds * 1e3, "cpu_time": seconds * 1e3, "time_unit": "ms",
                "GFLOP/s": flops / seconds / 1e9, "flops_per_call": flops,
                "scratch_bytes": c.scratch_bytes(), "score_matrix_bytes": 4.0 * p["n"] * p["n"],
                "oracle_error_ratio": worst,
                **({"label": c.label} if getattr(c, "label", "") else {}),
            })
    for c, _, _ in ready:
        log(f"  {point_name(c.name, p)}: median "
            f"{np.median([e['real_time'] for e in entries if e.get('run_name') == point_name(c.name, p)]):.3f} ms")
        c.release()
    return entries


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="quick")
    parser.add_argument("--lib", required=True, help="build/lib/libattnbench_capi.so")
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--filter", default="", help="regex over benchmark names; others are not run")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="'all' threads")
    args = parser.parse_args(argv)

    capi, blas = Capi(args.lib), OpenBlas()
    points, reps, min_time, budget = capi.preset(args.preset, args.threads)
    contenders = [Attnbench(capi, "tiled/simd"), NumpyTextbook(blas), NumpyInplace(blas), TorchMatmul(blas),
                  TorchSdpa(blas), OpenVinoSdpa(), OnnxRuntimeMha()]
    keep = re.compile(args.filter) if args.filter else None
    context = {
        "date": datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds"),
        "host_name": socket.gethostname(), "executable": " ".join([sys.executable] + sys.argv),
        "num_cpus": os.cpu_count(), "attnbench_window": "python", "attnbench_preset": args.preset,
        "threads_all": str(args.threads), "cpu_model": cpu_model(), "python_version": platform.python_version(),
        "numpy_version": np.__version__, "torch_version": torch.__version__ if torch is not None else "missing",
        "openvino_version": openvino.get_version() if openvino is not None else "missing",
        "onnxruntime_version": onnxruntime.__version__ if onnxruntime is not None else "missing",
        "torch_blas": torch_blas(),
        "openblas_corename": blas.corename(), "openblas_config": blas.config(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""),
        "interleaving": "per point, rounds of every contender in a shuffled order, one repetition each",
    }
    for c in contenders:
        context[f"contender {c.name}"] = json.dumps(c.description)
    rng = random.Random(13)
    benchmarks = []
    start = time.perf_counter()
    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    for i, p in enumerate(points):
        chosen = [c for c in contenders if keep is None or keep.search(point_name(c.name, p))]
        if not chosen:
            continue
        log(f"[{i + 1}/{len(points)}] n {p['n']} d {p['d']} threads {p['threads']} causal {int(p['causal'])} "
            f"... {time.perf_counter() - start:.0f} s elapsed")
        benchmarks += run_point(p, chosen, capi, blas, reps, min_time, budget, rng, log)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"context": context, "benchmarks": benchmarks}, indent=1) + "\n")
    log(f"contenders.py: {len(benchmarks)} entries in {out}, {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
