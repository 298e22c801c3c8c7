"""The ring window's numbers, from the raw repetitions bench/ring_window.py records (`attnbench ring
--bench` per configuration): per sequence length and mask, the three configurations' medians and
fastest repetitions, two ranks against one rank and against two oneTBB threads in one process, each
ring step's time over its compute, and the ranks' balance; then the network model, which prices a
long causal head on many nodes from one core's measured rate. bench/ring_window.py summarises with
these functions too, so its console table and the report agree."""
from __future__ import annotations

import statistics
from dataclasses import dataclass

# name: (ranks, threads per rank, mpirun binding). One rank of two threads is left unbound so that
# oneTBB sees both cores; ranks of one thread are bound to a core each (unbound, the scheduler moved
# them between the cores: docs/studies/2026-12-06-ring-attention.md).
CONFIGS = {"one rank": (1, 1, "core"), "two ranks": (2, 1, "core"), "two threads": (1, 2, "none")}

# The project's goals for the ring at n >= GOAL_N (docs/ring.md).
GOAL_N = 16384
GOAL_SPEEDUP = 1.8  # two ranks of one thread over one rank
GOAL_VS_THREADS = 0.9  # two ranks within 10 % of two oneTBB threads in one process
GOAL_STEP = 1.10  # each step's time (compute + wait) within 10 % of its compute
GOAL_BALANCE = 1.15  # causal, zigzag: the busiest rank's compute over the idlest's

# Networks the model prices a step's transfer on: bandwidth in bytes/s and latency in seconds.
NETWORKS = {"25 Gb/s Ethernet": (25e9 / 8, 10e-6), "200 Gb/s InfiniBand": (200e9 / 8, 2e-6)}
NODES = (8, 16, 32, 64, 128, 256)
MODEL_TOKENS = 1 << 20


@dataclass
class Row:
    n: int
    causal: bool
    median_seconds: dict  # configuration -> median over every repetition of every round
    best_seconds: dict  # configuration -> fastest repetition
    speedup_two_ranks: float  # one rank's median over two ranks'
    two_ranks_over_two_threads: float  # two threads' median over two ranks' (> 1: the ring faster)
    worst_step_over_compute: float  # per repetition the slowest step's (compute + wait) / compute
    busiest_over_idlest: float  # per repetition the ranks' summed compute, largest over smallest
    core_flops: float  # one rank's FLOPs over its fastest repetition: one core's rate
    samples: dict  # configuration -> repetitions
    kernel: str

    def meets(self) -> dict:
        """Each goal at this point: True, False, or None where the goal does not apply (n < GOAL_N;
        the balance goal is the causal layout's)."""
        if self.n < GOAL_N:
            return {"speedup": None, "vs_threads": None, "step": None, "balance": None}
        return {"speedup": self.speedup_two_ranks >= GOAL_SPEEDUP,
                "vs_threads": self.two_ranks_over_two_threads >= GOAL_VS_THREADS,
                "step": self.worst_step_over_compute <= GOAL_STEP,
                "balance": self.busiest_over_idlest < GOAL_BALANCE if self.causal else None}


def summarise(points: list) -> list:
    """Rows per (n, causal), in order; `points` are ring --bench JSON objects with "config" added."""
    rows = []
    for key in sorted({(p["n"], p["causal"]) for p in points}):
        runs = {c: [r for p in points if (p["n"], p["causal"]) == key and p["config"] == c
                    for r in p["repetitions"]] for c in CONFIGS}
        missing = [c for c in CONFIGS if not runs[c]]
        if missing:
            raise ValueError(f"ring window: n = {key[0]}, causal = {key[1]}: no repetition of {missing}")
        med = {c: statistics.median(r["seconds"] for r in runs[c]) for c in CONFIGS}
        best = {c: min(r["seconds"] for r in runs[c]) for c in CONFIGS}
        ring = runs["two ranks"]
        step = statistics.median(max((c + w) / c for c, w in zip(r["compute"], r["wait"])) for r in ring)
        balance = statistics.median(max(r["rank_compute"]) / min(r["rank_compute"]) for r in ring)
        kernel = next(p["kernel"] for p in points if (p["n"], p["causal"]) == key)
        rows.append(Row(n=key[0], causal=bool(key[1]), median_seconds=med, best_seconds=best,
                        speedup_two_ranks=med["one rank"] / med["two ranks"],
                        two_ranks_over_two_threads=med["two threads"] / med["two ranks"],
                        worst_step_over_compute=step, busiest_over_idlest=balance,
                        core_flops=ring[0]["flops"] / best["one rank"],
                        samples={c: len(runs[c]) for c in CONFIGS}, kernel=kernel))
    return rows


@dataclass
class Prediction:
    network: str
    nodes: int
    step_compute: float  # seconds
    step_transfer: float  # seconds
    seconds: float  # the head's forward: nodes x max(step compute, step transfer)

    @property
    def hidden(self) -> bool:
        return self.step_transfer <= self.step_compute


def model(core_flops: float, d: int, cores: int, causal: bool = True, nodes=NODES) -> list:
    """A MODEL_TOKENS-token head's forward on P nodes of `cores` cores at core_flops each: P steps,
    each the larger of its compute and its K/V block's transfer (the transfer overlapped)."""
    out = []
    node_flops = core_flops * cores
    for name, (bandwidth, latency) in NETWORKS.items():
        for p in nodes:
            block = MODEL_TOKENS / p
            compute = 4 * d * block * block / (2 if causal else 1) / node_flops
            transfer = 2 * block * d * 4 / bandwidth + latency
            out.append(Prediction(name, p, compute, transfer, p * max(compute, transfer)))
    return out


def crossover_rows(core_flops: float, cores: int, network: str, causal: bool = True) -> float:
    """Rows per node below which a step's transfer outlasts its compute: 4 d b² / F (halved when
    causal) = 8 d b / B, so b = 2 F / B (times 2 when causal); d cancels."""
    bandwidth = NETWORKS[network][0]
    return 2 * core_flops * cores / bandwidth * (2 if causal else 1)
