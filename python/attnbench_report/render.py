"""Writes a Document as report.md (GitHub Markdown, figures as relative PNG links) and as
report.html (one self-contained page: figures inlined as SVG, no external file or network)."""
from __future__ import annotations

import html
import os
import re
from pathlib import Path

import jinja2
from markupsafe import Markup

def _environment(autoescape: bool) -> jinja2.Environment:
    # The templates are the package's data (attnbench_report/templates/), found wherever it is installed.
    env = jinja2.Environment(loader=jinja2.PackageLoader("attnbench_report"), autoescape=autoescape,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined)
    env.filters["md_cell"] = lambda text: str(text).replace("|", "\\|").replace("\n", " ")
    env.filters["inline"] = inline_html
    return env


def inline_html(text: str):
    """`code` and **bold** to HTML, everything else escaped."""
    escaped = html.escape(str(text), quote=False)
    escaped = re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)
    escaped = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", escaped)
    return Markup(escaped)


def _svg_inline(path: Path) -> str:
    """The <svg> element of a matplotlib SVG file, without its XML prologue and DOCTYPE."""
    text = Path(path).read_text(encoding="utf-8")
    start = text.find("<svg")
    if start < 0:
        raise ValueError(f"{path}: no <svg> element")
    return text[start:]


def write_markdown(document, out_dir: Path, name: str = "report.md") -> Path:
    out_dir = Path(out_dir)
    env = _environment(autoescape=False)

    def relative(path):
        return Path(os.path.relpath(Path(path).resolve(), out_dir.resolve())).as_posix()

    env.filters["relative"] = relative
    text = env.get_template("report.md.j2").render(doc=document)
    text = re.sub(r"\n{3,}", "\n\n", text)
    path = out_dir / name
    path.write_text(text, encoding="utf-8")
    return path


def write_html(document, out_dir: Path, name: str = "report.html") -> Path:
    out_dir = Path(out_dir)
    env = _environment(autoescape=True)
    env.filters["svg"] = lambda path: Markup(_svg_inline(path))
    text = env.get_template("report.html.j2").render(doc=document)
    path = out_dir / name
    path.write_text(text, encoding="utf-8")
    return path
