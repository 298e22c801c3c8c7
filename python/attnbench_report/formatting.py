"""How numbers and names read in the report's text and tables: decimal units, a few significant
digits, kernel names as code."""
from __future__ import annotations

import math


def sig(x: float, digits: int = 3) -> str:
    """x to `digits` significant digits, without scientific notation for everyday sizes."""
    if x is None or not math.isfinite(x):
        return "n/a"
    if x == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(x)))
    decimals = max(0, digits - 1 - magnitude)
    text = f"{x:.{decimals}f}"
    if abs(x) >= 10 ** digits:
        text = f"{round(x, -(magnitude - digits + 1)):,.0f}"
    return text


def bytes_(x: float) -> str:
    """Bytes in decimal units (kB, MB, GB, TB): 128000^2 x 4 reads 65.5 GB."""
    if x is None or not math.isfinite(x):
        return "n/a"
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(x) >= scale:
            return f"{sig(x / scale)} {unit}"
    return f"{x:.0f} B"


def ms(x: float) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{sig(x)} ms"


def us(x: float) -> str:
    """Microseconds: 150.8 -> "151 µs"."""
    return "n/a" if x is None or not math.isfinite(x) else f"{sig(x)} µs"


def pct(x: float, digits: int = 1) -> str:
    """A percentage given in percent (50 -> "50.0%")."""
    return "n/a" if x is None or not math.isfinite(x) else f"{x:.{digits}f}%"


def ratio(x: float) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{sig(x)}x"


def code(text) -> str:
    """A kernel name, context value or file name as inline code: `tiled/simd/avx2`."""
    return f"`{text}`"


def threads(t: int, all_threads: int) -> str:
    """ "1 thread", "4 threads", "8 threads (all)" when t is the run's all-cores count."""
    return "1 thread" if t == 1 else f"{t} threads" + (" (all)" if t == all_threads else "")


def count(n: float) -> str:
    """An integer with thousands separators: 128,000."""
    return f"{int(round(n)):,}"


def slug(text: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens."""
    kept = "".join(c for c in text.lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")
