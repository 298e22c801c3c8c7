"""docs_test: the code in README.md and docs/ runs, its links resolve, and the README's results table is the
committed run's.

    python tests/docs_test.py --source SOURCE_DIR --build BUILD_DIR [--no-cpp] [-v]

A fenced block is runnable when the line right before its opening fence is `<!-- test -->`:
- ```sh: run by bash (-e) in a scratch folder where build/, .venv/, python/, reports/, scripts/ and tests/
  link to the tree's (build/ to BUILD_DIR), so files a block writes stay in the scratch folder;
- ```python: run by this Python with PYTHONPATH=BUILD_DIR/python (the built attnbench module) and the
  source's python/ (the report package), in the scratch folder;
- ```cpp: compiled and run against BUILD_DIR installed into a fresh prefix, as tests/consumer_test.cmake does
  (one CMake project, one executable per block); --no-cpp leaves them out.
Every relative link of those files must name an existing file (anchors are not checked). The README's table
between readme_table.MARKERS must equal `python -m attnbench_report.readme_table` on the run it names.
Run by ctest as docs_test (tests/CMakeLists.txt).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

MARK = "<!-- test -->"
FENCE = re.compile(r"^```([A-Za-z0-9_+-]*)\s*$")
LINK = re.compile(r"\]\(([^)\s]+)\)")
ARGS: argparse.Namespace


def doc_files(source: Path) -> list:
    return [source / "README.md"] + sorted((source / "docs").rglob("*.md"))


def blocks(path: Path) -> list:
    """(language, code, line, runnable) of every fenced block in a Markdown file."""
    lines = path.read_text(encoding="utf-8").split("\n")
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        runnable = start > 0 and lines[start - 1].strip() == MARK
        out.append((m.group(1), "\n".join(lines[start + 1:j]) + "\n", start + 1, runnable))
        i = j + 1
    return out


def runnable(lang: str) -> list:
    found = []
    for path in doc_files(ARGS.source):
        for block_lang, code, line, marked in blocks(path):
            if marked and block_lang == lang:
                found.append((f"{path.relative_to(ARGS.source)}:{line}", code))
    return found


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="docs_test_"))
    links = {"build": ARGS.build}
    for name in (".venv", "python", "reports", "scripts", "tests"):
        links[name] = ARGS.source / name
    for name, target in links.items():
        if target.exists():
            (folder / name).symlink_to(target.resolve())
    return folder


def environment() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ARGS.build / "python"), str(ARGS.source / "python")])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.setdefault("MPLBACKEND", "Agg")
    return env


class RunnableBlocks(unittest.TestCase):
    def run_blocks(self, lang: str, command):
        found = runnable(lang)
        self.assertTrue(found, f"no runnable {lang} block in README.md or docs/")
        for where, code in found:
            with self.subTest(block=where):
                folder = scratch()
                try:
                    file = folder / ("block.sh" if lang == "sh" else "block.py")
                    file.write_text(code, encoding="utf-8")
                    start = time.monotonic()
                    done = subprocess.run(command + [str(file)], cwd=folder, env=environment(), capture_output=True,
                                          text=True, timeout=120)
                    if ARGS.verbose:
                        print(f"{where}: {time.monotonic() - start:.1f} s", file=sys.stderr)
                    self.assertEqual(done.returncode, 0, f"{where} failed ({done.returncode}):\n{code}\n"
                                     f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}")
                finally:
                    shutil.rmtree(folder, ignore_errors=True)

    def test_shell_blocks(self):
        self.run_blocks("sh", ["bash", "-e"])

    def test_python_blocks(self):
        self.run_blocks("python", [sys.executable])

    def test_cpp_blocks(self):
        if ARGS.no_cpp:
            self.skipTest("--no-cpp")
        found = runnable("cpp")
        self.assertTrue(found, "no runnable cpp block in README.md or docs/")
        work = Path(tempfile.mkdtemp(prefix="docs_test_cpp_"))
        try:
            def step(*command):
                done = subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=600)
                self.assertEqual(done.returncode, 0, f"{' '.join(map(str, command))}:\n{done.stdout[-4000:]}\n"
                                 f"{done.stderr[-4000:]}")
                return done

            step("cmake", "--install", str(ARGS.build), "--prefix", str(work / "prefix"))
            project = work / "project"
            project.mkdir()
            names = []
            for index, (where, code) in enumerate(found):
                name = f"block{index}"
                (project / f"{name}.cpp").write_text(f"// {where}\n{code}", encoding="utf-8")
                names.append((name, where))
            cmake = ["cmake_minimum_required(VERSION 3.25)", "project(docs_blocks LANGUAGES CXX)",
                     "set(CMAKE_CXX_STANDARD 20)", "find_package(attnbench 0.2 CONFIG REQUIRED)"]
            for name, _ in names:
                cmake += [f"add_executable({name} {name}.cpp)",
                          f"target_link_libraries({name} PRIVATE attnbench::attnbench)"]
            (project / "CMakeLists.txt").write_text("\n".join(cmake) + "\n", encoding="utf-8")
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            step("cmake", "-S", str(project), "-B", str(work / "build"), *generator, "-DCMAKE_BUILD_TYPE=Release",
                 f"-DCMAKE_PREFIX_PATH={work / 'prefix'}")
            step("cmake", "--build", str(work / "build"))
            for name, where in names:
                with self.subTest(block=where):
                    done = subprocess.run([str(work / "build" / name)], capture_output=True, text=True, timeout=120)
                    self.assertEqual(done.returncode, 0, f"{where} exited {done.returncode}:\n{done.stdout}\n"
                                     f"{done.stderr}")
        finally:
            shutil.rmtree(work, ignore_errors=True)


class Links(unittest.TestCase):
    def test_relative_links_name_existing_files(self):
        for path in doc_files(ARGS.source):
            text = path.read_text(encoding="utf-8")
            for target in LINK.findall(text):
                if re.match(r"[a-z]+:", target) or target.startswith("#"):
                    continue
                file = target.split("#", 1)[0]
                with self.subTest(file=str(path.relative_to(ARGS.source)), link=target):
                    self.assertTrue((path.parent / file).exists(), f"{path.name}: {target} does not exist")


class ResultsTable(unittest.TestCase):
    def test_readme_table_is_the_committed_runs(self):
        sys.path.insert(0, str(ARGS.source / "python"))  # the report package from the source tree
        from attnbench_report import readme_table

        readme = (ARGS.source / "README.md").read_text(encoding="utf-8")
        shown = readme_table.between_markers(readme)
        run = re.search(r"Run \[`([^`]+)`\]\(reports/runs/", shown)
        self.assertIsNotNone(run, "the README's table names no run under reports/runs/")
        here = os.getcwd()
        os.chdir(ARGS.source)
        try:
            want = readme_table.table_markdown(Path("reports/runs") / run.group(1))
        finally:
            os.chdir(here)
        self.assertEqual(shown, want, "README.md's results table differs from the committed run's; regenerate it: "
                         "PYTHONPATH=python .venv/bin/python -m attnbench_report.readme_table "
                         f"reports/runs/{run.group(1)} --write README.md")


def main() -> int:
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--build", type=Path, required=True)
    parser.add_argument("--no-cpp", action="store_true", help="leave the C++ blocks out (no compile)")
    parser.add_argument("-v", "--verbose", action="store_true")
    ARGS, rest = parser.parse_known_args()
    ARGS.source, ARGS.build = ARGS.source.resolve(), ARGS.build.resolve()
    program = unittest.main(argv=[sys.argv[0]] + rest, exit=False, verbosity=2 if ARGS.verbose else 1)
    return 0 if program.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
