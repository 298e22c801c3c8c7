"""The libraries the contenders call, each optional: a missing one is recorded at every point with
the reason, and the window goes on without it."""
from __future__ import annotations

import re

TORCH_ERROR = OPENVINO_ERROR = ONNXRUNTIME_ERROR = ""  # why an import failed

try:
    import torch
except ImportError as error:  # recorded at every point as missing
    torch = None
    TORCH_ERROR = str(error)

try:
    import openvino
    import openvino.opset13 as ov_ops
except ImportError as error:
    openvino = ov_ops = None
    OPENVINO_ERROR = str(error)

try:
    import onnx
    import onnxruntime
except ImportError as error:
    onnx = onnxruntime = None
    ONNXRUNTIME_ERROR = str(error)


def torch_blas() -> str:
    """The BLAS PyTorch was built with (BLAS_INFO of its build settings: mkl in the PyPI build)."""
    if torch is None:
        return "none"
    found = re.search(r"BLAS_INFO=(\w+)", torch.__config__.show())
    return found.group(1) if found else "unknown"
