"""Beyond one machine: ring attention over MPI, from the ring window (ring_window.json,
bench/ring_window.py): two ranks of one thread against one rank and against two oneTBB threads, the
overlap of each step and the ranks' balance, then the network model's prediction for a long head on
many nodes. Every number comes from that file."""
from __future__ import annotations

from .. import formatting as fmt
from ..analysis import ring as ar
from ..document import Bullets, Document, Paragraph, Table

TITLE = "Beyond one machine: ring attention over MPI"
FIGURE = "fig15_ring"
EXAMPLE_NETWORK = "25 Gb/s Ethernet"
UNEVEN = 1.05  # ranks with equal work whose compute differs by more: cores of unequal speed


def _mask(row) -> str:
    return "causal (zigzag)" if row.causal else "full"


def summary_item(window) -> str:
    if window is None:
        return ""
    top = max(r.n for r in window.rows)
    at_top = [r for r in window.rows if r.n == top]
    speedups = " and ".join(f"{fmt.ratio(r.speedup_two_ranks)} ({_mask(r)})" for r in at_top)
    last = [p for p in window.model() if p.network == EXAMPLE_NETWORK][-1]
    return (f"Ring attention over MPI: two ranks of one thread run {speedups} as fast as one rank at "
            f"n = {fmt.count(top)}; the model puts a {fmt.count(ar.MODEL_TOKENS)}-token causal head at "
            f"{fmt.sig(last.seconds)} s on {last.nodes} nodes over {EXAMPLE_NETWORK}.")


def _goal_items(rows: list) -> list:
    """One bullet per goal over the points where it applies, saying where it is met and where not."""
    judged = [r for r in rows if r.n >= ar.GOAL_N]
    if not judged:
        return [f"The project's goals for the ring apply from n = {fmt.count(ar.GOAL_N)}; this run's lengths are "
                "shorter, so it judges none of them."]
    goals = (("speedup", f"two ranks at least {fmt.ratio(ar.GOAL_SPEEDUP)} one rank",
              lambda r: fmt.ratio(r.speedup_two_ranks)),
             ("vs_threads", "two ranks within 10 % of two oneTBB threads",
              lambda r: fmt.ratio(r.two_ranks_over_two_threads)),
             ("step", "each step within 10 % of its compute", lambda r: fmt.sig(r.worst_step_over_compute)),
             ("balance", f"causal ranks' busiest / idlest under {ar.GOAL_BALANCE}",
              lambda r: fmt.sig(r.busiest_over_idlest)))
    items = []
    for key, goal, value in goals:
        verdicts = [(r, r.meets()[key]) for r in judged if r.meets()[key] is not None]
        if not verdicts:
            continue
        met = [f"n = {fmt.count(r.n)} {_mask(r)}: {value(r)}" for r, ok in verdicts if ok]
        missed = [f"n = {fmt.count(r.n)} {_mask(r)}: {value(r)}" for r, ok in verdicts if not ok]
        if not missed:
            verdict = "**met** at every point"
        elif not met:
            verdict = "**not met** (" + "; ".join(missed) + ")"
        else:
            verdict = "**met** at " + "; ".join(met) + "; **not met** at " + "; ".join(missed)
        items.append(f"Goal, {goal}: {verdict}.")
    return items


def _why_items(rows: list) -> list:
    items = []
    # Equal work (no mask) on cores of unequal speed: the spread that explains a missed speedup.
    uneven = [r for r in rows if not r.causal and r.busiest_over_idlest > UNEVEN]
    if uneven:
        worst = max(uneven, key=lambda r: r.busiest_over_idlest)
        items.append(
            f"Without a mask both ranks do exactly the same work, yet at n = {fmt.count(worst.n)} the busier rank "
            f"computed {fmt.ratio(worst.busiest_over_idlest)} the other's time (median over repetitions): the two "
            "cores ran at different speeds, as a shared host's do. A step ends when the slower rank's block "
            "arrives, so a static split runs at the slower core's pace, while oneTBB's two threads in one process "
            "steal each other's tasks and finish together; longer calls average the cores' speeds out.")
    for r in rows:
        twin = next((u for u in uneven if u.n == r.n), None)
        if r.causal and r.meets()["balance"] is False and twin is not None:
            items.append(f"At n = {fmt.count(r.n)} the causal ranks' spread ({fmt.sig(r.busiest_over_idlest)}) is mostly "
                         f"the cores' own: without a mask, where the work is exactly equal, it was "
                         f"{fmt.sig(twin.busiest_over_idlest)}.")
    waits = [r for r in rows if r.worst_step_over_compute > ar.GOAL_STEP]
    if waits:
        items.append(
            "A step's wait is what its compute did not hide: the slower rank's lateness, plus the copy of the block. "
            "On one machine Open MPI copies a shared-memory message when the receiver is inside an MPI call, so "
            "the copy runs at the step's end on the computing core; a network adapter that moves the data on its "
            "own would overlap it.")
    return items


def section(doc: Document, window, figures: dict) -> None:
    if window is None:
        return
    s = doc.section(TITLE)
    rows = window.rows
    reps = ", ".join(f"{k} {v}" for k, v in rows[0].samples.items())
    s.add(Paragraph(
        "A million-token head does not fit one machine's time or caches; the field splits the sequence over P "
        "processes, keeps each rank's query rows in place and passes the K/V blocks around a ring while every "
        "rank attends to the block it holds, merging the partial results by their log-sum-exp. attnbench's ring "
        f"(`ring/`, docs/ring.md) calls {fmt.code(rows[0].kernel)} for each block over MPI. Below, one head at "
        f"d = {window.d} ({window.preset} preset): one rank of one thread, two ranks of one thread bound to a "
        "core each, and one rank of two oneTBB threads, called by turns in random order every round; medians "
        f"over every repetition ({reps})."))
    table_rows = []
    for r in rows:
        m = r.median_seconds
        table_rows.append([fmt.count(r.n), _mask(r), fmt.ms(m["one rank"] * 1e3), fmt.ms(m["two ranks"] * 1e3),
                           fmt.ms(m["two threads"] * 1e3), fmt.ratio(r.speedup_two_ranks),
                           fmt.ratio(r.two_ranks_over_two_threads), fmt.sig(r.worst_step_over_compute),
                           fmt.sig(r.busiest_over_idlest)])
    s.add(Table(["n", "mask", "one rank", "two ranks", "two threads", "two ranks / one", "two ranks / two threads",
                 "worst step / its compute", "busiest / idlest rank"], table_rows, align="llrrrrrrr",
                caption="Two ranks / two threads above 1 means the ring is the faster. Worst step: per repetition the "
                        "ring step whose time (compute and the wait for the next block) most exceeds its compute. "
                        "Busiest / idlest: the two ranks' compute summed over the steps."))
    if FIGURE in figures:
        s.add(doc.figure(figures[FIGURE], "Left: median time per call of the three configurations. Right: the "
                                          "model's step compute against each network's step transfer as the nodes "
                                          "grow; the vertical lines mark where the transfer stops hiding."))
    s.add(Bullets(_goal_items(rows) + _why_items(rows)))
    predictions = window.model()
    by_nodes = {}
    for p in predictions:
        by_nodes.setdefault(p.nodes, {})[p.network] = p
    networks = list(ar.NETWORKS)
    model_rows = [[str(nodes), fmt.sig(cells[networks[0]].step_compute * 1e3)]
                  + [f"{fmt.sig(cells[n].step_transfer * 1e3)}" for n in networks]
                  + [f"{fmt.sig(cells[n].seconds)}" + ("" if cells[n].hidden else " (transfer-bound)")
                     for n in networks] for nodes, cells in sorted(by_nodes.items())]
    s.add(Paragraph(
        f"**The network model.** From one core's rate here ({fmt.sig(window.core_flops / 1e9)} GFLOP/s, the fastest "
        f"one-rank repetition) and nodes of {window.cores} such cores, a {fmt.count(ar.MODEL_TOKENS)}-token causal "
        f"head at d = {window.d} takes P steps, each the longer of its compute (4 d FLOPs a visible pair, falling "
        "as 1/P²) and its K/V block's transfer (8 d bytes a key, falling as 1/P) plus the network's latency."))
    s.add(Table(["nodes", "step compute (ms)"] + [f"step transfer, {n} (ms)" for n in networks]
                + [f"head, {n} (s)" for n in networks], model_rows,
                caption="Networks: " + "; ".join(f"{n} at {fmt.sig(bw * 8 / 1e9)} Gb/s and {fmt.sig(lat * 1e6)} µs"
                                                 for n, (bw, lat) in ar.NETWORKS.items()) + "."))
    crossings = [f"on {n} below about {fmt.count(round(ar.crossover_rows(window.core_flops, window.cores, n)))} "
                 f"rows per node (beyond {fmt.count(round(ar.MODEL_TOKENS / ar.crossover_rows(window.core_flops, window.cores, n)))} "
                 "nodes for this head)" for n in networks]
    bound = sorted({p.network for p in predictions if not p.hidden})
    verdict = (f"up to {max(ar.NODES)} nodes the ring is compute-bound on either network" if not bound else
               f"within {max(ar.NODES)} nodes the transfer already sets the pace on {' and '.join(bound)}")
    s.add(Paragraph("The transfer outlasts the compute " + ", and ".join(crossings) + f": {verdict}, provided the "
                    "transfer progresses during the compute."))
