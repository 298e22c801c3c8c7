"""How far to trust the numbers and how they are made: the report's header (machine, date, preset,
version, commit), noise, skipped points, method."""
from __future__ import annotations

from .. import analysis
from .. import formatting as fmt
from ..document import Bullets, Document, Paragraph, Table
from ..load import results as loader
from ..load.results import Run
from ..load.results import Table as Points

NOT_RECORDED = "not recorded"
SHORT_HASH = 12  # hex digits of a commit in the header (the method section gives the whole hash)


# --- provenance ---------------------------------------------------------------------------------

def commit_text(run: Run, short: bool = False) -> str:
    """ "`f060f71acb8f`" (short) or the whole hash, saying so when the build's tree differed from it
    (`git_dirty`); "not recorded" for a run from before the benchmark wrote its commit."""
    commit = run.git_commit
    if commit is None:
        return NOT_RECORDED
    if commit == "unknown":
        return "unknown (built outside a git checkout)"
    text = fmt.code(commit[:SHORT_HASH] if short else commit)
    if run.git_dirty:
        text += (", tracked files modified" if short else
                 " with tracked files modified (the numbers may not be that commit's)")
    return text


def _build_of(context: dict) -> tuple:
    return (context.get("git_commit"), context.get("git_dirty"), context.get("attnbench_version"))


def study_builds(run: Run) -> tuple:
    """The study's files next to the run, by the build they record against the run's own (commit,
    dirty flag, version): (same: [file name], other: [(file name, commit or None)], unrecorded:
    [file name], the files that record no build)."""
    mine = _build_of(run.context)
    same, other, unrecorded = [], [], []
    for name, context in loader.study_contexts(run).items():
        build = _build_of(context)
        if not any(build):
            unrecorded.append(name)
        elif build == mine:
            same.append(name)
        else:
            other.append((name, build[0]))
    return same, other, unrecorded


def other_builds(run: Run) -> list:
    """[(file name, commit or None)] of the study's files that record another build than the run's."""
    return study_builds(run)[1]


def header(table: Points) -> list:
    """The report's header, [label, value] pairs: what the run measured and which build measured it.
    A run recorded before the benchmark wrote a field says so instead of leaving it out."""
    run = table.runs[0]
    ctx = run.context
    machine = ctx.get("cpu_model", "unknown CPU")
    if ctx.get("num_cpus"):
        machine += f", {ctx['num_cpus']} CPUs"
    if ctx.get("host_name"):
        machine += f" ({ctx['host_name']})"
    date = str(ctx.get("date", "")).replace("T", " ") or NOT_RECORDED
    commit = commit_text(run, short=True)
    others = other_builds(run)
    if others:
        commit += f"; {len(others)} other file(s) from another build"
    return [["machine", machine], ["date", date], ["preset", run.preset or NOT_RECORDED],
            ["attnbench", run.version or NOT_RECORDED], ["commit", commit],
            ["compiler", ctx.get("compiler", NOT_RECORDED)]]


def provenance_item(table: Points) -> str:
    """The method section's bullet on the build: version, commit, compiler and flags, preset, and which
    of the study's files next to the run record the same build, another, or none."""
    run = table.runs[0]
    ctx = run.context
    build = []
    if "compiler" in ctx:
        build.append(f"compiler {ctx['compiler']}" + (f" ({fmt.code(ctx['cxx_flags'])})" if ctx.get("cxx_flags") else ""))
    build.append(f"preset {fmt.code(run.preset) if run.preset else NOT_RECORDED}")
    if run.git_commit is None and run.version is None:
        text = (f"`{run.path.name}` predates the benchmark's provenance fields (`attnbench_version`, `git_commit`, "
                f"`git_dirty`): the version and commit it was measured with are not recorded; "
                + ", ".join(build) + ".")
    else:
        text = (f"Measured by attnbench {run.version or '(version not recorded)'} built from commit {commit_text(run)}; "
                + ", ".join(build) + ".")
    same, others, unrecorded = study_builds(run)
    files = lambda names: ", ".join(f"`{name}`" for name in names)  # noqa: E731
    if same:
        text += f" {files(same)} next to it record{'s' if len(same) == 1 else ''} the same build."
    if others:
        text += (" Files next to it from another build: "
                 + ", ".join(f"`{name}` ({fmt.code(commit[:SHORT_HASH]) if commit else 'another version'})"
                             for name, commit in others)
                 + "; a ratio between their points and this file's compares two builds.")
    if unrecorded and run.git_commit is not None:
        text += f" {files(unrecorded)} record{'s' if len(unrecorded) == 1 else ''} no build."
    return text


# --- noise and skipped --------------------------------------------------------------------------

def noise(doc: Document, table: Points) -> None:
    s = doc.section("Noise")
    spread = analysis.cv_spread(table)
    noisy = analysis.noisy(table)
    text = ("Each point is repeated (Google Benchmark repetitions) and its coefficient of variation (CV = standard "
            "deviation / mean of the real time across repetitions) measures the noise.")
    if spread is not None:
        text += (f" Over the {spread.count} measured points the median CV is {fmt.pct(100 * spread.median, 2)} and "
                 f"the largest {fmt.pct(100 * spread.largest, 1)}; {len(noisy)} are above "
                 f"{fmt.pct(100 * analysis.CV_FLAG, 0)} and flagged below.")
    once, repetitions = analysis.one_call_points(table)
    if once:
        text += (f" {len(once)} points run one call per repetition (`iterations:1` in the name, a long call), so "
                 f"their CV rests on only {' or '.join(str(v) for v in repetitions)} calls.")
    s.add(Paragraph(text))
    if noisy:
        passes = _pass_column(table)
        rows = [[fmt.code(r.kernel), r.shape, str(r.d), str(r.threads), "yes" if r.causal else "no"]
                + ([r.pass_] if passes else [])
                + [fmt.pct(100 * r.time_ms_cv), str(r.repetitions), fmt.ms(r.time_ms_median)] for r in noisy]
        s.add(Table(["kernel", "shape", "d", "threads", "causal"] + (["pass"] if passes else [])
                    + ["CV of time", "repetitions", "median time"], rows,
                    align="llrrl" + ("l" if passes else "") + "rrr",
                    caption=f"Points with CV above {fmt.pct(100 * analysis.CV_FLAG, 0)}:"))


def _pass_column(table: Points) -> bool:
    """Do the point tables need a `pass` column (the run has backward points)?"""
    return table.passes() != ["forward"]


def skipped(doc: Document, table: Points) -> None:
    s = doc.section("Skipped points")
    skipped = analysis.skipped_points(table)
    if not skipped:
        s.add(Paragraph("No point was skipped."))
        return
    kinds = analysis.skip_reasons(table)
    s.add(Paragraph(
        f"{len(skipped)} points were not measured; the benchmark records each with its reason (one error entry "
        f"per repetition in the JSON) instead of leaving it out silently: "
        + "; ".join(f"{len(rows)} × “{rows[0].skip_reason if len(rows) == 1 else kind.replace('#', '…')}”"
                    for kind, rows in kinds.items()) + "."))
    passes = _pass_column(table)
    rows = [[fmt.code(r.kernel), r.shape, str(r.d), str(r.threads), "yes" if r.causal else "no"]
            + ([r.pass_] if passes else []) + [r.skip_reason] for r in skipped]
    s.add(Table(["kernel", "shape", "d", "threads", "causal"] + (["pass"] if passes else []) + ["reason"], rows,
                align="llrrl" + ("l" if passes else "") + "l"))


def method(doc: Document, table: Points) -> None:
    s = doc.section("How the numbers are made")
    run = table.runs[0]
    s.add(Bullets([
        "Each point is one head, q_len = kv_len = n, fp32, the inputs made and touched once outside the timed loop; "
        "times are Google Benchmark's real time per call, median over the repetitions"
        + ("; comparisons between points (the fastest kernel of a cell, where tiled overtakes naive, flatness in n) "
           "read each point's fastest repetition instead, since a neighbour on the host only ever adds time to a "
           "compute-bound call, and call a difference within noise when it is "
           + analysis.noise_rule(table) + "." if analysis.compares_minimums(table) else "."),
        ("The repetitions of every point were interleaved at random across the whole matrix "
         "(`--benchmark_enable_random_interleaving`), so the two sides of every ratio between points were spread "
         "over the same minutes, and a point's spread includes the host's drift over the run." if run.context.get("repetitions_interleaved") == "true" else
         "The points ran one after another, each point's repetitions back to back: a ratio between two points "
         "compares times taken minutes apart, and a point's CV does not include the host's drift between them, "
         "so leads of a few percent may not hold in another run."),
        "GFLOP/s = 4 × scored query-key pairs × d / time (pairs = n², or n(n+1)/2 when causal): the two matrix "
        "products' multiply-adds, not the softmax; `pct_peak` divides it by the measured FMA peak of that thread count.",
        *([] if not _pass_column(table) else [
            "A backward point (`pass:backward`: attention_backward alone, on the O and LSE of an untimed forward) is "
            "credited with 2.5 times those FLOPs and a training step (`pass:forward+backward`) with 3.5 times, as "
            "FlashAttention's benchmarks count them; each backward kernel's gradients pass the tests' criterion "
            "(`testing/backward.hpp`) on a " + run.backward_check_phrase() + ", per head dim and thread count, before any of its "
            "points is timed (`oracle_error_ratio`: the largest error over the allowed one; a kernel that fails it "
            "is recorded as failed, not timed)."]),
        "`scratch_bytes` is the kernel's measured workspace peak (packed K and V included, summed over worker "
        "threads); `score_matrix_bytes` = 4n²; `rss_peak_bytes` is the process's resident high-water mark; "
        "`bytes_moved` is the compulsory-traffic model of the roofline.",
        "Exponents and slopes are ordinary least squares of ln y on ln n (`python/attnbench_report/fit.py`); memory "
        "extrapolations are least squares of bytes on n² and n (naive) or n and 1 (tiled), non-negative terms.",
        f"The machine's ceilings are measured by the same program before the matrix: an FMA loop over "
        f"independent accumulators and a STREAM-like triad, on 1 and {analysis.threads_all(table)} threads.",
        f"Source: `{run.path.name}` ({run.label}); the figures are written next to it as PNG (for this Markdown) and SVG "
        f"(inlined in report.html).",
        provenance_item(table),
    ]))
