"""Each point of the window runs in a worker process of its own, so that a contender that crashes
(a segfault in a native library) or hangs costs that point, recorded with the reason, and the
window goes on in a fresh worker. The worker is kept from point to point while it is healthy: it
imports the libraries and builds the contenders once, and every contender of a point still runs in
the one process, in the same interleaved rounds."""
from __future__ import annotations

import importlib
import multiprocessing
import random
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool

# The worker's state: the C helper, NumPy's OpenBLAS and the contenders by pass, made once.
_STATE: dict = {}


def _run_in_worker(factory: str, lib: str, point: dict, names: list, reps: int, min_time: float,
                   budget: float, seed: int) -> tuple:
    from .capi import Capi, OpenBlas
    from .window import run_point

    if not _STATE:
        module, function = factory.split(":")
        capi, blas = Capi(lib), OpenBlas()
        _STATE.update(capi=capi, blas=blas, by_pass=getattr(importlib.import_module(module), function)(capi, blas))
    chosen = [c for c in _STATE["by_pass"][point["pass"]] if c.name in names]
    lines = []
    entries = run_point(point, chosen, _STATE["capi"], _STATE["blas"], reps, min_time, budget, random.Random(seed),
                        lines.append)
    return entries, lines


class Isolated:
    """Runs points in a worker process; a crash or a hang fails the point's contenders, with why."""

    def __init__(self, factory: str, lib: str):
        self.factory, self.lib, self.executor = factory, lib, None

    def run(self, point: dict, names: list, reps: int, min_time: float, budget: float, seed: int,
            timeout: float, log, error_entry, point_name) -> list:
        if self.executor is None:
            self.executor = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
        future = self.executor.submit(_run_in_worker, self.factory, self.lib, point, names, reps, min_time, budget,
                                      seed)
        try:
            entries, lines = future.result(timeout=timeout)
        except BrokenProcessPool:
            why = "crashed: the point's worker process died (a contender's native code failed)"
        except FutureTimeout:
            why = f"hung: no result from the point's worker process in {timeout:.0f} s"
        else:
            for line in lines:
                log(line)
            return entries
        self.close()
        log(f"  {why}; every contender of the point recorded as failed, the window goes on")
        return [error_entry(point_name(name, point), f"failed: {why}", reps) for name in names]

    def close(self) -> None:
        if self.executor is None:
            return
        for process in list(getattr(self.executor, "_processes", {}).values()):  # a hung worker: end it
            process.kill()
        self.executor.shutdown(wait=True, cancel_futures=True)
        self.executor = None
