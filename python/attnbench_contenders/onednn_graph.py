"""oneDNN 3.x's Graph API as a contender, through ctypes on PyPI's CPU build of oneDNN (GNU OpenMP
threads) that scripts/setup.sh installs into .venv/onednn/ (ATTNBENCH_ONEDNN names another lib
folder).

Used as the Graph API's own examples use it: the attention subgraph MatMul(Q, K, transpose_b) ->
Multiply(scale) -> [Add(0/-inf mask) when causal] -> SoftMax -> MatMul(P, V) on (1, 1, n, d)
logical tensors of one data type (f32, or bf16 in the bf16 window), partitioned by the library's
fusion policy; every partition compiled once per point and executed in order, the tensors between
partitions in buffers allocated at prepare. How the library partitioned the subgraph (one fused
partition, or several with the scores materialised between them) is each entry's label and the
description's `fused`. The C declarations mirror oneapi/dnnl/dnnl_graph.h of the pinned release."""
from __future__ import annotations

import ctypes
import math
import os
import sys
from pathlib import Path

import ml_dtypes
import numpy as np

from .forward import Contender

# oneapi/dnnl/dnnl_graph_types.h and dnnl_common_types.h (oneDNN 3.2)
ENGINE_CPU, STREAM_IN_ORDER, POLICY_FUSION = 1, 1, 1
BF16, F32 = 2, 3
PROPERTY_VARIABLE, PROPERTY_CONSTANT = 1, 2
OP_ADD, OP_MATMUL, OP_MULTIPLY, OP_SOFTMAX = 2, 39, 46, 64
ATTR_AXIS, ATTR_TRANSPOSE_B = 0x30, 102
MAX_NDIMS = 12


class _LogicalTensor(ctypes.Structure):
    _fields_ = [("id", ctypes.c_size_t), ("ndims", ctypes.c_int), ("dims", ctypes.c_int64 * MAX_NDIMS),
                ("data_type", ctypes.c_int), ("property", ctypes.c_int), ("layout_type", ctypes.c_int),
                ("layout", ctypes.c_int64 * MAX_NDIMS)]


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_int), ("minor", ctypes.c_int), ("patch", ctypes.c_int),
                ("hash", ctypes.c_char_p), ("cpu_runtime", ctypes.c_uint), ("gpu_runtime", ctypes.c_uint)]


def lib_dir() -> Path:
    return Path(os.environ.get("ATTNBENCH_ONEDNN", Path(sys.prefix) / "onednn" / "lib"))


def _load():
    """(libdnnl, libgomp) with their signatures, or (None, reason)."""
    try:
        lib = ctypes.CDLL(str(lib_dir() / "libdnnl.so.3"))
        gomp = ctypes.CDLL("libgomp.so.1")  # the OpenMP runtime libdnnl.so.3 itself loaded
    except OSError as error:
        return None, f"{error} (scripts/setup.sh installs oneDNN into {lib_dir().parent})"
    p, pp, size, psize = ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)
    plt = ctypes.POINTER(_LogicalTensor)
    for name, args in (
            ("dnnl_engine_create", [pp, ctypes.c_int, size]), ("dnnl_engine_destroy", [p]),
            ("dnnl_stream_create", [pp, p, ctypes.c_uint]), ("dnnl_stream_wait", [p]), ("dnnl_stream_destroy", [p]),
            ("dnnl_graph_graph_create", [pp, ctypes.c_int]), ("dnnl_graph_graph_destroy", [p]),
            ("dnnl_graph_logical_tensor_init_with_strides",
             [plt, size, ctypes.c_int, ctypes.c_int32, ctypes.c_int64 * MAX_NDIMS, ctypes.c_int64 * MAX_NDIMS,
              ctypes.c_int]),
            ("dnnl_graph_op_create", [pp, size, ctypes.c_int, ctypes.c_char_p]), ("dnnl_graph_op_destroy", [p]),
            ("dnnl_graph_op_add_input", [p, plt]), ("dnnl_graph_op_add_output", [p, plt]),
            ("dnnl_graph_op_set_attr_bool", [p, ctypes.c_int, ctypes.POINTER(ctypes.c_uint8), size]),
            ("dnnl_graph_op_set_attr_s64", [p, ctypes.c_int, ctypes.POINTER(ctypes.c_int64), size]),
            ("dnnl_graph_add_op", [p, p]), ("dnnl_graph_graph_finalize", [p]),
            ("dnnl_graph_graph_filter", [p, ctypes.c_int]),
            ("dnnl_graph_graph_get_partition_num", [p, psize]), ("dnnl_graph_graph_get_partitions", [p, size, pp]),
            ("dnnl_graph_partition_destroy", [p]), ("dnnl_graph_partition_get_op_num", [p, psize]),
            ("dnnl_graph_partition_is_supported", [p, ctypes.POINTER(ctypes.c_uint8)]),
            ("dnnl_graph_partition_get_input_ports_num", [p, psize]),
            ("dnnl_graph_partition_get_input_ports", [p, size, plt]),
            ("dnnl_graph_partition_get_output_ports_num", [p, psize]),
            ("dnnl_graph_partition_get_output_ports", [p, size, plt]),
            ("dnnl_graph_compiled_partition_create", [pp, p]), ("dnnl_graph_compiled_partition_destroy", [p]),
            ("dnnl_graph_partition_compile", [p, p, size, ctypes.POINTER(plt), size, ctypes.POINTER(plt), p]),
            ("dnnl_graph_compiled_partition_query_logical_tensor", [p, size, plt]),
            ("dnnl_graph_logical_tensor_get_mem_size", [plt, psize]),
            ("dnnl_graph_tensor_create", [pp, plt, p, p]), ("dnnl_graph_tensor_destroy", [p]),
            ("dnnl_graph_compiled_partition_execute", [p, p, size, pp, size, pp])):
        function = getattr(lib, name)
        function.restype, function.argtypes = ctypes.c_int, args
    lib.dnnl_version.restype, lib.dnnl_version.argtypes = ctypes.POINTER(_Version), []
    gomp.omp_set_num_threads.restype, gomp.omp_set_num_threads.argtypes = None, [ctypes.c_int]
    return (lib, gomp), ""


_LIBS, ONEDNN_ERROR = _load()


def version() -> str:
    if _LIBS is None:
        return "missing"
    v = _LIBS[0].dnnl_version().contents
    return f"{v.major}.{v.minor}.{v.patch} ({v.hash.decode() if v.hash else 'no hash'})"


def _check(status: int, what: str) -> None:
    if status != 0:
        raise RuntimeError(f"oneDNN Graph: {what} returned dnnl_status_t {status}")


class _Subgraph:
    """The attention subgraph, partitioned, compiled and bound to buffers for one point."""

    def __init__(self, n: int, d: int, causal: bool, dtype: int, bound: dict):
        lib = _LIBS[0]
        self.handles = []  # (destroy function, handle), released in reverse
        self.engine = self._make(lib.dnnl_engine_create, lib.dnnl_engine_destroy, ENGINE_CPU, 0)
        self.stream = self._make(lib.dnnl_stream_create, lib.dnnl_stream_destroy, self.engine, STREAM_IN_ORDER)
        graph = self._make(lib.dnnl_graph_graph_create, lib.dnnl_graph_graph_destroy, ENGINE_CPU)
        tensors = {}

        def logical(tid: int, shape: tuple, prop: int = PROPERTY_VARIABLE, data_type: int = dtype) -> _LogicalTensor:
            dims, strides = (ctypes.c_int64 * MAX_NDIMS)(*shape), (ctypes.c_int64 * MAX_NDIMS)()
            for axis in range(len(shape)):
                strides[axis] = math.prod(shape[axis + 1:])
            lt = _LogicalTensor()
            _check(lib.dnnl_graph_logical_tensor_init_with_strides(ctypes.byref(lt), tid, data_type, len(shape),
                                                                    dims, strides, prop), "logical tensor")
            tensors[tid] = lt
            return lt

        def add(op_id: int, kind: int, name: str, inputs: list, outputs: list, bools=(), ints=()) -> None:
            op = self._make(lib.dnnl_graph_op_create, lib.dnnl_graph_op_destroy, op_id, kind, name.encode())
            for x in inputs:
                _check(lib.dnnl_graph_op_add_input(op, ctypes.byref(x)), f"{name} input")
            for x in outputs:
                _check(lib.dnnl_graph_op_add_output(op, ctypes.byref(x)), f"{name} output")
            for attr, value in bools:
                _check(lib.dnnl_graph_op_set_attr_bool(op, attr, ctypes.byref(ctypes.c_uint8(value)), 1), name)
            for attr, value in ints:
                _check(lib.dnnl_graph_op_set_attr_s64(op, attr, ctypes.byref(ctypes.c_int64(value)), 1), name)
            _check(lib.dnnl_graph_add_op(graph, op), f"add {name}")

        rows, scores = (1, 1, n, d), (1, 1, n, n)
        q, k, v, o = (logical(tid, rows) for tid in range(4))  # ids 0..3: Q, K, V, O
        scale = logical(4, (1,), PROPERTY_CONSTANT, F32)  # the scale in float32 whatever the data type
        s, scaled, p = logical(5, scores), logical(6, scores), logical(8, scores)
        add(100, OP_MATMUL, "q_kt", [q, k], [s], bools=[(ATTR_TRANSPOSE_B, 1)])
        add(101, OP_MULTIPLY, "scale", [s, scale], [scaled])
        if causal:
            mask, masked = logical(9, scores), logical(7, scores)
            add(102, OP_ADD, "mask", [scaled, mask], [masked])
            scaled = masked
        add(103, OP_SOFTMAX, "softmax", [scaled], [p], ints=[(ATTR_AXIS, -1)])
        add(104, OP_MATMUL, "p_v", [p, v], [o])
        _check(lib.dnnl_graph_graph_finalize(graph), "finalize")
        _check(lib.dnnl_graph_graph_filter(graph, POLICY_FUSION), "filter")
        count = ctypes.c_size_t()
        _check(lib.dnnl_graph_graph_get_partition_num(graph, ctypes.byref(count)), "partition count")
        partitions = (ctypes.c_void_p * count.value)()
        _check(lib.dnnl_graph_graph_get_partitions(graph, count.value, partitions), "partitions")
        for handle in partitions:
            self.handles.append((lib.dnnl_graph_partition_destroy, handle))
        self.buffers = dict(bound)  # tensor id -> array holding its bytes
        self.steps, self.ops = [], []
        for part in partitions:
            supported, ops = ctypes.c_uint8(), ctypes.c_size_t()
            _check(lib.dnnl_graph_partition_is_supported(part, ctypes.byref(supported)), "is_supported")
            _check(lib.dnnl_graph_partition_get_op_num(part, ctypes.byref(ops)), "op count")
            if not supported.value:
                raise RuntimeError(f"oneDNN Graph left a partition of {ops.value} ops unsupported")
            self.ops.append(ops.value)
            self.steps.append(self._compile(lib, part))
        self.partitions = len(self.steps)

    def _make(self, create, destroy, *args):
        handle = ctypes.c_void_p()
        _check(create(ctypes.byref(handle), *args), create.__name__)
        self.handles.append((destroy, handle))
        return handle

    def _ports(self, lib, part, kind: str) -> list:
        count = ctypes.c_size_t()
        _check(getattr(lib, f"dnnl_graph_partition_get_{kind}_ports_num")(part, ctypes.byref(count)), kind)
        ports = (_LogicalTensor * count.value)()
        _check(getattr(lib, f"dnnl_graph_partition_get_{kind}_ports")(part, count.value, ports), kind)
        return list(ports)

    def _compile(self, lib, part):
        """(compiled partition, its input tensors, its output tensors), outputs bound to new buffers."""
        inputs, outputs = self._ports(lib, part, "input"), self._ports(lib, part, "output")
        compiled = self._make(lib.dnnl_graph_compiled_partition_create, lib.dnnl_graph_compiled_partition_destroy,
                              part)
        ins = (ctypes.POINTER(_LogicalTensor) * len(inputs))(*(ctypes.pointer(x) for x in inputs))
        outs = (ctypes.POINTER(_LogicalTensor) * len(outputs))(*(ctypes.pointer(x) for x in outputs))
        _check(lib.dnnl_graph_partition_compile(part, compiled, len(inputs), ins, len(outputs), outs, self.engine),
               "compile")
        bound = []
        for port, is_output in [(x, False) for x in inputs] + [(x, True) for x in outputs]:
            lt = _LogicalTensor()
            _check(lib.dnnl_graph_compiled_partition_query_logical_tensor(compiled, port.id, ctypes.byref(lt)),
                   "query")
            if port.id not in self.buffers:
                if not is_output:
                    raise RuntimeError(f"oneDNN Graph: partition input {port.id} has no producer")
                nbytes = ctypes.c_size_t()
                _check(lib.dnnl_graph_logical_tensor_get_mem_size(ctypes.byref(lt), ctypes.byref(nbytes)), "size")
                self.buffers[port.id] = np.empty(nbytes.value, dtype=np.uint8)
            tensor = self._make(lib.dnnl_graph_tensor_create, lib.dnnl_graph_tensor_destroy, ctypes.byref(lt),
                                self.engine, self.buffers[port.id].ctypes.data_as(ctypes.c_void_p))
            bound.append(tensor)
        ins_t = (ctypes.c_void_p * len(inputs))(*bound[:len(inputs)])
        outs_t = (ctypes.c_void_p * len(outputs))(*bound[len(inputs):])
        return compiled, ins_t, outs_t

    def run(self) -> None:
        lib = _LIBS[0]
        for compiled, ins, outs in self.steps:
            _check(lib.dnnl_graph_compiled_partition_execute(compiled, self.stream, len(ins), ins, len(outs), outs),
                   "execute")
        _check(lib.dnnl_stream_wait(self.stream), "wait")

    def scratch_bytes(self, io: set) -> float:
        return float(sum(b.nbytes for tid, b in self.buffers.items() if tid not in io))

    def free(self) -> None:
        for destroy, handle in reversed(self.handles):
            destroy(handle)
        self.handles, self.steps, self.buffers = [], [], {}


class OnednnGraph(Contender):
    """oneDNN's Graph API on float32 tensors (the float32 window); OnednnGraphBf16 on bfloat16."""

    name = "onednn/graph"
    dtype = F32

    def __init__(self):
        dtype = "bf16" if self.dtype == BF16 else "f32"
        self.description = {"role": "peer", "library": "oneDNN", "version": version(), "dtype": dtype,
                            "fused": _LIBS is not None and self._partitions(64, 64) == 1,  # and per point: label
                            "threading": "OpenMP (libgomp), omp_set_num_threads",
                            "how": f"Graph API: MatMul(Q, K^T) -> Multiply(scale) [-> Add(mask)] -> SoftMax -> "
                                   f"MatMul(P, V) on {dtype} (1, 1, n, d), the fusion policy's partitions "
                                   "compiled once per point, executed in order"}
        self.graph = None

    def _partitions(self, n: int, d: int) -> int:
        """How many partitions the library makes of the subgraph at this shape (no mask)."""
        zeros = self._host(np.zeros((n, d), dtype=np.float32))
        probe = _Subgraph(n, d, False, self.dtype, {0: zeros, 1: zeros, 2: zeros, 4: np.ones(1, np.float32)})
        try:
            return probe.partitions
        finally:
            probe.free()

    def unsupported(self, point):
        return "" if _LIBS is not None else f"missing: oneDNN 3.x (scripts/setup.sh): {ONEDNN_ERROR}"

    def _host(self, x: np.ndarray) -> np.ndarray:
        """x as the graph's tensors hold it: bfloat16 (the bf16 window's values are bfloat16 values,
        so exactly) or float32."""
        return np.ascontiguousarray(x, dtype=ml_dtypes.bfloat16 if self.dtype == BF16 else np.float32)

    def prepare(self, point, q, k, v):
        super().prepare(point, q, k, v)
        n, d = point["n"], point["d"]
        _LIBS[1].omp_set_num_threads(point["threads"])
        bound = {0: self._host(q), 1: self._host(k), 2: self._host(v),
                 4: np.array([1.0 / math.sqrt(d)], dtype=np.float32)}
        if point["causal"]:
            bound[9] = self._host(np.where(self.mask, np.float32(-np.inf), np.float32(0)))
        self.graph = _Subgraph(n, d, point["causal"], self.dtype, bound)
        parts = self.graph.partitions
        self.label = (f"{parts} partition{'s' if parts > 1 else ''} "
                      f"({' + '.join(str(x) for x in self.graph.ops)} ops), "
                      f"{'fused' if parts == 1 else 'scores materialised between them'}, "
                      f"{self.description['dtype']}")

    def run(self):
        self.graph.run()

    def output(self):
        o = self.graph.buffers[3].view(ml_dtypes.bfloat16 if self.dtype == BF16 else np.float32)
        return o.astype(np.float32).reshape(self.q.shape)

    def scratch_bytes(self):
        return self.graph.scratch_bytes({0, 1, 2, 3, 4, 9}) if self.graph else math.nan

    def release(self):
        super().release()
        if self.graph is not None:
            self.graph.free()
        self.graph = None


class OnednnGraphBf16(OnednnGraph):
    dtype = BF16
