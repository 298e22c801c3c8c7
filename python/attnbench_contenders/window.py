"""The window: every point's contenders prepared, checked against the oracle, then timed in
alternating rounds; the JSON in Google Benchmark's schema."""
from __future__ import annotations

import argparse
import importlib
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

import numpy as np

from . import __doc__ as PACKAGE_DOC
from .capi import Capi, OpenBlas
from .forward import (Attnbench, NumpyInplace, NumpyTextbook, OnnxRuntimeMha, OpenVinoSdpa, OpenVinoSdpaBf16,
                      TorchMatmul, TorchSdpa, TorchSdpaBf16)
from . import ggml, onednn_graph, passes
from .isolation import Isolated
from .libraries import onnxruntime, openvino, torch, torch_blas



# A pause before every timed repetition. OpenBLAS's idle threads (NumPy's, PyTorch's matmul) keep
# spinning for a while after a call before they sleep; a contender timed right after one of them
# would share the cores with those spinning threads. The pause gives every contender the same quiet
# start, and changes no contender's own configuration.
SETTLE_SECONDS = 0.2


# Bytes a stored K or V value takes in the decode points' cache (ggml's q8_0: 34 bytes per 32 values).
KV_BYTES = {"q8_0": 34 / 32}

# A Llama-style layer, the decode points' layout: 32 query heads over 8 key/value heads of 128.
DECODE_LAYOUT = {"q_heads": 32, "kv_heads": 8, "d": 128}


def point_name(contender: str, p: dict) -> str:
    """The benchmark name of a contender at a point, in the C++ windows' scheme (the report's loader
    reads its columns): `.../n:N/d:D/threads:T/causal:C`, a training step's ending in
    `/pass:forward+backward`, a decode point's `.../q:1/kv:N/heads:H/kv_heads:K/d:D/...`."""
    if p["pass"] in ("decode", "prefill"):
        rows = 1 if p["pass"] == "decode" else p["n"]
        return (f"{contender}/q:{rows}/kv:{p['n']}/heads:{p['q_heads']}/kv_heads:{p['kv_heads']}/d:{p['d']}"
                f"/threads:{p['threads']}/causal:{int(p['causal'])}")
    name = f"{contender}/n:{p['n']}/d:{p['d']}/threads:{p['threads']}/causal:{int(p['causal'])}"
    return name + ("/pass:forward+backward" if p["pass"] == "forward+backward" else "")


def flops_of(p: dict) -> float:
    """4 d FLOPs per scored pair (two products); a training step counts 3.5 times its forward (the
    backward's five products at 2 d each, as the C++ matrix and FlashAttention's benchmarks do)."""
    n, d = p["n"], p["d"]
    if p["pass"] == "decode":
        return 4.0 * p["q_heads"] * n * d
    pairs = n * (n + 1) / 2 if p["causal"] else n * n
    if p["pass"] == "prefill":
        return 4.0 * p["q_heads"] * pairs * d
    return 4.0 * pairs * d * (3.5 if p["pass"] == "forward+backward" else 1.0)


def arrays(p: dict, seed: int = 1) -> tuple:
    """Seeded standard-normal Q, K, V (and dO for a training step) of a point."""
    gen = np.random.default_rng(seed)
    if p["pass"] in ("decode", "prefill"):
        q = gen.standard_normal((p["q_heads"], 1 if p["pass"] == "decode" else p["n"], p["d"]), dtype=np.float32)
        k, v = (gen.standard_normal((p["kv_heads"], p["n"], p["d"]), dtype=np.float32) for _ in range(2))
        if p.get("dtype") == "q8_0":
            q, k, v = (q8_0_values(x) for x in (q, k, v))
        return q, k, v, None
    q, k, v = (gen.standard_normal((p["n"], p["d"]), dtype=np.float32) for _ in range(3))
    d_o = gen.standard_normal((p["n"], p["d"]), dtype=np.float32) if p["pass"] == "forward+backward" else None
    if p.get("dtype") == "bf16":  # bfloat16 values, held in float32: every contender takes them exactly
        import ml_dtypes
        q, k, v = (x.astype(ml_dtypes.bfloat16).astype(np.float32) for x in (q, k, v))
    return q, k, v, d_o


def q8_0_values(x: np.ndarray) -> np.ndarray:
    """x rounded to the values ggml's q8_0 blocks hold (32 along the last axis, scale max|x| / 127 as
    float16, codes rounded half away from zero): storing them as q8_0 again gives the same blocks, so
    every contender of the q8_0 window holds its inputs exactly and the float32 oracle check applies."""
    blocks = x.reshape(-1, 32).astype(np.float32)
    scale = np.abs(blocks).max(axis=1, keepdims=True) / np.float32(127)
    inverse = np.divide(np.float32(1), scale, out=np.zeros_like(scale), where=scale != 0)
    y = blocks * inverse
    whole = np.trunc(y)
    codes = whole + np.where(np.abs(y - whole) >= 0.5, np.sign(y), np.float32(0))  # C's roundf
    return (codes * scale.astype(np.float16).astype(np.float32)).astype(np.float32).reshape(x.shape)


def prepare_checked(c, p: dict, capi: Capi, inputs: tuple) -> tuple:
    """Prepares contender `c` at point `p`, checked against the oracle first: (seconds of its first
    call, the check's worst error ratio, the failure or "")."""
    q, k, v, d_o = inputs
    if p["pass"] == "forward+backward":
        small = dict(p, n=min(p["n"], passes.CHECK_TRAINING_N))
        sq, sk, sv, sdo = arrays(small, seed=2)
        c.prepare(small, sq, sk, sv, sdo)
        c.run()
        passed, worst, failure = capi.check_gradients(sq, sk, sv, sdo, *c.gradients(), p["causal"])
        c.release()
        if not passed:
            return 0.0, worst, failure
        c.prepare(p, q, k, v, d_o)
    else:
        c.prepare(p, q, k, v)
    start = time.perf_counter()
    c.run()  # the warm-up, and for the forward passes the output the check reads
    call = time.perf_counter() - start
    if p["pass"] == "forward+backward":
        return call, worst, ""  # its gradients were checked above, on the smaller problem
    if p["pass"] in ("decode", "prefill"):
        passed, worst, failure = capi.check_gqa(q, k, v, c.output(), p["causal"])
    else:
        passed, worst, failure = capi.check(q, k, v, c.output(), p["causal"], bf16=p.get("dtype") == "bf16")
    return call, worst, "" if passed else failure


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
    inputs = arrays(p)
    ready = []  # (contender, iterations per repetition, check ratio)
    for c in contenders:
        name = point_name(c.name, p)
        why = c.unsupported(p)
        if why:
            entries.append(error_entry(name, why, reps))
            continue
        try:
            call, worst, failure = prepare_checked(c, p, capi, inputs)
        except Exception as error:  # noqa: BLE001 - any contender failure is recorded, never fatal
            c.release()
            entries.append(error_entry(name, f"failed: {type(error).__name__}: {error}", reps))
            continue
        if failure:
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
                "scratch_bytes": c.scratch_bytes(),
                "score_matrix_bytes": 4.0 * p["n"] * {"decode": p.get("q_heads", 1),
                                                      "prefill": p.get("q_heads", 1) * p["n"]}.get(p["pass"], p["n"]),
                **({"bytes_moved": 2 * KV_BYTES.get(p.get("dtype"), 4.0) * p["kv_heads"] * p["n"] * p["d"]}
                   if p["pass"] == "decode" else {}),
                "oracle_error_ratio": worst,
                **({"label": c.label} if getattr(c, "label", "") else {}),
            })
    for c, _, _ in ready:
        log(f"  {point_name(c.name, p)}: median "
            f"{np.median([e['real_time'] for e in entries if e.get('run_name') == point_name(c.name, p)]):.3f} ms")
        c.release()
    return entries


def contenders_by_pass(capi: Capi, blas: OpenBlas) -> dict:
    """Every contender of the window, by pass; the forward's first is attnbench's."""
    ours, torch_sdpa = Attnbench(capi, "tiled/simd"), TorchSdpa(blas)
    return {"forward": [ours, NumpyTextbook(blas), NumpyInplace(blas), TorchMatmul(blas), torch_sdpa,
                        OpenVinoSdpa(), OnnxRuntimeMha(), ggml.GgmlFlashAttn(), onednn_graph.OnednnGraph()],
            "forward+backward": [passes.AttnbenchTraining(capi, ours.name, ours.description),
                                 passes.TorchSdpaTraining(torch_sdpa.description)],
            "decode": [passes.AttnbenchDecode(capi, ours.name, ours.description),
                       passes.TorchSdpaDecode(torch_sdpa.description), passes.OnnxRuntimeGqaDecode(),
                       ggml.GgmlDecode()],
            "prefill": [passes.AttnbenchPrefill(capi, "tiled/simd"),
                        passes.TorchSdpaPrefill(torch_sdpa.description), passes.OnnxRuntimeGqaPrefill(),
                        ggml.GgmlPrefill()]}


def bf16_contenders_by_pass(capi: Capi, blas: OpenBlas) -> dict:
    """The bf16 window's contenders: attnbench's bf16-products kernel against PyTorch's bf16 SDPA,
    OpenVINO's SDPA at bf16 inference precision and oneDNN's Graph API on bf16 tensors, on the same
    bfloat16 values (the forward only)."""
    return {"forward": [Attnbench(capi, "tiled/simd-bf16"), TorchSdpaBf16(blas), OpenVinoSdpaBf16(),
                        onednn_graph.OnednnGraphBf16()]}


def q8_0_contenders_by_pass(capi: Capi, blas: OpenBlas) -> dict:
    """The q8_0 window's contenders: one-row decode through a q8_0 K/V cache, attnbench's (the query
    quantised as ggml quantises it) against ggml's, on the same q8_0 values."""
    ours = Attnbench(capi, "tiled/simd")
    return {"decode": [passes.AttnbenchDecodeQ8(capi, ours.name, ours.description), ggml.GgmlDecodeQ8()]}


def further_points(capi: Capi, preset: str, forward: list) -> list:
    """The preset's training-step points (its lengths, at the forward points' head dims and thread
    counts, not causal and causal), decode points (the Llama layout over its cache lengths) and causal
    prefill points (the Llama layout over its prompt lengths)."""
    dims = sorted({p["d"] for p in forward})
    threads = sorted({p["threads"] for p in forward})
    training = [{"pass": "forward+backward", "n": n, "d": d, "threads": t, "causal": causal}
                for d in dims for n in capi.preset_pass(preset, "forward+backward")
                for causal in (False, True) for t in threads]
    decode = [dict(DECODE_LAYOUT, **{"pass": "decode", "n": kv, "threads": t, "causal": False})
              for kv in capi.preset_pass(preset, "decode") for t in threads]
    prefill = [dict(DECODE_LAYOUT, **{"pass": "prefill", "n": n, "threads": t, "causal": True})
               for n in capi.preset_pass(preset, "prefill") for t in threads]
    return training + decode + prefill


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=PACKAGE_DOC.split("\n\n")[0])
    parser.add_argument("--preset", default="quick")
    parser.add_argument("--lib", required=True, help="build/lib/libattnbench_capi.so")
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--filter", default="", help="regex over benchmark names; others are not run")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="'all' threads")
    parser.add_argument("--point-timeout", type=float, default=0,
                        help="seconds a point's worker may take before it is ended (default: from the budget)")
    parser.add_argument("--factory", default="",
                        help="module:function(capi, blas) -> {pass: [contenders]} the worker builds "
                             "(default: contenders_by_pass, or the --dtype window's)")
    parser.add_argument("--dtype", choices=("f32", "bf16", "q8_0"), default="f32",
                        help="bf16: the bf16 window (bfloat16 values, bf16 implementations, the forward); q8_0: "
                             "the quantised decode window (q8_0 values, a q8_0 K/V cache, one-row decode)")
    args = parser.parse_args(argv)
    bf16 = args.dtype == "bf16"
    args.factory = args.factory or ("attnbench_contenders.window:" + {
        "f32": "contenders_by_pass", "bf16": "bf16_contenders_by_pass", "q8_0": "q8_0_contenders_by_pass"}[args.dtype])

    capi, blas = Capi(args.lib), OpenBlas()
    forward, reps, min_time, budget = capi.preset(args.preset, args.threads)
    if bf16:
        points = [dict(p, **{"pass": "forward", "dtype": "bf16"}) for p in forward]
    elif args.dtype == "q8_0":
        points = [dict(p, dtype="q8_0") for p in further_points(capi, args.preset, forward) if p["pass"] == "decode"]
    else:
        points = [dict(p, **{"pass": "forward"}) for p in forward] + further_points(capi, args.preset, forward)
    module, function = args.factory.split(":")
    by_pass = getattr(importlib.import_module(module), function)(capi, blas)
    keep = re.compile(args.filter) if args.filter else None
    context = {
        "date": datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds"),
        "host_name": socket.gethostname(), "executable": " ".join([sys.executable] + sys.argv),
        "num_cpus": os.cpu_count(), "attnbench_window": "python" if args.dtype == "f32" else f"python {args.dtype}",
        "dtype": args.dtype, "attnbench_preset": args.preset,
        "threads_all": str(args.threads), "cpu_model": cpu_model(), "python_version": platform.python_version(),
        "numpy_version": np.__version__, "torch_version": torch.__version__ if torch is not None else "missing",
        "openvino_version": openvino.get_version() if openvino is not None else "missing",
        "onnxruntime_version": onnxruntime.__version__ if onnxruntime is not None else "missing",
        "ggml_version": ggml.version(), "onednn_version": onednn_graph.version(),
        "torch_blas": torch_blas(),
        "openblas_corename": blas.corename(), "openblas_config": blas.config(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""),
        "interleaving": "per point, rounds of every contender in a shuffled order, one repetition each",
        "isolation": "every point in a worker process, kept while healthy; a crash or hang fails that point",
        **capi.build(),
    }
    for c in [c for pass_contenders in by_pass.values() for c in pass_contenders]:
        context.setdefault(f"contender {c.name}", json.dumps(c.description))  # a pass's own (decode's GQA)
    benchmarks = []
    start = time.perf_counter()
    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    worker = Isolated(args.factory, args.lib)
    for i, p in enumerate(points):
        names = [c.name for c in by_pass.get(p["pass"], []) if keep is None or keep.search(point_name(c.name, p))]
        if not names:
            continue
        log(f"[{i + 1}/{len(points)}] {p['pass']} n {p['n']} d {p['d']} threads {p['threads']} causal "
            f"{int(p['causal'])} ... {time.perf_counter() - start:.0f} s elapsed")
        # A point's time: its checks, then per contender a warm-up and reps calls within the budget.
        timeout = args.point_timeout or 120 + 4 * reps * len(names) * max(budget, min_time)
        benchmarks += worker.run(p, names, reps, min_time, budget, 13 + i, timeout, log, error_entry, point_name)
    worker.close()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"context": context, "benchmarks": benchmarks}, indent=1) + "\n")
    log(f"contenders.py: {len(benchmarks)} entries in {out}, {time.perf_counter() - start:.0f} s")
    return 0
