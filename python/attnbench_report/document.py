"""The report as data: sections of paragraphs, bullet lists, tables and figures. The text modules
build it; render.py writes it as Markdown (for GitHub) and as one self-contained HTML page.

Inline markup in text and table cells is a small subset of Markdown that both outputs understand:
`code` and **bold**."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .formatting import slug


@dataclass
class Paragraph:
    text: str
    kind: str = "paragraph"


@dataclass
class Bullets:
    items: list
    kind: str = "bullets"


@dataclass
class Table:
    header: list
    rows: list
    align: str = ""  # one letter per column, l or r; default: first left, others right
    caption: str = ""
    kind: str = "table"

    def alignment(self) -> str:
        return self.align or ("l" + "r" * (len(self.header) - 1))


@dataclass
class Figure:
    file: object  # plotting.FigureFile
    caption: str
    kind: str = "figure"


@dataclass
class Section:
    title: str
    blocks: list = field(default_factory=list)

    @property
    def anchor(self) -> str:
        return slug(self.title)

    def add(self, *blocks) -> "Section":
        self.blocks.extend(b for b in blocks if b is not None)
        return self


@dataclass
class Document:
    title: str
    subtitle: str
    sections: list = field(default_factory=list)
    # The header under the title: [label, value] pairs (machine, date, preset, version, commit, ...),
    # shown as one row of a table, so a quoted report carries what it was measured on and built from.
    header: list = field(default_factory=list)

    def section(self, title: str) -> Section:
        section = Section(title)
        self.sections.append(section)
        return section

    def figure(self, file, caption: str, series: str = "") -> Figure:
        """A figure captioned "Figure <series><k>. caption", k counting the series' figures so far."""
        tag = f"Figure {series}"
        number = 1 + sum(1 for s in self.sections for b in s.blocks
                         if b.kind == "figure" and re.match(re.escape(tag) + r"\d", b.caption))
        return Figure(file, f"{tag}{number}. {caption}")
