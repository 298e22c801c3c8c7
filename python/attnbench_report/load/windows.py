"""The contenders' windows next to a run's results.json (contenders.json, python_contenders.json):
each window's contenders as its JSON context describes them, and its points, one window per pass it
measured. A ratio is only ever read within one window."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .results import WINDOW_FILES, Record, Run, Table, _records_of


@dataclass(frozen=True)
class Contender:
    """One contender as its window's JSON context describes it ("contender <name>")."""

    name: str
    role: str  # "attnbench", "baseline" or "peer"
    library: str
    version: str
    threading: str
    fused: bool
    how: str


@dataclass
class Window:
    """One comparison window: its points (whose repetitions were interleaved), its contenders and
    its context."""

    name: str  # "contenders" or "python"
    path: Path
    context: dict
    table: "Table"
    contenders: dict  # name -> Contender

    def role(self, name: str) -> str:
        c = self.contenders.get(name)
        return c.role if c else ""


def load_windows(run: Run) -> list:
    """The contenders' windows next to a run's results.json (none if the files are absent)."""
    windows = []
    for file in WINDOW_FILES:
        path = run.path.parent / file
        if not path.is_file():
            continue
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        context = data.get("context", {})
        window_run = Run(index=run.index, label=run.label, path=path, context=context)
        contenders = {}
        for key, value in context.items():
            if key.startswith("contender "):
                d = json.loads(value)
                name = key.split(" ", 1)[1]
                contenders[name] = Contender(name, d.get("role", ""), d.get("library", ""), d.get("version", ""),
                                             d.get("threading", ""), bool(d.get("fused")), d.get("how", ""))
        records = _records_of(window_run, data.get("benchmarks", []))
        name = str(context.get("attnbench_window", path.stem))
        # One window per pass it measured (the forward; a training step; decode through a cache):
        # ratios are read between contenders of one pass, each pass a table and figure row of its own.
        for pass_, label in WINDOW_PASSES:
            mine = [r for r in records if _window_pass(r) == pass_]
            if mine or (pass_ == "forward" and not records):  # an empty window still says it ran
                windows.append(Window(name + label, path, context, Table(mine, [window_run]), contenders))
    return windows


# A window's passes, in report order, and what each adds to the window's name.
WINDOW_PASSES = (("forward", ""), ("forward+backward", ", training step"), ("prefill", ", prefill"),
                 ("decode", ", decode"))


def _window_pass(r: "Record") -> str:
    """The pass of a window's record: decode for fewer query rows than keys (the decode family, or
    several heads), prefill for a prompt over several heads (as many rows as keys), else the pass its
    name gives."""
    if r.family in ("decode", "gqa"):
        return "decode" if r.q_len < r.kv_len else "prefill"
    return r.pass_
