"""The ring window: ring attention (`attnbench ring --bench`) on this machine, one rank against two
ranks of one thread and against one rank of two oneTBB threads, the three called by turns in
random order each round; then the network cost model's predictions for a long context on many
nodes from the constants measured here. Writes ring_window.json and ring_window.md to --out.

    .venv/bin/python bench/ring_window.py --cli build/bin/attnbench --out build/ring-window [--preset quick]
        [--backward]   the backward ring instead (dQ, dK, dV from the forward's O and LSE), which the
                       study does not run

About 4 minutes with the standard preset (n 16384 and 32768, d 128, causal and not, 3 rounds);
the quick preset (CI's: n 2048, d 64, one round) takes seconds.
"""
import argparse
import datetime
import json
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from attnbench_report.analysis import ring as analysis  # noqa: E402 (the report's own summary)

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
CONFIGS = analysis.CONFIGS
# The study's presets (scripts/study.sh): lengths, head dim, rounds, repetitions per call.
PRESETS = {"quick": ([2048], 64, 1, 2), "standard": ([16384, 32768], 128, 3, 3),
           "full": ([8192, 16384, 32768], 128, 3, 3)}


def run(cli, config, n, d, causal, repeats, backward=False):
    ranks, threads, bind = CONFIGS[config]
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = ["mpirun", "-np", str(ranks), "--bind-to", bind, cli, "ring", "--bench", "--n",
               str(n), "--head-dim", str(d), "--threads", str(threads), "--repeats",
               str(repeats), "--json", out.name] + (["--causal"] if causal else []) \
            + (["--backward"] if backward else [])
        r = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=1800)
        if r.returncode != 0:
            sys.exit(f"ring_window: {' '.join(cmd)} failed:\n{r.stderr}")
        with open(out.name) as f:
            return json.load(f)


def markdown(rows, predictions, d, cores, cpu, pass_="forward"):
    lines = [f"# Ring window ({cpu}; the {pass_} ring)", "",
             "| n | causal | one rank (ms) | two ranks (ms) | two threads (ms) | two ranks / one "
             "| vs two threads | worst step / its compute | busiest / idlest rank |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m = r.median_seconds
        lines.append(f"| {r.n} | {'yes' if r.causal else 'no'} | {m['one rank'] * 1e3:.0f} "
                     f"| {m['two ranks'] * 1e3:.0f} | {m['two threads'] * 1e3:.0f} "
                     f"| {r.speedup_two_ranks:.2f}x | {r.two_ranks_over_two_threads:.2f}x "
                     f"| {r.worst_step_over_compute:.3f} | {r.busiest_over_idlest:.3f} |")
    core = max(r.core_flops for r in rows)
    lines += ["", "Medians over every repetition of every round (configurations called by turns, "
              "in random order each round)."]
    if pass_ != "forward":  # the network model prices the forward
        return "\n".join(lines) + "\n"
    lines[-1] += (f" The model below takes one core's {core / 1e9:.0f} GFLOP/s (the fastest one-rank "
                  f"repetition here) and nodes of {cores} such cores.")
    lines += ["", f"Predicted: a {analysis.MODEL_TOKENS:,}-token head (d {d}, causal) on P nodes", "",
              "| network | nodes | step compute (s) | step transfer (ms) | total (s) | transfer "
              "hidden |", "|---|---|---|---|---|---|"]
    for p in predictions:
        lines.append(f"| {p.network} | {p.nodes} | {p.step_compute:.3f} | {p.step_transfer * 1e3:.2f} "
                     f"| {p.seconds:.1f} | {'yes' if p.hidden else 'no'} |")
    for network in analysis.NETWORKS:
        rows_per_node = analysis.crossover_rows(core, cores, network)
        lines.append(f"\nOn {network} the transfer outlasts the compute below about "
                     f"{rows_per_node:.0f} rows per node, i.e. beyond "
                     f"{analysis.MODEL_TOKENS / rows_per_node:.0f} nodes for this head.")
    return "\n".join(lines) + "\n"


def cpu_name():
    """The CPU's model name and, since a guest's name may be generic, its family and model numbers."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        return "unknown CPU"
    name = fields.get("model name", "unknown CPU")
    if "cpu family" in fields and "model" in fields:
        name += f" (family {fields['cpu family']} model {fields['model']})"
    return name


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", default="build/bin/attnbench")
    ap.add_argument("--out", required=True)
    ap.add_argument("--preset", choices=PRESETS, default="standard",
                    help="lengths, head dim, rounds and repetitions (the study's presets)")
    ap.add_argument("--n", type=int, nargs="+", help="sequence lengths (default: the preset's)")
    ap.add_argument("--d", type=int, help="head dim (default: the preset's)")
    ap.add_argument("--rounds", type=int, help="rounds (default: the preset's)")
    ap.add_argument("--repeats", type=int, help="timed repetitions per call (default: the preset's)")
    ap.add_argument("--cores", type=int, default=os.cpu_count(), help="cores of a modelled node")
    ap.add_argument("--backward", action="store_true", help="time the backward ring instead")
    args = ap.parse_args()
    ns, d, rounds, repeats = PRESETS[args.preset]
    ns, d = args.n or ns, args.d or d
    rounds, repeats = args.rounds or rounds, args.repeats or repeats
    os.makedirs(args.out, exist_ok=True)
    shuffle = random.Random(2026)
    points, total = [], rounds * len(ns) * 2
    done = 0
    for rnd in range(rounds):
        for n in ns:
            for causal in (False, True):
                order = list(CONFIGS)
                shuffle.shuffle(order)
                for config in order:
                    p = run(args.cli, config, n, d, causal, repeats, args.backward)
                    p.update(config=config, round=rnd)
                    points.append(p)
                done += 1
                print(f"ring_window: {done}/{total} (round {rnd + 1}, n {n}, "
                      f"{'causal' if causal else 'full'})", file=sys.stderr)
    rows = analysis.summarise(points)
    core = max(r.core_flops for r in rows)
    cpu = cpu_name()
    version = subprocess.run([args.cli, "--version"], capture_output=True, text=True).stdout.strip()
    with open(os.path.join(args.out, "ring_window.json"), "w") as f:
        json.dump({"cpu": cpu, "preset": args.preset, "d": d, "cores": args.cores, "version": version,
                   "pass": "backward" if args.backward else "forward",
                   "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                   "points": points}, f, indent=1)
    text = markdown(rows, analysis.model(core, d, args.cores), d, args.cores, cpu,
                    "backward" if args.backward else "forward")
    with open(os.path.join(args.out, "ring_window.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
