"""The ring window next to a run (ring_window.json, written by bench/ring_window.py): the machine and
preset it ran with and its raw repetitions, summarised by analysis/ring.py."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..analysis import ring as analysis_ring

FILE_NAME = "ring_window.json"


@dataclass
class RingWindow:
    path: Path
    cpu: str
    preset: str
    d: int
    cores: int  # cores of the modelled node (this machine's)
    version: str
    rows: list  # analysis_ring.Row per (n, causal)

    @property
    def core_flops(self) -> float:
        return max(r.core_flops for r in self.rows)

    def model(self) -> list:
        return analysis_ring.model(self.core_flops, self.d, self.cores)

    def model_at(self, nodes) -> list:
        return analysis_ring.model(self.core_flops, self.d, self.cores, nodes=[int(p) for p in nodes])


def load(path: Path) -> RingWindow:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        points = data["points"]
        for p in points:
            for field in ("n", "causal", "config", "kernel", "repetitions"):
                if field not in p:
                    raise ValueError(f"a point without {field!r}")
        rows = analysis_ring.summarise(points)
        if not rows:
            raise ValueError("no point")
        return RingWindow(Path(path), str(data.get("cpu", "")), str(data.get("preset", "")), int(data["d"]),
                          int(data["cores"]), str(data.get("version", "")), rows)
    except (KeyError, TypeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not a ring window ({type(error).__name__}: {error})") from error
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from error


def load_next_to(results_path: Path) -> RingWindow | None:
    """The ring window next to a run's results.json, or None when the run has none."""
    path = Path(results_path).parent / FILE_NAME
    return load(path) if path.is_file() else None
