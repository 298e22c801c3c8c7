#!/usr/bin/env python3
"""attnbench_bench end to end on a few points: the backward and training-step points of the matrix,
their names, counters and FLOP counts as the report's loader reads them.

Usage: PYTHONPATH=python .venv/bin/python tests/bench_test.py PATH/TO/attnbench_bench
(ctest passes the built binary and sets PYTHONPATH)
"""
import json
import math
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from attnbench_report.load import results as loader  # the report's one loader

BINARY = sys.argv[1]
failures = []


def check(name, condition, detail=""):
    if not condition:
        failures.append(f"{name}: {detail}")
        print(f"FAIL {name}: {detail}")


listing = subprocess.run([BINARY, "--preset=quick", "--benchmark_list_tests=true"], capture_output=True, text=True,
                         timeout=300)
check("list exit", listing.returncode == 0, listing.stderr[-2000:])
names = listing.stdout.split()
check("a listing measures nothing", "measuring" not in listing.stderr, listing.stderr[-500:])
check("no constants readings among points not interleaved", not [n for n in names if n.startswith("constants/")],
      str([n for n in names if n.startswith("constants/")]))
# Interleaved (as scripts/study.sh runs the matrix), the matrix takes readings of the machine constants
# among its points: the preset's count (quick: 1; full: 3), one call each.
for preset, readings in (("quick", 1), ("full", 3)):
    interleaved = subprocess.run([BINARY, f"--preset={preset}", "--benchmark_list_tests=true",
                                  "--benchmark_enable_random_interleaving=true", "--benchmark_filter=^constants/"],
                                 capture_output=True, text=True, timeout=300)
    check(f"{preset}: constants readings among the interleaved points",
          interleaved.returncode == 0 and len(interleaved.stdout.split()) == 1 and re.fullmatch(
              rf"constants/threads:\d+/iterations:1/repeats:{readings}/real_time", interleaved.stdout.strip()),
          interleaved.stdout + interleaved.stderr[-500:])
# The standard preset (scripts/study.sh --preset standard): its listing measures nothing, comes back in
# seconds, and holds the points the report's targets are read at, in every window.
standard = {}
for window in ("", "--contenders", "--decode", "--scaling", "--phases", "--context"):
    start = time.monotonic()
    listed = subprocess.run([BINARY, "--preset=standard", *([window] if window else []), "--benchmark_list_tests=true"],
                            capture_output=True, text=True, timeout=120)
    took = time.monotonic() - start
    label = f"standard {window or 'matrix'}"
    check(f"{label}: list exit", listed.returncode == 0, listed.stderr[-2000:])
    check(f"{label}: a listing measures nothing", "measuring" not in listed.stderr, listed.stderr[-500:])
    check(f"{label}: listed quickly", took < 30, f"{took:.1f} s")
    check(f"{label}: the preset named", "preset standard," in listed.stderr, listed.stderr[-500:])
    standard[window or "matrix"] = listed.stdout.split()
    check(f"{label}: points listed", standard[window or "matrix"], "none")
matrix_names = standard["matrix"]
for kernel in ("tiled/simd/avx2", "tiled/simd/avx512f"):  # the curves to n = 16384, where the CPU runs them
    if not any(n.startswith(kernel + "/") for n in names):
        continue
    for d in (64, 128):
        for threads in ("1", "2") if any("/threads:2/" in n for n in names) else ("1",):
            prefix = f"{kernel}/n:16384/d:{d}/threads:{threads}/causal:0/"
            check(f"standard registers {prefix}", any(n.startswith(prefix) for n in matrix_names), "missing")
for n in (1024, 4096):  # the backward's targets
    prefix = f"tiled/scalar/n:{n}/d:128/threads:1/causal:0/pass:backward/"
    check(f"standard registers {prefix}", any(n.startswith(prefix) for n in matrix_names), "missing")
for n in (1024, 4096, 16384):  # the contenders' comparison lengths, both head dims
    for d in (64, 128):
        check(f"standard contenders at n = {n}, d = {d}",
              any(f"/n:{n}/d:{d}/threads:1/causal:0/" in name for name in standard["--contenders"]), "missing")
check("standard decode: prefill at n = 4096", any(n.startswith("prefill/") and "/n:4096/d:128/" in n
                                                   for n in standard["--decode"]), str(standard["--decode"][:5]))
check("standard decode: one head's K/V beyond the L3 (kv 65536: 64 MiB)",
      any("/layout:head/" in n and "/kv:65536/" in n for n in standard["--decode"]), "missing")
for n in (1024, 4096):
    check(f"standard scaling at n = {n}", any(f"/n:{n}/d:128/pass:backward/" in name
                                              for name in standard["--scaling"]) or
          not any("/threads:2/" in name for name in names), str(standard["--scaling"]))
    check(f"standard phases at n = {n}", any(f"/n:{n}/d:128/" in name for name in standard["--phases"]),
          str(standard["--phases"]))
for n in (8192, 131072):  # the long-context window's flatness target, from n = 8192 to 131072 at w = 4096
    check(f"standard context at n = {n}, w = 4096", any(f"/n:{n}/d:128/w:4096/threads:1" in name
                                                        for name in standard["--context"]), "missing")
check("standard context: full causal beside it", any("/n:8192/d:128/w:full/" in name
                                                     for name in standard["--context"]), "missing")
check("the quick preset is smaller", len(names) < len(matrix_names), f"{len(names)} against {len(matrix_names)}")
unknown = subprocess.run([BINARY, "--preset=medium", "--benchmark_list_tests=true"], capture_output=True, text=True,
                         timeout=60)
check("an unknown preset is refused, the three named", unknown.returncode == 2 and
      "quick, standard or full" in unknown.stderr, unknown.stderr[-500:])

backward_names = [n for n in names if "/pass:" in n]
check("quick preset has backward points", backward_names, "none")
for kernel in ("tiled/scalar", "naive/scalar"):
    for d in (64, 128):
        for threads in ("1", "2"):
            for pass_ in ("backward", "forward+backward"):
                prefix = f"{kernel}/n:512/d:{d}/threads:{threads}/causal:0/pass:{pass_}/"
                check(f"registered {prefix}", any(n.startswith(prefix) for n in names), "missing")
check("no backward point of a kernel without a backward",
      not [n for n in backward_names if n.startswith("naive/openblas/")], str(backward_names[:3]))
# A backward point sits right after its forward twin (the report divides their times).
for i, name in enumerate(names):
    if "/pass:backward/" in name:
        twin = name.split("/pass:")[0]
        check(f"{name} follows its forward twin", names[i - 1].startswith(twin + "/") and "/pass:" not in names[i - 1],
              names[i - 1])

with tempfile.TemporaryDirectory() as tmp:
    out = Path(tmp) / "results.json"
    run = subprocess.run([BINARY, "--preset=quick", "--benchmark_filter=^tiled/scalar/n:128/d:64/threads:1/causal:0",
                          "--benchmark_report_aggregates_only=true", f"--benchmark_out={out}",
                          "--benchmark_out_format=json"], capture_output=True, text=True, timeout=300)
    check("run exit", run.returncode == 0, run.stderr[-2000:])
    context = json.loads(out.read_text())["context"]
    check("context names the check's shape", context.get("backward_check_shape") == "97x203", str(context)[:200])
    # Provenance (bench/run_context.cpp): the version, the commit the build was made from, the compiler.
    check("context has the version", re.fullmatch(r"\d+\.\d+\.\d+", context.get("attnbench_version", "")),
          str(context.get("attnbench_version")))
    check("context has the commit", re.fullmatch(r"[0-9a-f]{40}|unknown", context.get("git_commit", "")),
          str(context.get("git_commit")))
    check("context says whether the tree was dirty", context.get("git_dirty") in ("true", "false", "unknown"),
          str(context.get("git_dirty")))
    check("context has the compiler and flags", context.get("compiler") and context.get("cxx_flags"), str(context)[:200])
    source = Path(BINARY).resolve().parents[2]  # <source>/build/bin/attnbench_bench
    commit = context.get("git_commit", "")
    if (source / ".git").exists() and re.fullmatch(r"[0-9a-f]{40}", commit):
        # A commit of the source tree, HEAD or (when someone committed since the build) an ancestor.
        ancestor = subprocess.run(["git", "-C", str(source), "merge-base", "--is-ancestor", commit, "HEAD"],
                                  capture_output=True, text=True)
        check("the commit is the source tree's HEAD or before it", ancestor.returncode == 0,
              f"{commit}: {ancestor.stderr}")
    table = loader.load([out])
    check("three passes", table.passes() == ["forward", "backward", "forward+backward"], str(table.passes()))
    forward = table.one(pass_="forward")
    for pass_, factor in (("backward", 2.5), ("forward+backward", 3.5)):
        r = table.one(pass_=pass_)
        if r is None:
            check(pass_, False, "no point")
            continue
        check(f"{pass_} measured", not r.skipped, r.skip_reason)
        check(f"{pass_} FLOPs", r.flops_per_call_median == factor * forward.flops_per_call_median,
              f"{r.flops_per_call_median} against {forward.flops_per_call_median}")
        rate = r.flops_per_call_median / (r.time_ms_median * 1e6)
        check(f"{pass_} GFLOP/s", abs(r.gflops_median / rate - 1) < 0.05, f"{r.gflops_median} against {rate}")
        check(f"{pass_} oracle check", 0 <= r.oracle_error_ratio_median < 1, str(r.oracle_error_ratio_median))
        check(f"{pass_} scratch", r.scratch_bytes_median > 0, str(r.scratch_bytes_median))
        check(f"{pass_} % of peak", r.pct_peak_median > 0, str(r.pct_peak_median))
    check("forward has no oracle ratio", forward.oracle_error_ratio_median != forward.oracle_error_ratio_median,
          str(forward.oracle_error_ratio_median))
    # The cost model's inputs: the machine constants in the context, the counts on the forward point.
    for key in ("exp_per_s_scalar", "fma_flops_scalar", "read_gbs_l1", "read_gbs_l2", "read_gbs_l3", "read_gbs_dram"):
        check(f"context has {key}", float(context.get(key, 0)) > 0, str(context.get(key)))
    packing = [k for k in context if k.startswith("pack_bytes_per_s_")]
    check("packing rates measured", packing and all(float(context[k]) > 0 for k in packing), str(packing))
    threads = int(context.get("threads_all", 1))
    if threads > 1:  # the products again with every thread running them at once
        many = [k for k in context if k.startswith(("products_flops_", "softmax_s_per_score_"))
                and k.endswith(f"_threads_{threads}")]
        kinds = {k.split("_")[0] for k in many}
        check("products and softmax measured on all threads at once",
              kinds == {"products", "softmax"} and all(float(context[k]) > 0 for k in many),
              str(many))
        curve = [k for k in context if k.startswith(f"read_gbs_threads_{threads}_set_")]
        check("read curve measured on all threads", curve and all(float(context[k]) > 0 for k in curve), str(curve))
    # The cache sizes the kernels block for (sysconf), which a guest without sysfs' list still reports
    l2 = subprocess.run(["getconf", "LEVEL2_CACHE_SIZE"], capture_output=True, text=True).stdout.strip()
    if l2.isdigit() and int(l2) > 0:
        check("context has cache_bytes_l2", context.get("cache_bytes_l2") == l2, str(context.get("cache_bytes_l2")))
    check("forward point's score FMAs counted", forward.count("score_fmas") == 128 * 128 * 64,
          str(forward.counts))
    check("forward point's query block", forward.count("query_block") == 16, str(forward.count("query_block")))
    check("backward point has no counts", table.one(pass_="backward").counts == (), "")

# The matrix with its repetitions interleaved at random (as scripts/study.sh runs it): every point
# measured, the context says so, the progress line counts calls, and without it the context says not.
with tempfile.TemporaryDirectory() as tmp:
    out = Path(tmp) / "results.json"
    points = "^(tiled|naive)/scalar/n:128/d:64/threads:1/causal:0/(iterations|repeats)"
    run = subprocess.run([BINARY, "--preset=quick", f"--benchmark_filter={points}",
                          "--benchmark_enable_random_interleaving=true", "--benchmark_report_aggregates_only=true",
                          f"--benchmark_out={out}", "--benchmark_out_format=json"], capture_output=True, text=True,
                         timeout=300)
    check("interleaved run exit", run.returncode == 0, run.stderr[-2000:])
    data = json.loads(out.read_text())
    check("context says interleaved", data["context"].get("repetitions_interleaved") == "true",
          str(data["context"].get("repetitions_interleaved")))
    medians = [b for b in data["benchmarks"] if b.get("aggregate_name") == "median"]
    check("both points measured, three repetitions each", len(medians) == 2 and
          all(b["repetitions"] == 3 and not b.get("error_occurred") and b["rss_peak_bytes"] > 0 for b in medians),
          str(medians)[:500])
    minimums = {b["run_name"]: b["real_time"] for b in data["benchmarks"] if b.get("aggregate_name") == "min"}
    check("each point's fastest repetition, at most its median",
          len(minimums) == 2 and all(0 < minimums[b["run_name"]] <= b["real_time"] for b in medians),
          str(minimums))
    calls = [line for line in run.stderr.splitlines() if line.startswith("[quick call ")]
    check("progress counts calls, naming the preset", len(calls) >= 6, run.stderr[-1000:])
check("context says not interleaved", context.get("repetitions_interleaved") == "false",
      str(context.get("repetitions_interleaved")))


def run_window(window: str, benchmark_filter: str) -> tuple:
    """The quick preset's --<window> on the points the filter keeps: (its JSON, its median entries)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / f"{window}.json"
        run = subprocess.run([BINARY, "--preset=quick", f"--{window}", f"--benchmark_filter={benchmark_filter}",
                              "--benchmark_report_aggregates_only=true", f"--benchmark_out={out}",
                              "--benchmark_out_format=json"], capture_output=True, text=True, timeout=300)
        check(f"{window} run exit", run.returncode == 0, run.stderr[-2000:])
        data = json.loads(out.read_text())
    check(f"{window} window named in the context", data["context"].get("attnbench_window") == window,
          str(data["context"].get("attnbench_window")))
    return data, [b for b in data["benchmarks"] if b.get("aggregate_name") == "median"]


# The phases window (--phases): the tiled SIMD kernels' phases alone, in rounds.
listing = subprocess.run([BINARY, "--preset=quick", "--phases", "--benchmark_filter=/d:64/",
                          "--benchmark_list_tests=true"], capture_output=True, text=True, timeout=300)
registered = [n for n in listing.stdout.split() if n.startswith("phases/")]
data, medians = run_window("phases", "/d:64/")
check("a phases point per registered point", len(medians) == len(registered) >= 1,
      f"{len(medians)} measured, {len(registered)} registered")
check("the dispatched tiled SIMD kernel among them", any("tiled/simd/" in n for n in registered), str(registered))
for b in medians:
    check("phases point name", b["run_name"].startswith(("phases/tiled/simd/", "phases/tiled/simd-bf16/"))
          and "/n:2048/d:64/" in b["run_name"], b["run_name"])
    check("every phase timed", all(b[f"ms_{p}"] > 0 for p in ("all", "score", "softmax", "blend", "pack")), str(b))
    # The three compute phases alone add up to about the whole kernel (the phases window's check of
    # the model's sum rule; loose, as each share is a median over rounds on a shared host).
    parts = b["share_score"] + b["share_softmax"] + b["share_blend"]
    check("the phases alone add up to about the kernel", 0.6 < parts < 1.5, str(parts))
    # The AMX kernel's tile products take a fraction of their vector time and its softmax does not,
    # so there the softmax may be the larger part (under a sanitizer, which instruments the vector
    # code and not the tile instructions, it is): what holds there is that its products are faster
    # than the vdpbf16ps kernel's at the same point.
    if "/amxbf16/" in b["run_name"]:
        twin = next((v for v in medians if v["run_name"] == b["run_name"].replace("/amxbf16/", "/avx512bf16/")),
                    None)
        check("the AMX products faster than vdpbf16ps's", twin is not None
              and b["ms_score"] + b["ms_blend"] < twin["ms_score"] + twin["ms_blend"], str((b, twin)))
    else:
        check("the products are most of the kernel", b["share_score"] + b["share_blend"] > 0.3, str(b))

# The constants window (--constants): every cost-model constant of the matrix's context measured
# again, as the counters of one point (the study runs it last; the model takes each one's faster reading).
with tempfile.TemporaryDirectory() as tmp:
    out = Path(tmp) / "constants.json"
    run = subprocess.run([BINARY, "--preset=quick", "--constants", f"--benchmark_out={out}",
                          "--benchmark_out_format=json"], capture_output=True, text=True, timeout=300)
    check("constants run exit", run.returncode == 0, run.stderr[-2000:])
    data = json.loads(out.read_text())
check("constants window named in the context", data["context"].get("attnbench_window") == "constants",
      str(data["context"].get("attnbench_window")))
points = data["benchmarks"]
check("one constants point", len(points) == 1 and points[0]["name"].startswith(
      f"constants/threads:{context['threads_all']}/"),
      str([b["name"] for b in points]))
speeds = {k for k in context if re.match(r"(exp_per_s|fma_flops|products_flops|pack_bytes_per_s|read_gbs|"
                                          r"softmax_s_per_score|task_s|call_start_s)_", k)}
check("every constant of the matrix's context measured again, each positive",
      len(speeds) > 20 and all(points[0].get(k, 0) > 0 for k in speeds),
      str(sorted(k for k in speeds if not points[0].get(k, 0) > 0)))

# The scaling window (--scaling): 1 thread against all in rounds, on the quick preset's forward point.
data, medians = run_window("scaling", "pass:forward")
threads = int(data["context"]["threads_all"])
check("one forward scaling point", len(medians) == (1 if threads > 1 else 0), str([b["name"] for b in medians]))
for b in medians:
    check("scaling point name", b["run_name"].startswith(f"scaling/tiled/simd") and
          f"/n:1024/d:64/pass:forward/threads:{threads}/" in b["run_name"], b["run_name"])
    check("speedup is the 1-thread over the all-thread time", 0 < b["speedup_fastest"] <= b["speedup"] * 1.0001
          and abs(b["efficiency"] - b["speedup"] / threads) < 1e-9, str(b))
    check("at least 5 rounds", b["rounds"] >= 5, str(b["rounds"]))
    # The host's cores as the pinned threads got them: read where pinning works, and a share of T cores.
    check("the host's cores read when pinned, between 0 and 1.25 T",
          ("cores" in b) == (b["pinned"] >= 0.5) and (b["pinned"] < 0.5 or 0 < b["cores"] < 1.25 * threads), str(b))
# GFLOP/s x ms is the call's FLOPs / 1e6 in each repetition. The aggregates average each counter on its
# own, so a noisy host breaks the identity on the medians: rebuild the two repetitions' call times from
# their mean and standard deviation (mean -+ sd / sqrt 2) and check the rates' mean against them.
flops = 4.0 * 1024 * 1024 * 64
for b in medians:
    mean, sd = ({a["aggregate_name"]: a for a in data["benchmarks"] if a.get("run_name") == b["run_name"]}[k]
                for k in ("mean", "stddev"))
    check("scaling: two repetitions", b["repetitions"] == 2, str(b["repetitions"]))
    for g, t in (("gflops_1", "ms_1"), ("gflops_T", "ms_T")):
        times = [mean[t] + sign * sd[t] / math.sqrt(2) for sign in (-1, 1)]
        rate = sum(flops / (ms * 1e6) for ms in times) / 2
        check("GFLOP/s from the call times", abs(mean[g] / rate - 1) < 1e-3, f"{g}: {mean[g]} against {rate}")

# The long-context window (--context): a sliding window and the full causal mask, on the quick preset's
# shortest head.
data, medians = run_window("context", "/n:2048/")
check("context: the window and full causal, 1 thread at least", len(medians) >= 2 and
      {b["run_name"].split("/w:")[1].split("/")[0] for b in medians} == {"512", "full"}, str([b["name"] for b in medians]))
for b in medians:
    window = 0 if "/w:full/" in b["run_name"] else 512
    pairs = 2048 * 512 - 512 * 511 / 2 if window else 2048 * 2049 / 2
    check("context pairs: what the mask leaves", b["pairs"] == pairs and b["window"] == window, str(b))
    # The time per row is linear in the call time, so its median is the median time's; the GFLOP/s is a
    # rate: the median of two repetitions averages the two rates, each from its own time (the fastest,
    # and 2 median - fastest).
    fastest = next(m["real_time"] for m in data["benchmarks"]
                   if m.get("aggregate_name") == "min" and m["run_name"] == b["run_name"])
    times = (fastest, 2 * b["real_time"] - fastest) if b["repetitions"] == 2 else (b["real_time"],) * 2
    rate = sum(4 * 64 * pairs / (t * 1e6) for t in times) / 2
    check("context GFLOP/s and time per row from the call time",
          b["repetitions"] in (1, 2) and abs(b["GFLOP/s"] / rate - 1) < 0.01
          and abs(b["us_per_row"] * 2048 / (b["real_time"] * 1e3) - 1) < 0.01, str(b))

# The decode window's types points: f32, f16 and bf16 called by turns on the llama layout's decode,
# and on the prefill (one run of the window for both).
data, both = run_window("decode", "^types/.*/(kv:4096|prefill:1024)/")
threads = int(data["context"]["threads_all"])
sanitized = "-fsanitize" in data["context"].get("cxx_flags", "")
medians = [b for b in both if "/kv:" in b["run_name"]]
prefills = [b for b in both if "/prefill:" in b["run_name"]]
check("a types point per thread count", len(medians) == (2 if threads > 1 else 1), str([b["name"] for b in medians]))
check("a prefill types point per thread count", len(prefills) == len(medians) == len(both) / 2,
      str([b["name"] for b in both]))
# Every types point: its name, at least 5 rounds, its time the f32 call's, each type's rate from its own
# call time (`work` per call: K/V bytes of decode, FLOPs of prefill), and each speedup, the median of the
# rounds' ratios, near the ratio of the medians.
for kind, points, name, rate, work in (
        ("prefill", prefills, r"prefill:1024/d:128", "gflops",
         lambda size: 4 * 128 * 1024 * 1025 / 2),  # the causal scores' pairs, 4 d FLOPs each
        ("decode", medians, r"layout:llama/rows:1/kv:4096", "gbs",
         lambda size: 8 * 4096 * 128 * 2 * size)):  # 8 key/value heads, d = 128, K and V
    for b in points:
        check(f"{kind} types point name", re.match(rf"types/tiled/simd/\w+/{name}/threads:\d+/", b["run_name"]),
              b["run_name"])
        check("at least 5 rounds", b["rounds"] >= 5, str(b))
        check("its time is the f32 call's", abs(b["real_time"] / b["us_f32"] - 1) < 1e-6 and b["time_unit"] == "us",
              str(b))
        for t, size in (("f32", 4), ("f16", 2), ("bf16", 2)):
            check(f"{kind} {t} {rate} from its call time", abs(b[f"{rate}_{t}"] * b[f"us_{t}"] * 1e3 / work(size) - 1)
                  < 1e-6, str(b))
        # The median of the rounds' ratios is near the ratio of the medians only where the rounds agree:
        # on a loaded host (or under a sanitizer, or beside ctest's other jobs) they scatter, and the two
        # legitimately part; the repetitions' CVs of both sides' times and of the ratio say whether they did.
        cvs = next((m for m in data["benchmarks"]
                    if m.get("aggregate_name") == "cv" and m["run_name"] == b["run_name"]), None)
        check(f"{kind} types point's CV aggregate", cvs is not None, b["run_name"])
        for t in ("f16", "bf16"):
            cv = max(cvs[key] for key in ("real_time", f"us_{t}", f"speedup_{t}")) if cvs else 0.0
            near = 0.8 < b[f"speedup_{t}"] / (b["us_f32"] / b[f"us_{t}"]) < 1.25
            check(f"{kind} {t} speedup", b[f"speedup_{t}"] > 0 and (near or sanitized or cv > 0.05),
                  f"CV {cv:.3f}: {b}")

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
