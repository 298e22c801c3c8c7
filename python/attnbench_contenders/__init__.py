"""The Python contenders' window: NumPy, PyTorch, OpenVINO, ONNX Runtime, ggml and oneDNN beside
attnbench's `tiled/simd`, in one process.

    PYTHONPATH=python .venv/bin/python -m attnbench_contenders --preset quick|standard|full \
        --lib build/lib/libattnbench_capi.so --out DIR/python_contenders.json [--filter REGEX]

Run with the project's Python (.venv/, scripts/setup.sh: NumPy and PyTorch as requirements.txt pins them).

Every point of the contender preset (the same list as `attnbench_bench --contenders`, read through
the C helper) runs every contender here: `tiled/simd` (as it resolves) through the C helper, NumPy's
three steps as the attention module writes them (`numpy/textbook`: new arrays at every step;
`numpy/inplace`: one score buffer, every step in place), and PyTorch (`torch/matmul`: matmul,
softmax, matmul; `torch/sdpa`: `torch.nn.functional.scaled_dot_product_attention` on one batch of one
head, the layout whose CPU dispatch takes the fused kernel; the version and the path it took are
recorded in the JSON's context), OpenVINO's CPU `ScaledDotProductAttention` (`openvino/sdpa`) and
ONNX Runtime's CPU `MultiHeadAttention` (`onnxruntime/mha`), each compiled once per point as a
deployment compiles it, and ggml's `flash_attn_ext` (`ggml/flash_attn_ext`, llama.cpp's CPU
attention, through ctypes on the build scripts/setup.sh makes: ggml.py) and oneDNN's Graph API
(`onednn/graph`, the attention subgraph as the library partitions it, through ctypes on the PyPI
build scripts/setup.sh installs: onednn_graph.py), the kernel that ran in each entry's `label`. Each contender
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
otherwise spin against each other (ggml's OpenMP threads sleep between calls too).
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before numpy, torch and their OpenMP load

from .capi import Capi, OpenBlas  # noqa: E402,F401
from .forward import (Attnbench, Contender, NumpyInplace, NumpyTextbook, OnnxRuntimeMha,  # noqa: E402,F401
                      OpenVinoSdpa, TorchMatmul, TorchSdpa)
from .window import main, point_name, run_point  # noqa: E402,F401
