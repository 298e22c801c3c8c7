"""The ring window: ring attention (`attnbench ring --bench`) on this machine, one rank against two
ranks of one thread and against one rank of two oneTBB threads, the three called by turns in
random order each round; then the network cost model's predictions for a long context on many
nodes from the constants measured here. Writes ring_window.json and ring_window.md to --out.

    .venv/bin/python bench/ring_window.py --cli build/bin/attnbench --out build/ring-window

About 4 minutes with the defaults (n 16384 and 32768, d 128, causal and not, 3 rounds).
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")

# name: (ranks, threads per rank, mpirun binding). One rank of two threads is left unbound so that
# oneTBB sees both cores; ranks of one thread are bound to a core each (unbound, the scheduler
# moved them between cores: 0.85-0.95x on the first machine measured, docs/studies/).
CONFIGS = {"one rank": (1, 1, "core"), "two ranks": (2, 1, "core"), "two threads": (1, 2, "none")}

# Networks the model prices a step's transfer on: bandwidth in bytes/s and latency in seconds.
NETWORKS = {"25 Gb/s Ethernet": (25e9 / 8, 10e-6), "200 Gb/s InfiniBand": (200e9 / 8, 2e-6)}
NODES = [8, 16, 32, 64, 128, 256]
MODEL_TOKENS = 1 << 20


def run(cli, config, n, d, causal, repeats):
    ranks, threads, bind = CONFIGS[config]
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = ["mpirun", "-np", str(ranks), "--bind-to", bind, cli, "ring", "--bench", "--n",
               str(n), "--head-dim", str(d), "--threads", str(threads), "--repeats",
               str(repeats), "--json", out.name] + (["--causal"] if causal else [])
        r = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=1800)
        if r.returncode != 0:
            sys.exit(f"ring_window: {' '.join(cmd)} failed:\n{r.stderr}")
        with open(out.name) as f:
            return json.load(f)


def summarise(points):
    """Per (n, causal): medians over every repetition of every round, and the ratios."""
    rows = []
    for key in sorted({(p["n"], p["causal"]) for p in points}):
        runs = {c: [r for p in points if (p["n"], p["causal"]) == key and p["config"] == c
                    for r in p["repetitions"]] for c in CONFIGS}
        med = {c: statistics.median(r["seconds"] for r in runs[c]) for c in CONFIGS}
        best = {c: min(r["seconds"] for r in runs[c]) for c in CONFIGS}
        ring = runs["two ranks"]
        # each step's time (compute + wait) over its compute, the worst step, median over reps
        step = statistics.median(max((c + w) / c for c, w in zip(r["compute"], r["wait"]))
                                 for r in ring)
        balance = statistics.median(max(r["rank_compute"]) / min(r["rank_compute"]) for r in ring)
        flops = ring[0]["flops"]
        rows.append({"n": key[0], "causal": key[1], "median_seconds": med, "best_seconds": best,
                     "speedup_two_ranks": med["one rank"] / med["two ranks"],
                     "two_ranks_over_two_threads": med["two threads"] / med["two ranks"],
                     "worst_step_over_compute": step, "busiest_over_idlest": balance,
                     "core_flops": flops / best["one rank"],
                     "samples": {c: len(runs[c]) for c in CONFIGS}})
    return rows


def model(core_flops, d, cores, causal):
    """A 1M-token head's forward on P nodes of `cores` cores at core_flops each: P steps, each the
    larger of its compute and the K/V block's transfer (overlapped)."""
    out = []
    node_flops = core_flops * cores
    for name, (bandwidth, latency) in NETWORKS.items():
        for p in NODES:
            block = MODEL_TOKENS / p
            pairs = block * block / (2 if causal else 1)
            compute = 4 * d * pairs / node_flops
            transfer = 2 * block * d * 4 / bandwidth + latency
            out.append({"network": name, "nodes": p, "step_compute": compute,
                        "step_transfer": transfer, "seconds": p * max(compute, transfer),
                        "hidden": transfer <= compute})
        # rows per node below which the transfer outlasts the compute: 4 d b^2 / F (halved when
        # causal) = 8 d b / B
        out.append({"network": name,
                    "crossover_rows": 2 * node_flops / bandwidth * (2 if causal else 1)})
    return out


def markdown(rows, predictions, d, cores, cpu):
    lines = [f"# Ring window ({cpu})", "",
             "| n | causal | one rank (ms) | two ranks (ms) | two threads (ms) | two ranks / one "
             "| vs two threads | worst step / its compute | busiest / idlest rank |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m = r["median_seconds"]
        lines.append(f"| {r['n']} | {'yes' if r['causal'] else 'no'} | {m['one rank'] * 1e3:.0f} "
                     f"| {m['two ranks'] * 1e3:.0f} | {m['two threads'] * 1e3:.0f} "
                     f"| {r['speedup_two_ranks']:.2f}x | {r['two_ranks_over_two_threads']:.2f}x "
                     f"| {r['worst_step_over_compute']:.3f} | {r['busiest_over_idlest']:.3f} |")
    core = max(r["core_flops"] for r in rows)
    lines += ["", f"Medians over every repetition of every round (configurations called by turns, "
              f"in random order each round). The model below takes one core's "
              f"{core / 1e9:.0f} GFLOP/s (the fastest one-rank repetition here) and nodes of "
              f"{cores} such cores.", "",
              f"Predicted: a {MODEL_TOKENS:,}-token head (d {d}, causal) on P nodes", "",
              "| network | nodes | step compute (s) | step transfer (ms) | total (s) | transfer "
              "hidden |", "|---|---|---|---|---|---|"]
    for p in predictions:
        if "nodes" in p:
            lines.append(f"| {p['network']} | {p['nodes']} | {p['step_compute']:.3f} "
                         f"| {p['step_transfer'] * 1e3:.2f} | {p['seconds']:.1f} "
                         f"| {'yes' if p['hidden'] else 'no'} |")
    for p in predictions:
        if "crossover_rows" in p:
            lines.append(f"\nOn {p['network']} the transfer outlasts the compute below about "
                         f"{p['crossover_rows']:.0f} rows per node, i.e. beyond "
                         f"{MODEL_TOKENS / p['crossover_rows']:.0f} nodes for this head.")
    return "\n".join(lines) + "\n"


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", default="build/bin/attnbench")
    ap.add_argument("--out", required=True)
    ap.add_argument("--n", type=int, nargs="+", default=[16384, 32768])
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cores", type=int, default=os.cpu_count(), help="cores of a modelled node")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    shuffle = random.Random(2026)
    points, total = [], args.rounds * len(args.n) * 2
    done = 0
    for rnd in range(args.rounds):
        for n in args.n:
            for causal in (False, True):
                order = list(CONFIGS)
                shuffle.shuffle(order)
                for config in order:
                    p = run(args.cli, config, n, args.d, causal, args.repeats)
                    p.update(config=config, round=rnd)
                    points.append(p)
                done += 1
                print(f"ring_window: {done}/{total} (round {rnd + 1}, n {n}, "
                      f"{'causal' if causal else 'full'})", file=sys.stderr)
    rows = summarise(points)
    core = max(r["core_flops"] for r in rows)
    predictions = model(core, args.d, args.cores, True)
    cpu = cpu_name()
    with open(os.path.join(args.out, "ring_window.json"), "w") as f:
        json.dump({"cpu": cpu, "points": points, "summary": rows, "model": predictions}, f,
                  indent=1)
    text = markdown(rows, predictions, args.d, args.cores, cpu)
    with open(os.path.join(args.out, "ring_window.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
