"""The forward contenders: describe(), unsupported(point), prepare(point, q, k, v), run(), output()."""
from __future__ import annotations

import math

import numpy as np

from .capi import Capi, OpenBlas
from .libraries import (ONNXRUNTIME_ERROR, OPENVINO_ERROR, TORCH_ERROR, onnx, onnxruntime, openvino,
                        ov_ops, torch, torch_blas)

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
        # a dispatching name resolves to itself only where no variant runs (bf16 without AVX512_BF16)
        self.unavailable = self.name == kernel and kernel.count("/") == 1
        role, fused = capi.role(self.name)
        self.description = {"role": role, "library": "attnbench",
                            "version": capi.lib.attnbench_c_version().decode(),
                            "threading": "oneTBB task_arena of the call's threads", "fused": fused,
                            "how": "the registry kernel through libattnbench_capi.so (ctypes), timed from Python"}

    def unsupported(self, point):
        return f"unsupported: this CPU runs no variant of {self.name}" if self.unavailable else ""

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


def sdpa_path(probe=None, causal: bool = False, keys=None, enable_gqa: bool = False) -> str:
    """The path PyTorch's dispatch takes for scaled_dot_product_attention on `probe` as q (default a
    (1, 1, 64, 64) fp32 CPU tensor) and `keys` (default `probe`) as k and v, as its own chooser names
    it (its CPU choices: the fused flash-attention kernel or math)."""
    if torch is None:
        return "not installed"
    try:
        probe = torch.zeros((1, 1, 64, 64)) if probe is None else probe
        keys = probe if keys is None else keys
        choice = torch._fused_sdp_choice(probe, keys, keys, None, 0.0, causal, enable_gqa=enable_gqa)
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


class TorchSdpaBf16(TorchSdpa):
    """The same call on bfloat16 tensors (Q, K, V converted once, exactly: the window's values are
    bfloat16 values), PyTorch's bf16 flash kernel on the CPU; O comes back in bfloat16."""

    def __init__(self, blas: OpenBlas):
        super().__init__(blas)
        path = sdpa_path(torch.zeros((1, 1, 64, 64), dtype=torch.bfloat16)) if torch is not None else "not installed"
        self.fused = path == "flash_attention"
        self.description = dict(self.description, fused=self.fused, dtype="bf16",
                                how=f"torch.nn.functional.scaled_dot_product_attention on bfloat16 (1, 1, n, d), "
                                    f"is_causal (its CPU path: {path})")

    def prepare(self, point, q, k, v):
        super().prepare(point, q, k, v)
        self.tq, self.tk, self.tv = (t.to(torch.bfloat16) for t in (self.tq, self.tk, self.tv))
        self.label = f"{sdpa_path(self.tq[None, None], point['causal'])} bf16 (torch._fused_sdp_choice)"

    def output(self):
        return np.ascontiguousarray(self.o.float().numpy(), dtype=np.float32)


class OpenVinoSdpa(Contender):
    """OpenVINO's ScaledDotProductAttention (opset13) in a one-node model compiled for the CPU
    plugin, as a deployment compiles it: once per shape, f32 inference precision, a latency hint
    with one stream and the point's threads. The kernel that ran is the runtime model's node (its
    layer and primitive type), recorded as each entry's label."""

    name = "openvino/sdpa"
    precision = "f32"  # INFERENCE_PRECISION_HINT, and the precision its SDPA node must run in

    def __init__(self):
        version = openvino.get_version() if openvino is not None else "not installed"
        self.description = {"role": "peer", "library": "OpenVINO", "version": version, "fused": True,
                            "threading": "the CPU plugin's own pool (INFERENCE_NUM_THREADS, one stream)",
                            "how": "opset13.scaled_dot_product_attention(q, k, v, causal) on (1, 1, n, d), "
                                   f"compile_model('CPU', {self.precision}), infer request reused"}

    def unsupported(self, point):
        return "" if openvino is not None else f"missing: OpenVINO (openvino, requirements.txt): {OPENVINO_ERROR}"

    def prepare(self, point, q, k, v):
        super().prepare(point, q, k, v)
        n, d = point["n"], point["d"]
        params = [ov_ops.parameter([1, 1, n, d], openvino.Type.f32, name=x) for x in "qkv"]
        node = ov_ops.scaled_dot_product_attention(*params, causal=point["causal"])
        model = openvino.Model([node], params, "sdpa")
        compiled = openvino.Core().compile_model(model, "CPU", {
            "INFERENCE_NUM_THREADS": point["threads"], "INFERENCE_PRECISION_HINT": self.precision,
            "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1})
        self.request = compiled.create_infer_request()
        self.inputs = [x.reshape(1, 1, n, d) for x in (q, k, v)]
        info = [{key: op.get_rt_info()[key].astype(str) for key in op.get_rt_info().keys()}
                for op in compiled.get_runtime_model().get_ordered_ops()]
        sdpa = [i for i in info if "ScaledDotProductAttention" in i.get("originalLayersNames", "")]
        if not sdpa or any(i.get("runtimePrecision") != self.precision for i in sdpa):
            raise RuntimeError(f"the plugin did not run the SDPA node in {self.precision}: {sdpa}")
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


class OpenVinoSdpaBf16(OpenVinoSdpa):
    """The same model compiled with bf16 inference precision, as a deployment asks the CPU plugin
    for bf16 (float32 inputs converted inside the plugin); the point fails if its SDPA node did not
    run in bf16."""

    precision = "bf16"


class OnnxRuntimeOp:
    """An ONNX Runtime contrib op in a one-node model: its description (`how` it is called) and the
    reason it is missing where ONNX Runtime did not import."""

    def __init__(self, how: str):
        version = onnxruntime.__version__ if onnxruntime is not None else "not installed"
        self.description = {"role": "peer", "library": "ONNX Runtime", "version": version, "fused": True,
                            "threading": "its intra-op thread pool (intra_op_num_threads, inter_op 1)", "how": how}

    def unsupported(self, point):
        return "" if onnxruntime is not None else \
            f"missing: ONNX Runtime (onnxruntime, onnx, requirements.txt): {ONNXRUNTIME_ERROR}"


class OnnxRuntimeMha(OnnxRuntimeOp, Contender):
    """ONNX Runtime's CPU MultiHeadAttention (com.microsoft) in a one-node model, one head: an
    InferenceSession per shape with the point's intra-op threads. For float32 without a mask or
    causal flag its kernel is MLAS's flash attention; `unidirectional` (causal) takes its unfused
    path (scores materialised), which is recorded as the entry's label and `fused` per point."""

    name = "onnxruntime/mha"

    def __init__(self):
        super().__init__("com.microsoft.MultiHeadAttention(num_heads=1, unidirectional=causal) on (1, n, d), "
                         "CPUExecutionProvider, session.run")

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
