#!/usr/bin/python3
"""End-to-end tests of the `attnbench` binary on .npy files written by numpy.

Usage: cli_test.py PATH/TO/attnbench   (ctest passes the built binary)
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
    check("list header", header.split() == ["kernel", "backward", "status"], header)
    kernels = [line.split()[0] for line in rows if "unavailable" not in line]
    check("list has scalar kernels", {"naive/scalar", "tiled/scalar"} <= set(kernels), listing.stdout)
    has_backward = {line.split()[0]: line.split()[1] for line in rows}
    check("list backward column", set(has_backward.values()) <= {"yes", "no"}, listing.stdout)
    check("scalar kernels have a backward",
          has_backward.get("naive/scalar") == has_backward.get("tiled/scalar") == "yes", listing.stdout)
    backward_kernels = [k for k in kernels if has_backward[k] == "yes"]
    forward_only = [k for k in kernels if has_backward[k] == "no"]

    shapes = {  # Q shape, K/V shape
        "2d": ((33, 16), (47, 16)),
        "3d gqa": ((4, 20, 8), (2, 20, 8)),
        "4d": ((2, 3, 9, 5), (2, 3, 12, 5)),
    }
    for label, (q_shape, kv_shape) in shapes.items():
        q = rng.standard_normal(q_shape, dtype=np.float32)
        k = rng.standard_normal(kv_shape, dtype=np.float32)
        v = rng.standard_normal(kv_shape, dtype=np.float32)
        qp, kp, vp = save("q.npy", q), save("k.npy", k), save("v.npy", v)
        for kernel in kernels:
            for causal in (False, True):
                out = path("o.npy")
                args = ["run", "--q", qp, "--k", kp, "--v", vp, "--out", out, "--kernel", kernel,
                        "--threads", "2", "--scale", "0.3"] + (["--causal"] if causal else [])
                r = attnbench(*args)
                name = f"run {label} {kernel} causal={causal}"
                check(name, r.returncode == 0, r.stderr)
                if r.returncode != 0:
                    continue
                o = np.load(out)
                check(name + " shape", o.shape == q.shape and o.dtype == np.float32, str(o.shape))
                err = np.abs(o - reference(q, k, v, causal, 0.3)).max()
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
            for causal in (False, True):
                grads = [path(f"d{x}.npy") for x in "qkv"]
                args = ["backward", "--q", qp, "--k", kp, "--v", vp, "--do", dop, "--dq", grads[0],
                        "--dk", grads[1], "--dv", grads[2], "--kernel", kernel, "--threads", "2",
                        "--scale", "0.3"] + (["--causal"] if causal else [])
                r = attnbench(*args)
                name = f"backward {label} {kernel} causal={causal}"
                check(name, r.returncode == 0, r.stderr)
                if r.returncode != 0:
                    continue
                want = reference_backward(q, k, v, d_o, causal, 0.3)
                for grad, expected, shape in zip(grads, want, (q.shape, k.shape, v.shape)):
                    got = np.load(grad)
                    what = f"{name} {os.path.basename(grad)}"
                    check(what + " shape", got.shape == shape and got.dtype == np.float32, str(got.shape))
                    # float32 against float64, errors relative to the gradient's own size
                    err = np.abs(got - expected).max() / (1 + np.abs(expected).max())
                    check(what + " matches numpy", err < 1e-4, f"max error {err}")
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

# --- demos (src/demo/): every demo runs, prints its name and writes its numbers as JSON ------
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
