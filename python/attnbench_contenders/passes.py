"""The window's further passes: a training step (the forward, then the backward of a loss with output
gradient dO: dQ, dK, dV), one-row decode of a grouped-query layer through a KV cache, and that
layer's causal prefill, for the contenders that offer them, each used as its users use it:

- attnbench: the forward writing LSE then `attention_backward` (the C helper); decode through a
  `KvCache` filled once per point, as a decode loop keeps one;
- PyTorch: `scaled_dot_product_attention` on tensors that require gradients, `backward(dO)`
  through autograd (the flash kernel's backward when the forward took it: recorded from the
  autograd node); decode with `enable_gqa=True` on the cache's tensors as they are;
- ONNX Runtime: decode through its CPU `GroupQueryAttention` (com.microsoft), as onnxruntime-genai
  runs a decoder: the past K and V in one buffer of the cache's length that the present shares
  (bound once with IOBinding), the new token's K and V appended into it by the call; prefill with
  the whole prompt's tokens new;
- prefill: attnbench's attention() on the grouped-query shape, PyTorch with enable_gqa and is_causal
  (failing the point on its math fallback); ggml's in ggml.py.

A training point's contenders are checked, every gradient element against the backward oracle, on
a problem of the point's head dim, mask and threads but at most CHECK_TRAINING_N rows (the oracle
costs the call's work in double, and more); decode and prefill points against the forward oracle on
sampled rows of every head."""
from __future__ import annotations

import numpy as np

from .capi import Capi
from .forward import Attnbench, Contender, OnnxRuntimeOp, sdpa_path
from .libraries import TORCH_ERROR, onnx, onnxruntime, torch

# The largest training problem checked against the backward oracle before a point is timed.
CHECK_TRAINING_N = 256


class _Ours:
    """attnbench's side of a pass: a registry kernel through the C helper, described as the forward's."""

    def __init__(self, capi: Capi, name: str, description: dict):
        self.capi, self.name, self.description = capi, name, description
        self.kernel = name.encode()


class _Torch:
    """PyTorch's side of a pass: scaled_dot_product_attention, described as the forward's."""

    name = "torch/sdpa"

    def __init__(self, description: dict):
        self.description = description

    def unsupported(self, point):
        return "" if torch is not None else f"missing: PyTorch (torch, requirements.txt): {TORCH_ERROR}"


class Training(Contender):
    """A contender's training step: prepare(point, q, k, v, d_o), run(), gradients()."""

    passes = ("forward+backward",)

    def prepare(self, point, q, k, v, d_o=None):
        super().prepare(point, q, k, v)
        self.d_o = d_o

    def release(self):
        super().release()
        self.d_o = None


class AttnbenchTraining(_Ours, Training):
    def __init__(self, capi: Capi, name: str, description: dict):
        super().__init__(capi, name, description)
        self.label = "forward (LSE), then attention_backward"

    def prepare(self, point, q, k, v, d_o=None):
        super().prepare(point, q, k, v, d_o)
        n, d = q.shape
        self.o, self.dq = np.empty_like(q), np.empty_like(q)
        self.dk, self.dv = np.empty_like(k), np.empty_like(v)
        self.lse = np.empty(n, dtype=np.float32)

    def run(self):
        self.capi.training_step(self.kernel, self.q, self.k, self.v, self.d_o, self.o, self.lse, self.dq, self.dk,
                                self.dv, self.point["threads"], self.point["causal"])

    def gradients(self):
        return self.dq, self.dk, self.dv


class TorchSdpaTraining(_Torch, Training):
    def prepare(self, point, q, k, v, d_o=None):
        super().prepare(point, q, k, v, d_o)
        self.tq, self.tk, self.tv = (torch.from_numpy(x)[None, None].requires_grad_() for x in (q, k, v))
        self.tdo = torch.from_numpy(d_o)[None, None]
        self.label = ""

    def run(self):
        for t in (self.tq, self.tk, self.tv):
            t.grad = None
        o = torch.nn.functional.scaled_dot_product_attention(self.tq, self.tk, self.tv,
                                                             is_causal=self.point["causal"])
        self.label = self.label or f"{o.grad_fn.name()} (autograd)"
        o.backward(self.tdo)

    def gradients(self):
        return tuple(np.ascontiguousarray(t.grad[0, 0].numpy(), dtype=np.float32) for t in (self.tq, self.tk, self.tv))

    def release(self):
        super().release()
        self.tq = self.tk = self.tv = self.tdo = None


class Decode(Contender):
    """One-row decode: prepare(point, q [q_heads][1][d], k, v [kv_heads][kv_len][d]), run(), output()."""

    passes = ("decode",)


class AttnbenchDecode(_Ours, Decode):
    kv_dtype, quantise_query = "f32", False

    def __init__(self, capi: Capi, name: str, description: dict):
        super().__init__(capi, name, description)
        self.cache = None
        self.label = f"attention() through a KvCache ({self.kv_dtype}), filled once per point" + (
            ", the query rounded to q8_0 for Q K^T (quantise_query)" if self.quantise_query else "")

    def prepare(self, point, q, k, v):
        super().prepare(point, q, k, v)
        self.cache = self.capi.cache_new(self.kernel, k, v, point["threads"], self.kv_dtype)
        self.o = np.empty_like(q)

    def run(self):
        self.capi.cache_attention(self.cache, self.q, self.o, self.point["threads"], False, self.quantise_query)

    def output(self):
        return self.o

    def release(self):
        if self.cache is not None:
            self.capi.cache_free(self.cache)
        self.cache = None
        super().release()


class AttnbenchDecodeQ8(AttnbenchDecode):
    """The q8_0 cache with the query rounded to q8_0 for Q K^T: the arithmetic of ggml's q8_0 decode."""

    kv_dtype, quantise_query = "q8_0", True


class Prefill(Contender):
    """Causal prefill of the grouped-query layer: prepare(point, q [q_heads][n][d], k, v [kv_heads][n][d]),
    run(), output() [q_heads][n][d]."""

    passes = ("prefill",)


class AttnbenchPrefill(Attnbench, Prefill):
    """The forward's contender on the grouped-query shape."""

    label = "attention() on the grouped-query shape (each K/V head read once for its query heads)"

    def run(self):
        self.capi.attention_gqa(self.kernel, self.q, self.k, self.v, self.o, self.point["threads"], self.point["causal"])


class TorchSdpaPrefill(_Torch, Prefill):
    def prepare(self, point, q, k, v):
        super().prepare(point, q, k, v)
        self.tq, self.tk, self.tv = (torch.from_numpy(x)[None] for x in (q, k, v))
        path = sdpa_path(self.tq, point["causal"], self.tk, enable_gqa=True)
        if path != "flash_attention":  # fail the point rather than time the math fallback
            raise RuntimeError(f"PyTorch's chooser took {path}, not its fused flash_attention kernel")
        self.label = f"{path} with enable_gqa (torch._fused_sdp_choice)"

    def run(self):
        with torch.no_grad():
            self.o = torch.nn.functional.scaled_dot_product_attention(self.tq, self.tk, self.tv,
                                                                      is_causal=self.point["causal"], enable_gqa=True)

    def output(self):
        return np.ascontiguousarray(self.o[0].numpy(), dtype=np.float32)

    def release(self):
        super().release()
        self.tq = self.tk = self.tv = self.o = None


class OnnxRuntimeGqaDecode(OnnxRuntimeOp, Decode):
    """ONNX Runtime's CPU GroupQueryAttention for one new token of every query head: the point's n
    keys as n - 1 past tokens plus the new one, the past buffer (kv_heads, n, d) shared with the
    present output, so the call writes only the new token's K and V and reads the cache in place."""

    name = "onnxruntime/gqa"
    label = "GroupQueryAttention, past and present K/V in one shared buffer"

    def __init__(self):
        super().__init__("com.microsoft.GroupQueryAttention(num_heads, kv_num_heads) on the new tokens, past and "
                         "present K/V sharing one buffer (IOBinding), CPUExecutionProvider")

    def new_tokens(self, point) -> int:
        return 1

    def prepare(self, point, q, k, v):
        super().prepare(point, q, k, v)
        heads, kv_heads, d, n = point["q_heads"], point["kv_heads"], point["d"], point["n"]
        rows = self.new_tokens(point)
        helper, f32, i32 = onnx.helper, onnx.TensorProto.FLOAT, onnx.TensorProto.INT32
        node = helper.make_node("GroupQueryAttention", ["query", "key", "value", "past_key", "past_value",
                                                        "seqlens_k", "total_sequence_length"],
                                ["output", "present_key", "present_value"], domain="com.microsoft",
                                num_heads=heads, kv_num_heads=kv_heads)
        cache = [1, kv_heads, n, d]
        inputs = [helper.make_tensor_value_info("query", f32, [1, rows, heads * d]),
                  helper.make_tensor_value_info("key", f32, [1, rows, kv_heads * d]),
                  helper.make_tensor_value_info("value", f32, [1, rows, kv_heads * d]),
                  helper.make_tensor_value_info("past_key", f32, cache),
                  helper.make_tensor_value_info("past_value", f32, cache),
                  helper.make_tensor_value_info("seqlens_k", i32, [1]),
                  helper.make_tensor_value_info("total_sequence_length", i32, [])]
        outputs = [helper.make_tensor_value_info("output", f32, [1, rows, heads * d]),
                   helper.make_tensor_value_info("present_key", f32, cache),
                   helper.make_tensor_value_info("present_value", f32, cache)]
        model = helper.make_model(helper.make_graph([node], "gqa", inputs, outputs),
                                  opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = point["threads"]
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                                    providers=["CPUExecutionProvider"])
        # The cache as a decode loop holds it: n - rows tokens written, the new ones' slots included.
        self.past = [onnxruntime.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(x[None])) for x in (k, v)]
        # (kv_heads, rows, d) -> (1, rows, kv_heads * d), and the query rows likewise
        self.new = [np.ascontiguousarray(x[:, n - rows:].transpose(1, 0, 2).reshape(1, rows, kv_heads * d))
                    for x in (k, v)]
        self.query = np.ascontiguousarray(q.transpose(1, 0, 2).reshape(1, rows, heads * d))
        self.lengths = (np.array([n - 1], dtype=np.int32), np.array(n, dtype=np.int32))
        binding = self.session.io_binding()
        binding.bind_cpu_input("query", self.query)
        binding.bind_cpu_input("key", self.new[0])
        binding.bind_cpu_input("value", self.new[1])
        binding.bind_ortvalue_input("past_key", self.past[0])
        binding.bind_ortvalue_input("past_value", self.past[1])
        binding.bind_cpu_input("seqlens_k", self.lengths[0])
        binding.bind_cpu_input("total_sequence_length", self.lengths[1])
        binding.bind_output("output")
        binding.bind_ortvalue_output("present_key", self.past[0])
        binding.bind_ortvalue_output("present_value", self.past[1])
        self.binding = binding

    def run(self):
        self.session.run_with_iobinding(self.binding)

    def output(self):
        o = self.binding.get_outputs()[0].numpy()
        rows = self.new_tokens(self.point)
        return np.ascontiguousarray(o.reshape(rows, self.point["q_heads"], self.point["d"]).transpose(1, 0, 2),
                                    dtype=np.float32)

    def release(self):
        super().release()
        self.session = self.binding = self.past = self.new = self.query = None


class OnnxRuntimeGqaPrefill(OnnxRuntimeGqaDecode, Prefill):
    """The same operator on a prompt: all n tokens new (GroupQueryAttention is causal), written into
    the cache buffer by the call, as onnxruntime-genai runs a prompt."""

    passes = Prefill.passes
    label = "GroupQueryAttention on the whole prompt, K/V written into the shared cache buffer"

    def new_tokens(self, point) -> int:
        return point["n"]


class TorchSdpaDecode(_Torch, Decode):
    def prepare(self, point, q, k, v):
        super().prepare(point, q, k, v)
        self.tq, self.tk, self.tv = (torch.from_numpy(x)[None] for x in (q, k, v))
        path = sdpa_path(self.tq, False, self.tk, enable_gqa=True)
        self.label = f"{path} with enable_gqa (torch._fused_sdp_choice)"

    def run(self):
        with torch.no_grad():
            self.o = torch.nn.functional.scaled_dot_product_attention(self.tq, self.tk, self.tv, enable_gqa=True)

    def output(self):
        return np.ascontiguousarray(self.o[0].numpy(), dtype=np.float32)

    def release(self):
        super().release()
        self.tq = self.tk = self.tv = self.o = None
