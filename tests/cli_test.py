#!/usr/bin/env python3
"""End-to-end tests of the `attnbench` binary on .npy files written by numpy.

Usage: .venv/bin/python tests/cli_test.py PATH/TO/attnbench   (ctest passes the built binary)
Every bad input must give exit code 2, one line on stderr naming what and where, and no output
file. Good inputs must match a float64 numpy reference (`run`: the forward, `backward`: the
gradients).
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

# tests/numpy_reference.py, beside this file
from numpy_reference import attention as reference, attention_backward as reference_backward

BINARY = sys.argv[1]
failures = []
passed = 0


def attnbench(*args):
    return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=120)


def check(name, condition, detail=""):
    global passed
    if condition:
        passed += 1
    else:
        failures.append(f"{name}: {detail}")
        print(f"FAIL {name}: {detail}")


def stored(x, kv_dtype):
    """x as --kv-dtype stores it, read back: float16 by numpy's rounding (to nearest even), bfloat16
    as the top 16 bits of the float32 rounded to nearest even (NaN-free inputs)."""
    if kv_dtype == "f16":
        return x.astype(np.float16).astype(np.float32)
    if kv_dtype == "bf16":
        u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
        return (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)
    return x


# Unit roundoff of each storage type: half the spacing of its significand (11 and 8 bits).
UNIT_ROUNDOFF = {"f16": 2.0**-11, "bf16": 2.0**-8}


def kv_rounding_bound(q, k, v, scale, kv_dtype):
    """How far storing K and V as kv_dtype may move each output element of query row i (arrays
    (h, n, d), grouped-query heads allowed). Each stored element is off by at most u of itself, so
    a score moves by at most d_i = u sigma_i, sigma_i = |scale| max_j sum_c |q_ic k_jc|; a weight
    p_j = e^{s_j} / sum e^{s_l} then moves by a factor within e^{-2 d_i}..e^{2 d_i}, so the weights
    move V's mix by at most Vmax (e^{2 d_i} - 1), and V's own rounding adds u Vmax. Both outputs
    also carry float32's error, each under the tests' bound u32 Vmax (2 (d + 4) sigma_i + 2 n + 32)
    (docs/testing.md), u32 = 2^-24; with a float16 subnormal's absolute error (2^-25) far below."""
    u = UNIT_ROUNDOFF[kv_dtype]
    group = q.shape[0] // k.shape[0]
    kk = np.repeat(np.abs(k.astype(np.float64)), group, axis=0)
    sigma = abs(scale) * np.einsum("hic,hjc->hij", np.abs(q.astype(np.float64)), kk).max(axis=2)
    vmax = np.abs(v.astype(np.float64)).max()
    d, n = q.shape[-1], k.shape[-2]
    float32 = 2.0**-24 * vmax * (2 * (d + 4) * sigma + 2 * n + 32)
    return (vmax * (u + np.expm1(2 * u * sigma)) + 2 * float32)[..., None]


def expect_bad_input(name, args, *words, out=None):
    r = attnbench(*args)
    lines = r.stderr.strip().splitlines()
    check(name + " exit", r.returncode == 2, f"exit {r.returncode}, stderr {r.stderr!r}")
    check(name + " one line", len(lines) == 1, f"stderr {r.stderr!r}")
    for w in words:
        check(name + f" names {w!r}", w in r.stderr, f"stderr {r.stderr!r}")
    if out is not None:
        check(name + " no output", not os.path.exists(out), f"{out} exists")
        leftovers = [f for f in os.listdir(os.path.dirname(out)) if ".tmp" in f]
        check(name + " no temporary", not leftovers, str(leftovers))


with tempfile.TemporaryDirectory() as tmp:
    rng = np.random.default_rng(0)

    def path(name):
        return os.path.join(tmp, name)

    def save(name, array):
        np.save(path(name), array)
        return path(name)

    # --- good inputs, every kernel, every accepted rank --------------------------------------
    listing = attnbench("list")
    check("list exit", listing.returncode == 0, listing.stderr)
    header, *rows = listing.stdout.splitlines()
    check("list header", header.split() == ["kernel", "backward", "kv-dtype", "status"], header)
    kernels = [line.split()[0] for line in rows if "unavailable" not in line]
    check("list has scalar kernels", {"naive/scalar", "tiled/scalar"} <= set(kernels), listing.stdout)
    has_backward = {line.split()[0]: line.split()[1] for line in rows}
    check("list backward column", set(has_backward.values()) <= {"yes", "no"}, listing.stdout)
    check("scalar kernels have a backward",
          has_backward.get("naive/scalar") == has_backward.get("tiled/scalar") == "yes", listing.stdout)
    backward_kernels = [k for k in kernels if has_backward[k] == "yes"]
    forward_only = [k for k in kernels if has_backward[k] == "no"]
    # Kernel::stores: the SIMD kernels take every --kv-dtype, the bf16-products kernels bf16, the
    # others f32 only.
    kv_dtypes = {line.split()[0]: line.split()[2] for line in rows}

    def stored_types(name):
        if "-bf16" in name:
            return "bf16"
        if name.startswith("tiled/simd"):
            return "f32,f16,bf16,q8_0,q4_0"
        return "f32,f16,bf16" if name.startswith("naive/simd") else "f32"
    check("list kv-dtype column", all(types == stored_types(name) for name, types in kv_dtypes.items()),
          listing.stdout)
    stores_16 = [k for k in kernels if kv_dtypes[k].startswith("f32,f16,bf16")]
    f32_only = [k for k in kernels if kv_dtypes[k] == "f32"]
    check("list: kernels of both kinds", stores_16 and f32_only, listing.stdout)

    shapes = {  # Q shape, K/V shape
        "2d": ((33, 16), (47, 16)),
        "3d gqa": ((4, 20, 8), (2, 20, 8)),
        "4d": ((2, 3, 9, 5), (2, 3, 12, 5)),
    }
    # mask flags and the reference's arguments: none, causal, a top-left causal window, local
    # and a soft-cap and ALiBi: (causal, window, alignment, softcap, alibi)
    masks = [([], (False, None, "bottom_right", None, False)),
             (["--causal"], (True, None, "bottom_right", None, False)),
             (["--causal", "--alignment", "top_left", "--window", "5"], (True, 5, "top_left", None, False)),
             (["--window", "6", "--window-right", "2"], (False, (6, 2), "bottom_right", None, False)),
             (["--causal", "--softcap", "0.5"], (True, None, "bottom_right", 0.5, False)),
             (["--alibi", "--alignment", "top_left"], (False, None, "top_left", None, True))]

    def slopes(q):
        """The paper's ALiBi slopes for q's heads (1 for an (n, d) array), as --alibi takes them."""
        heads = q.shape[-3] if q.ndim >= 3 else 1

        def powers(n):
            return [2 ** (-8 * (h + 1) / n) for h in range(n)]
        closest = 1 << (heads.bit_length() - 1)
        return (powers(closest) + powers(2 * closest)[0::2])[:heads]
    for label, (q_shape, kv_shape) in shapes.items():
        q = rng.standard_normal(q_shape, dtype=np.float32)
        k = rng.standard_normal(kv_shape, dtype=np.float32)
        v = rng.standard_normal(kv_shape, dtype=np.float32)
        qp, kp, vp = save("q.npy", q), save("k.npy", k), save("v.npy", v)
        for kernel in kernels:
            for flags, (causal, window, alignment, softcap, alibi) in masks:
                alibi = slopes(q) if alibi else None
                out = path("o.npy")
                args = ["run", "--q", qp, "--k", kp, "--v", vp, "--out", out, "--kernel", kernel,
                        "--threads", "2", "--scale", "0.3"] + flags
                r = attnbench(*args)
                name = f"run {label} {kernel} {' '.join(flags)}"
                check(name, r.returncode == 0, r.stderr)
                if r.returncode != 0:
                    continue
                o = np.load(out)
                check(name + " shape", o.shape == q.shape and o.dtype == np.float32, str(o.shape))
                if "-bf16" in kernel:  # bf16 products: on the rounded inputs, weights rounded too
                    err = np.abs(o - reference(*(stored(x, "bf16") for x in (q, k, v)), causal, 0.3, window,
                                               alignment, softcap, alibi)).max()
                    check(name + " matches numpy", err < 2 ** -8 * np.abs(v).max(), f"max error {err}")
                else:
                    err = np.abs(o - reference(q, k, v, causal, 0.3, window, alignment, softcap, alibi)).max()
                    check(name + " matches numpy", err < 1e-4, f"max error {err}")
                check(name + " reports", kernel in r.stdout and "scratch" in r.stdout
                      and " ms" in r.stdout, r.stdout)
                os.remove(out)

    default = attnbench("run", "--q", qp, "--k", kp, "--v", vp, "--out", path("o.npy"))
    check("default kernel runs", default.returncode == 0 and kernels[0] in default.stdout,
          default.stdout + default.stderr)
    os.remove(path("o.npy"))

    # --- backward: every kernel with a backward pass, every rank, GQA, fully masked rows ------
    backward_shapes = dict(shapes, **{"2d more queries than keys": ((12, 8), (5, 8))})
    for label, (q_shape, kv_shape) in backward_shapes.items():
        q = rng.standard_normal(q_shape, dtype=np.float32)
        k = rng.standard_normal(kv_shape, dtype=np.float32)
        v = rng.standard_normal(kv_shape, dtype=np.float32)
        d_o = rng.standard_normal(q_shape, dtype=np.float32)
        qp, kp, vp, dop = save("q.npy", q), save("k.npy", k), save("v.npy", v), save("do.npy", d_o)
        for kernel in backward_kernels:
            for flags, (causal, window, alignment, softcap, alibi) in masks:
                alibi = slopes(q) if alibi else None
                grads = [path(f"d{x}.npy") for x in "qkv"]
                args = ["backward", "--q", qp, "--k", kp, "--v", vp, "--do", dop, "--dq", grads[0],
                        "--dk", grads[1], "--dv", grads[2], "--kernel", kernel, "--threads", "2",
                        "--scale", "0.3"] + flags
                r = attnbench(*args)
                name = f"backward {label} {kernel} {' '.join(flags)}"
                check(name, r.returncode == 0, r.stderr)
                if r.returncode != 0:
                    continue
                want = reference_backward(q, k, v, d_o, causal, 0.3, window, alignment, softcap, alibi)
                for grad, expected, shape in zip(grads, want, (q.shape, k.shape, v.shape)):
                    got = np.load(grad)
                    what = f"{name} {os.path.basename(grad)}"
                    check(what + " shape", got.shape == shape and got.dtype == np.float32, str(got.shape))
                    # float32 against float64, errors relative to the gradient's own size (bf16
                    # products: inputs, P and dS rounded to 8 significant bits)
                    err = np.abs(got - expected).max() / (1 + np.abs(expected).max())
                    check(what + " matches numpy", err < (2 ** -5 if "-bf16" in kernel else 1e-4),
                          f"max error {err}")
                    os.remove(grad)
                check(name + " reports", kernel in r.stdout and "forward" in r.stdout
                      and "backward" in r.stdout and r.stdout.count("scratch") == 2, r.stdout)
        if label == "2d more queries than keys" and backward_kernels:
            # Rows 0..6 see no key under the causal mask: their dQ is zero, never NaN.
            grads = [path(f"d{x}.npy") for x in "qkv"]
            attnbench("backward", "--q", qp, "--k", kp, "--v", vp, "--do", dop, "--dq", grads[0], "--dk",
                      grads[1], "--dv", grads[2], "--kernel", backward_kernels[0], "--causal")
            dq = np.load(grads[0])
            check("backward fully masked rows are zero", np.all(dq[:7] == 0) and np.isfinite(dq).all(),
                  str(dq[:7]))
            for grad in grads:
                os.remove(grad)

    grads = [path(f"d{x}.npy") for x in "qkv"]
    default = attnbench("backward", "--q", qp, "--k", kp, "--v", vp, "--do", dop, "--dq", grads[0],
                        "--dk", grads[1], "--dv", grads[2])
    first_backward = next((k for k in kernels if has_backward[k] == "yes"), None)
    ran = default.stdout.split(",")[0]  # "kernel NAME", the concrete kernel a dispatching one runs
    check("backward default kernel: the first with a backward", default.returncode == 0
          and first_backward is not None
          and (ran == f"kernel {first_backward}" or ran.startswith(f"kernel {first_backward}/")),
          default.stdout + default.stderr)
    for grad in grads:
        if os.path.exists(grad):
            os.remove(grad)

    # --- --mask: a bool padding mask and a float32 bias (with -inf), forward and backward -------
    q = rng.standard_normal((2, 3, 9, 5), dtype=np.float32)
    k = rng.standard_normal((2, 3, 12, 5), dtype=np.float32)
    v = rng.standard_normal((2, 3, 12, 5), dtype=np.float32)
    d_o = rng.standard_normal((2, 3, 9, 5), dtype=np.float32)
    padding = np.ones((2, 1, 1, 12), dtype=bool)
    padding[1, ..., 9:] = False
    bias = rng.normal(0, 2, (3, 9, 12)).astype(np.float32)
    bias[:, 2, :] = -np.inf  # a row the mask leaves no key: zeros
    qp, kp, vp, dop = save("m_q.npy", q), save("m_k.npy", k), save("m_v.npy", v), save("m_do.npy", d_o)
    for label, mask in (("bool", padding), ("float32", bias)):
        mp, out = save(f"mask_{label}.npy", mask), path("m_o.npy")
        r = attnbench("run", "--q", qp, "--k", kp, "--v", vp, "--out", out, "--mask", mp, "--causal")
        check(f"run --mask {label}", r.returncode == 0 and f"mask {label}" in r.stdout, r.stdout + r.stderr)
        if r.returncode == 0:
            err = np.abs(np.load(out) - reference(q, k, v, True, None, mask=mask)).max()
            check(f"run --mask {label} matches numpy", err < 1e-5, f"max error {err}")
        grads = [path(f"m_d{x}.npy") for x in "qkv"]
        r = attnbench("backward", "--q", qp, "--k", kp, "--v", vp, "--do", dop, "--dq", grads[0], "--dk",
                      grads[1], "--dv", grads[2], "--mask", mp)
        check(f"backward --mask {label}", r.returncode == 0, r.stderr)
        if r.returncode == 0:
            for grad, expected in zip(grads, reference_backward(q, k, v, d_o, False, None, mask=mask)):
                err = np.abs(np.load(grad) - expected).max() / (1 + np.abs(expected).max())
                check(f"backward --mask {label} {os.path.basename(grad)} matches numpy", err < 1e-5,
                      f"max error {err}")
    expect_bad_input("--mask float64", ["run", "--q", qp, "--k", kp, "--v", vp, "--out", path("m_o2.npy"),
                                        "--mask", save("mask_f8.npy", bias.astype(np.float64))],
                     "mask_f8.npy", "'<f8'", "the mask must be float32 ('<f4') or bool ('|b1')",
                     out=path("m_o2.npy"))
    expect_bad_input("--mask of the wrong shape", ["run", "--q", qp, "--k", kp, "--v", vp, "--out",
                                                   path("m_o2.npy"), "--mask", save("mask_s.npy", bias[:2])],
                     "--mask", "(2, 9, 12)", "does not broadcast to (batch, q_heads, q_len, kv_len) = (2, 3, 9, 12)",
                     out=path("m_o2.npy"))

    # --- K and V: float16 .npy files, --kv-dtype f16 and bf16 --------------------------------
    # Grouped-query heads, and scores large enough (scale 0.6) that rounding K moves the weights.
    q = rng.standard_normal((4, 21, 16), dtype=np.float32)
    k16 = rng.standard_normal((2, 37, 16)).astype(np.float16)
    v16 = rng.standard_normal((2, 37, 16)).astype(np.float16)
    k32, v32 = k16.astype(np.float32), v16.astype(np.float32)
    qp = save("kv_q.npy", q)
    k16p, v16p, k32p, v32p = (save(f"kv_{n}.npy", a) for n, a in
                              (("k16", k16), ("v16", v16), ("k32", k32), ("v32", v32)))

    def run_kv(kernel, k_file, v_file, *extra, q_file=None):
        out_file = path("kv_o.npy")
        r = attnbench("run", "--q", q_file or qp, "--k", k_file, "--v", v_file, "--out", out_file, "--kernel",
                      kernel, "--threads", "2", "--scale", "0.6", *extra)
        o = np.load(out_file) if r.returncode == 0 else None
        if o is not None:
            os.remove(out_file)
        return r, o

    # The reader widens float16 exactly: every kernel gives the float32 file's output, bit for bit.
    for kernel in kernels:
        (r16, o16), (r32, o32) = run_kv(kernel, k16p, v16p), run_kv(kernel, k32p, v32p)
        check(f"f16 .npy K V {kernel} runs", r16.returncode == 0 and r32.returncode == 0,
              r16.stderr + r32.stderr)
        if o16 is not None and o32 is not None:
            check(f"f16 .npy K V {kernel} = f32 bitwise", o16.tobytes() == o32.tobytes(),
                  f"max difference {np.abs(o16 - o32).max()}")

    # bfloat16 .npy files (np.save of ml_dtypes.bfloat16 arrays, descr '<V2') for Q, K and V, read
    # exactly: the float32 files of the same values give the same output, bit for bit; --out-dtype bf16
    # writes that output rounded to nearest even, as ml_dtypes rounds it.
    import ml_dtypes
    bf = [x.astype(np.float32).astype(ml_dtypes.bfloat16) for x in (q, k16, v16)]
    bf_files = [save(f"bf_{i}.npy", a) for i, a in enumerate(bf)]
    wide_files = [save(f"bf_{i}_32.npy", a.astype(np.float32)) for i, a in enumerate(bf)]
    for kernel in ("tiled/simd", "tiled/scalar"):
        (rb, ob), (rw, ow), (rr, orr) = (run_kv(kernel, f[1], f[2], *extra, q_file=f[0]) for f, extra in
                                         ((bf_files, ()), (wide_files, ()), (bf_files, ("--out-dtype", "bf16"))))
        check(f"bf16 .npy {kernel} runs", rb.returncode == rw.returncode == rr.returncode == 0,
              rb.stderr + rw.stderr + rr.stderr)
        if ob is not None and ow is not None and orr is not None:
            check(f"bf16 .npy {kernel} = f32 bitwise", ob.tobytes() == ow.tobytes())
            check(f"--out-dtype bf16 {kernel}: '<V2', rounded as ml_dtypes", orr.dtype.str == "|V2"
                  and orr.shape == q.shape and orr.view(ml_dtypes.bfloat16).tobytes()
                  == ow.astype(ml_dtypes.bfloat16).tobytes())

    # --kv-dtype on float32 K and V that no 16-bit type holds exactly.
    k = rng.standard_normal((2, 37, 16), dtype=np.float32)
    v = rng.standard_normal((2, 37, 16), dtype=np.float32)
    kp, vp = save("kv_k.npy", k), save("kv_v.npy", v)
    for kernel in stores_16:
        _, o32 = run_kv(kernel, kp, vp)
        for kv_dtype in ("f16", "bf16"):
            name = f"--kv-dtype {kv_dtype} {kernel}"
            r, o = run_kv(kernel, kp, vp, "--kv-dtype", kv_dtype)
            check(name + " runs", r.returncode == 0 and f"K/V stored as {kv_dtype}" in r.stdout,
                  r.stdout + r.stderr)
            if o is None or o32 is None:
                continue
            excess = np.abs(o - o32) / kv_rounding_bound(q, k, v, 0.6, kv_dtype)
            check(name + " within the rounding bound of f32", excess.max() <= 1,
                  f"worst |o - o_f32| / bound {excess.max()}")
            check(name + " differs from f32 (K and V were rounded)", np.any(o != o32))
            # What it computes: float32 attention on K and V rounded to the type.
            err = np.abs(o - reference(q, stored(k, kv_dtype), stored(v, kv_dtype), False, 0.6)).max()
            check(name + " = numpy on rounded K, V", err < 1e-4, f"max error {err}")
        # Halves stored as halves change nothing.
        (_, o16), (_, o16_f16) = run_kv(kernel, k16p, v16p), run_kv(kernel, k16p, v16p, "--kv-dtype", "f16")
        check(f"f16 .npy K V {kernel} --kv-dtype f16 = f32 bitwise",
              o16 is not None and o16_f16 is not None and o16.tobytes() == o16_f16.tobytes())

    # The quantised types (tiled/simd only): close to f32, not equal; a NaN has no block scale.
    for kv_dtype, tolerance in (("q8_0", 0.1), ("q4_0", 1.5)):  # exact: test_kv_cache.py
        r, o = run_kv("tiled/simd", kp, vp, "--kv-dtype", kv_dtype)
        _, o32 = run_kv("tiled/simd", kp, vp)
        check(f"--kv-dtype {kv_dtype} runs", r.returncode == 0 and f"K/V stored as {kv_dtype}" in r.stdout,
              r.stdout + r.stderr)
        if o is not None and o32 is not None:
            worst = np.abs(o - o32).max()
            check(f"--kv-dtype {kv_dtype} near f32, not equal", 0 < worst < tolerance, f"max difference {worst}")
    # --quantise-query: Q rounded to q8_0 too; near the q8_0 run, not equal; needs a quantised K.
    r, oq = run_kv("tiled/simd", kp, vp, "--kv-dtype", "q8_0", "--quantise-query")
    _, o8 = run_kv("tiled/simd", kp, vp, "--kv-dtype", "q8_0")
    check("--quantise-query runs", r.returncode == 0, r.stdout + r.stderr)
    if oq is not None and o8 is not None:
        worst = np.abs(oq - o8).max()
        check("--quantise-query near q8_0, not equal", 0 < worst < 0.1, f"max difference {worst}")
    expect_bad_input("--quantise-query without a quantised K",
                     ["run", "--q", qp, "--k", kp, "--v", vp, "--kv-dtype", "f16", "--quantise-query",
                      "--out", path("kv_q.npy")], "--quantise-query: needs --kv-dtype q8_0 or q4_0")
    nan_k = k.copy()
    nan_k[0, 2, 3] = np.nan
    expect_bad_input("--kv-dtype q8_0 NaN", ["run", "--q", qp, "--k", save("kv_nan.npy", nan_k), "--v", vp,
                                             "--kernel", "tiled/simd", "--kv-dtype", "q8_0", "--out", path("kv_q.npy")],
                     "kv_nan.npy: element [0, 2, 3] = nan: --kv-dtype q8_0 stores finite values only")
    expect_bad_input("--kv-dtype q8_0 on naive/simd", ["run", "--q", qp, "--k", kp, "--v", vp,
                                                       "--kernel", "naive/simd", "--kv-dtype", "q8_0", "--out", path("kv_q.npy")],
                     "q8_0")

    # A finite value the type would make infinite: the file, the index and the value, nothing
    # written. 65519.996 (the float below 65520) rounds to float16's largest, 65504; 65520 does not.
    big = k.copy()
    big[1, 30, 7] = 70000
    bigp = save("kv_big.npy", big)
    kv_out = path("kv_never.npy")

    def run_kv_args(k_file, v_file, *extra):
        return ["run", "--q", qp, "--k", k_file, "--v", v_file, "--out", kv_out, *extra]

    expect_bad_input("--kv-dtype f16 overflow", run_kv_args(bigp, vp, "--kv-dtype", "f16"),
                     "kv_big.npy: element [1, 30, 7] = 70000 is finite, but --kv-dtype f16 would "
                     "store it as an infinity (the largest f16 is 65504)", out=kv_out)
    r, o = run_kv(stores_16[0], bigp, vp, "--kv-dtype", "bf16")
    check("--kv-dtype bf16 holds 70000", r.returncode == 0 and np.isfinite(o).all(), r.stderr)
    edge = v.copy()
    edge[0, 0, 0] = np.nextafter(np.float32(65520), np.float32(0))
    r, o = run_kv(stores_16[0], kp, save("kv_edge.npy", edge), "--kv-dtype", "f16")
    check("--kv-dtype f16 holds 65519.996", r.returncode == 0 and np.isfinite(o).all(), r.stderr)
    edge[0, 0, 0] = -65520
    expect_bad_input("--kv-dtype f16 overflow in V", run_kv_args(kp, save("kv_edge.npy", edge),
                                                                 "--kv-dtype", "f16"),
                     "kv_edge.npy: element [0, 0, 0] = -65520", out=kv_out)
    edge[0, 0, 0] = 3.4e38
    expect_bad_input("--kv-dtype bf16 overflow", run_kv_args(kp, save("kv_edge.npy", edge),
                                                             "--kv-dtype", "bf16"),
                     "kv_edge.npy: element [0, 0, 0] = 3.39999995e+38", "--kv-dtype bf16",
                     "3.38953139e+38", out=kv_out)
    # A kernel that stores K and V as f32 only; an unknown type; dtypes the reader refuses.
    for kernel in f32_only:
        expect_bad_input(f"--kv-dtype f16 {kernel}", run_kv_args(kp, vp, "--kv-dtype", "f16",
                                                                 "--kernel", kernel),
                         f"--kv-dtype f16: kernel {kernel} stores K and V as f32 only", out=kv_out)
    expect_bad_input("--kv-dtype unknown", run_kv_args(kp, vp, "--kv-dtype", "f8"), "--kv-dtype",
                     "f8", out=kv_out)
    k8 = save("kv_k8.npy", k.astype(np.float64))
    expect_bad_input("K float64", run_kv_args(k8, vp), "kv_k8.npy: dtype '<f8' is not supported: "
                     "K and V must be float32 ('<f4'), float16 ('<f2') or bfloat16 ('<V2'", out=kv_out)
    expect_bad_input("V big-endian float16", run_kv_args(kp, save("kv_v_be.npy", v16.astype(">f2"))),
                     "kv_v_be.npy: dtype '>f2' is not supported: big-endian", out=kv_out)
    q16 = save("kv_q16.npy", q.astype(np.float16))
    expect_bad_input("Q float16", ["run", "--q", q16, "--k", kp, "--v", vp, "--out", kv_out],
                     "kv_q16.npy: dtype '<f2' is not supported: Q must be float32 ('<f4')", out=kv_out)

    # backward: float16 .npy K and V read exactly (the same gradients as the float32 files);
    # --kv-dtype f32 only; dO float32 only.
    d_o = save("kv_do.npy", rng.standard_normal(q.shape, dtype=np.float32))
    kv_grads = [path(f"kv_d{x}.npy") for x in "qkv"]

    def backward_kv(k_file, v_file, *extra, d_o=d_o):
        return ["backward", "--q", qp, "--k", k_file, "--v", v_file, "--do", d_o, "--dq", kv_grads[0],
                "--dk", kv_grads[1], "--dv", kv_grads[2], "--threads", "2", *extra]

    def gradients(args):
        r = attnbench(*args)
        got = [np.load(g) for g in kv_grads] if r.returncode == 0 else None
        for g in kv_grads:
            if os.path.exists(g):
                os.remove(g)
        return r, got

    for kernel in backward_kernels:
        (r16, g16), (r32, g32) = (gradients(backward_kv(k16p, v16p, "--kernel", kernel)),
                                  gradients(backward_kv(k32p, v32p, "--kernel", kernel)))
        check(f"backward f16 .npy K V {kernel} = f32 bitwise", g16 is not None and g32 is not None
              and all(a.tobytes() == b.tobytes() for a, b in zip(g16, g32)), r16.stderr + r32.stderr)
    r, _ = gradients(backward_kv(kp, vp, "--kv-dtype", "f32"))
    check("backward --kv-dtype f32", r.returncode == 0, r.stderr)
    for kv_dtype in ("f16", "bf16"):
        expect_bad_input(f"backward --kv-dtype {kv_dtype}", backward_kv(kp, vp, "--kv-dtype", kv_dtype),
                         f"--kv-dtype {kv_dtype}: the backward pass stores K and V as f32 only")
        check(f"backward --kv-dtype {kv_dtype} writes nothing", not any(map(os.path.exists, kv_grads)))
    expect_bad_input("backward dO float16", backward_kv(kp, vp, d_o=q16),
                     "kv_q16.npy: dtype '<f2' is not supported: dO must be float32 ('<f4')")

    # --- bad inputs ------------------------------------------------------------------------
    good_q = save("good_q.npy", rng.standard_normal((6, 8), dtype=np.float32))
    good_kv = save("good_kv.npy", rng.standard_normal((5, 8), dtype=np.float32))
    out = path("never.npy")

    def run_with(q=good_q, k=good_kv, v=good_kv, *extra):
        return ["run", "--q", q, "--k", k, "--v", v, "--out", out, *extra]

    expect_bad_input("missing file", run_with(q=path("nope.npy")), "nope.npy", out=out)
    bad_header = path("bad_header.npy")
    with open(bad_header, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00\x10\x00{'descr': <f4'}\n" + b"\0" * 64)
    expect_bad_input("bad header", run_with(q=bad_header), "bad_header.npy", out=out)
    not_npy = path("not_npy.npy")
    with open(not_npy, "w") as f:
        f.write("hello, world\n")
    expect_bad_input("not npy", run_with(q=not_npy), "not_npy.npy", out=out)
    truncated = path("truncated.npy")
    with open(good_q, "rb") as f:
        data = f.read()
    with open(truncated, "wb") as f:
        f.write(data[:-7])
    expect_bad_input("truncated", run_with(q=truncated), "truncated.npy", "truncated", out=out)
    f64 = save("f64.npy", np.zeros((6, 8), np.float64))
    expect_bad_input("float64", run_with(q=f64), "f64.npy", "<f8", out=out)
    i32 = save("i32.npy", np.zeros((6, 8), np.int32))
    expect_bad_input("int32", run_with(k=i32), "i32.npy", "<i4", out=out)
    big_endian = save("big.npy", np.zeros((6, 8), ">f4"))
    expect_bad_input("big endian", run_with(v=big_endian), "big.npy", "big-endian", out=out)
    fortran = save("fortran.npy", np.asfortranarray(np.zeros((6, 8), np.float32)))
    expect_bad_input("fortran", run_with(q=fortran), "fortran.npy", "Fortran", out=out)
    one_d = save("one_d.npy", np.zeros(8, np.float32))
    expect_bad_input("1-d", run_with(q=one_d), "one_d.npy", "(8,)", out=out)
    other_d = save("other_d.npy", np.zeros((5, 7), np.float32))
    expect_bad_input("head dim mismatch", run_with(k=other_d, v=other_d), "head dim", "7", "8",
                     out=out)
    expect_bad_input("k v mismatch", run_with(v=save("v6.npy", np.zeros((6, 8), np.float32))),
                     "v6.npy", "(6, 8)", "(5, 8)", out=out)
    q3 = save("q3.npy", np.zeros((3, 6, 8), np.float32))
    kv2 = save("kv2.npy", np.zeros((2, 5, 8), np.float32))
    expect_bad_input("heads not divisible", run_with(q=q3, k=kv2, v=kv2), "heads", "2", "3",
                     out=out)
    expect_bad_input("rank mismatch", run_with(q=q3), "dimensions", out=out)
    expect_bad_input("unknown kernel", run_with(good_q, good_kv, good_kv, "--kernel", "fast/magic"),
                     "fast/magic", out=out)
    expect_bad_input("unknown option", run_with(good_q, good_kv, good_kv, "--colour"), "--colour",
                     out=out)
    expect_bad_input("bad threads", run_with(good_q, good_kv, good_kv, "--threads", "-3"),
                     "threads", out=out)
    expect_bad_input("bad scale", run_with(good_q, good_kv, good_kv, "--scale", "nan"), "scale",
                     out=out)
    expect_bad_input("over budget", run_with(good_q, good_kv, good_kv, "--kernel", "naive/scalar",
                                             "--memory-budget", "100"),
                     "memory_budget", "120", out=out)
    expect_bad_input("output directory missing",
                     ["run", "--q", good_q, "--k", good_kv, "--v", good_kv, "--out",
                      path("no/such/dir/o.npy")], "no/such/dir")
    expect_bad_input("missing argument", ["run", "--q", good_q], "--k")
    expect_bad_input("no subcommand", [], "subcommand")

    # backward: the run's checks on Q, K and V, and its own on dO, the kernel and the outputs;
    # a failing call writes none of the three gradients and leaves no temporary.
    good_do = save("good_do.npy", rng.standard_normal((6, 8), dtype=np.float32))
    never = [path(f"never_d{x}.npy") for x in "qkv"]

    def backward_with(q=good_q, k=good_kv, v=good_kv, d_o=good_do, *extra, outputs=never):
        return ["backward", "--q", q, "--k", k, "--v", v, "--do", d_o, "--dq", outputs[0], "--dk",
                outputs[1], "--dv", outputs[2], *extra]

    def expect_bad_backward(name, args, *words):
        expect_bad_input(name, args, *words)
        for out_path in never:
            check(name + " no " + os.path.basename(out_path), not os.path.exists(out_path), out_path)
        leftovers = [f for f in os.listdir(tmp) if ".tmp" in f]
        check(name + " no temporary", not leftovers, str(leftovers))

    do_wide = save("do_wide.npy", np.zeros((6, 9), np.float32))
    expect_bad_backward("backward dO shape", backward_with(d_o=do_wide), "do_wide.npy", "(6, 9)",
                        "good_q.npy", "(6, 8)")
    do_3d = save("do_3d.npy", np.zeros((1, 6, 8), np.float32))
    expect_bad_backward("backward dO rank", backward_with(d_o=do_3d), "do_3d.npy", "(1, 6, 8)", "(6, 8)")
    expect_bad_backward("backward dO missing", backward_with(d_o=path("nope_do.npy")), "nope_do.npy")
    expect_bad_backward("backward dO float64", backward_with(d_o=f64), "f64.npy", "<f8")
    expect_bad_backward("backward k v mismatch", backward_with(v=save("v6.npy", np.zeros((6, 8), np.float32))),
                        "v6.npy", "(6, 8)", "(5, 8)")
    expect_bad_backward("backward unknown kernel", backward_with(good_q, good_kv, good_kv, good_do, "--kernel",
                                                                 "fast/magic"), "fast/magic")
    for kernel in forward_only:
        expect_bad_backward(f"backward {kernel} has none",
                            backward_with(good_q, good_kv, good_kv, good_do, "--kernel", kernel),
                            kernel, "no backward pass")
    expect_bad_backward("backward bad scale", backward_with(good_q, good_kv, good_kv, good_do, "--scale", "inf"),
                        "scale")
    # The naive backward holds P and dS, their rows padded to 32 floats: 2 x 6 x 32 x 4 = 1536
    # bytes, more than 200 (the forward's 6 x 5 x 4 = 120 fits).
    expect_bad_backward("backward over budget",
                        backward_with(good_q, good_kv, good_kv, good_do, "--kernel", "naive/scalar",
                                      "--memory-budget", "200"), "memory_budget", "1536")
    expect_bad_backward("backward same output twice",
                        backward_with(outputs=[never[0], never[1], never[0]]), "--dv", "--dq")
    expect_bad_backward("backward missing --do", ["backward", "--q", good_q, "--k", good_kv, "--v", good_kv,
                                                  "--dq", never[0], "--dk", never[1], "--dv", never[2]], "--do")
    # The last output's folder is missing: the other two are not written either.
    expect_bad_backward("backward output directory missing",
                        backward_with(outputs=[never[0], never[1], path("no/such/dir/dv.npy")]), "no/such/dir")
    for out_path in never:
        with open(out_path, "wb") as f:
            f.write(b"keep me")
    attnbench(*backward_with(d_o=do_wide))
    attnbench(*backward_with(outputs=[never[0], never[1], path("no/such/dir/dv.npy")]))
    check("failed backward keeps old outputs", all(open(p, "rb").read() == b"keep me" for p in never))
    for out_path in never:
        os.remove(out_path)

    # An existing output file is left untouched by a failing run.
    with open(out, "wb") as f:
        f.write(b"keep me")
    attnbench(*run_with(q=truncated))
    with open(out, "rb") as f:
        check("failed run keeps old output", f.read() == b"keep me")

# --- demos (apps/demo/): every demo runs, prints its name and writes its numbers as JSON ------
# --quick: the copy demo's training for a few steps (its full run takes tens of seconds, minutes
# under the sanitizers; demo_test checks what it trains to).
with tempfile.TemporaryDirectory() as tmp:
    demo_names = ["softmax", "bottleneck", "alignment", "quadratic", "order", "uniform", "copy"]
    demo_json = os.path.join(tmp, "demos.json")
    r = attnbench("demo", "all", "--quick", "--json", demo_json)
    check("demo all exit", r.returncode == 0, r.stderr)
    for name in demo_names:
        check(f"demo all prints {name}", f"== {name}:" in r.stdout, r.stdout)
    if r.returncode == 0:
        with open(demo_json) as f:
            demos = json.load(f)["demos"]
        check("demo json has every demo", list(demos) == demo_names, str(list(demos)))
        check("demo json non-finite as strings",
              demos["softmax"]["naive_weights"] == ["nan"] * 3, str(demos["softmax"]))
        check("demo --quick trains the copy demo briefly",
              demos["copy"]["steps"] == 40 and [row["n"] for row in demos["copy"]["rows"]] == [3, 6],
              str(demos["copy"]))
    r = attnbench("demo", "uniform")
    check("demo one", r.returncode == 0 and "== uniform:" in r.stdout
          and "== softmax:" not in r.stdout, r.stdout + r.stderr)
    expect_bad_input("unknown demo", ["demo", "nope"], "nope", "softmax")
    expect_bad_input("demo json unwritable", ["demo", "softmax", "--json",
                                              os.path.join(tmp, "no/dir/d.json")],
                     "--json", "no/dir/d.json")

print(f"{passed} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
