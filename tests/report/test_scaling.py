"""The scaling window in the report: scaling.load_file on a real quick run's scaling.json (its medians
and CVs as the JSON has them, errors, a name or counter it cannot read), the verdict on altered
copies (a point under the target), and the section "Thread scaling in rounds" in the report built
with the fixture next to the results, or without it, or with an unreadable one."""
from __future__ import annotations

import copy
import io
import json
import shutil
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import support
from attnbench_report import cli as report
from attnbench_report import scaling
from attnbench_report import verdicts
from attnbench_report.document import Document

FIXTURE = support.ROOT / "tests" / "fixtures" / "quick_scaling.json"
RAW = json.loads(FIXTURE.read_text(encoding="utf-8"))
TITLE = "Thread scaling in rounds"


def raw(prefix: str, aggregate: str = "median") -> dict:
    return next(b for b in RAW["benchmarks"] if b["run_name"].startswith(prefix + "/") and b["aggregate_name"] == aggregate)


def window_of(data: dict) -> scaling.ScalingWindow:
    folder = Path(tempfile.mkdtemp(prefix="attnbench-scaling-", dir=support.output_root()))
    (folder / scaling.FILE_NAME).write_text(json.dumps(data), encoding="utf-8")
    return scaling.load_file(folder / scaling.FILE_NAME)


def section_text(window) -> str:
    doc = Document("t", "s")
    scaling.section(doc, window)
    out = []
    for block in doc.sections[0].blocks:
        out += [block.text] if block.kind == "paragraph" else [block.caption] + [" | ".join(r) for r in block.rows]
    return "\n".join(out)


class Loader(unittest.TestCase):
    def test_points_are_the_json_medians(self):
        w = scaling.load_file(FIXTURE)
        self.assertEqual([(p.pass_, p.n, p.d, p.threads) for p in w.points], [("backward", 1024, 64, 2),
                                                                              ("forward", 1024, 64, 2)])
        p = w.points[0]
        name = f"scaling/{p.kernel}/n:1024/d:64/pass:backward/threads:2"
        med = raw(name)
        self.assertEqual((p.speedup, p.speedup_fastest, p.gflops_1, p.gflops_all, p.pct_peak_1, p.rounds),
                         (med["speedup"], med["speedup_fastest"], med["gflops_1"], med["gflops_T"], med["pct_peak_1"],
                          int(med["rounds"])))
        self.assertEqual(p.speedup_cv, raw(name, "cv")["speedup"])
        self.assertTrue(p.pinned)
        self.assertEqual(w.context["cpu_model"], RAW["context"]["cpu_model"])

    def test_errors_and_bad_files(self):
        data = copy.deepcopy(RAW)
        failed = "scaling/tiled/simd/avx2/n:64/d:8/pass:forward/threads:2/iterations:1/repeats:2/manual_time"
        data["benchmarks"].append({"name": failed, "run_name": failed, "error_occurred": True,
                                   "error_message": "failed: boom"})
        w = window_of(data)
        self.assertEqual(w.errors, {failed: "failed: boom"})
        self.assertEqual(len(w.points), 2)
        with self.assertRaisesRegex(ValueError, "is not a scaling point's name"):
            window_of({"benchmarks": [{"name": "x/y", "run_name": "x/y"}]})
        broken = copy.deepcopy(RAW)
        del next(b for b in broken["benchmarks"] if b["aggregate_name"] == "median")["speedup_fastest"]
        with self.assertRaisesRegex(ValueError, "has no counter 'speedup_fastest'"):
            window_of(broken)
        with self.assertRaisesRegex(ValueError, "not a Google Benchmark JSON file"):
            window_of({"no": "benchmarks"})


class Section(unittest.TestCase):
    def test_table_and_verdict(self):
        w = scaling.load_file(FIXTURE)
        text = section_text(w)
        for p in w.points:
            self.assertIn(f"{p.speedup:.2f}x", text)
        self.assertIn(RAW["context"]["cpu_model"], text)
        self.assertIn("pinned to it", text)
        low = scaling.below_target(w)
        read = sum(not scaling.noisy(p) for p in w.points)
        self.assertIn(f"{len(low)} of the {read} points read run 2 threads less than" if low else
                      "Every point read runs 2 threads at least 1.80x faster than one.", text)

    def test_a_point_under_the_target_is_named_unless_within_noise(self):
        data = copy.deepcopy(RAW)
        for b in data["benchmarks"]:
            if b["aggregate_name"] == "median":
                b["speedup"] = 1.5 if "/pass:forward/" in b["run_name"] else 1.9
            if b["aggregate_name"] == "cv":
                b["speedup"] = 0.01
        w = window_of(data)
        self.assertEqual([(p.pass_, p.speedup) for p in scaling.below_target(w)], [("forward", 1.5)])
        text = section_text(w)
        self.assertIn("1 of the 2 points read run 2 threads less than 1.80x faster than one: ", text)
        self.assertIn("forward d = 64, n = 1,024 (1.50x)", text)
        self.assertNotIn("Within noise", text)
        for b in data["benchmarks"]:
            if "/pass:forward/" in b["run_name"] and b["aggregate_name"] == "cv":
                b["speedup"] = 0.41
        w = window_of(data)
        self.assertEqual(scaling.below_target(w), [])
        text = section_text(w)
        self.assertIn("Every point read runs 2 threads at least 1.80x faster than one.", text)
        self.assertIn("Within noise, so not read (the speedup's cv over repetitions above 10%): "
                      "tiled/simd/avx512f forward d = 64, n = 1,024.", text)

    def test_a_point_whose_threads_shared_a_core_is_not_read(self):
        self.assertTrue(all(p.cores != p.cores for p in scaling.load_file(FIXTURE).points))  # not in older JSON
        data = copy.deepcopy(RAW)
        for b in data["benchmarks"]:
            if b["aggregate_name"] == "median":
                b["speedup"] = 1.02 if "/pass:forward/" in b["run_name"] else 1.9
                b["cores"] = 1.04 if "/pass:forward/" in b["run_name"] else 1.93
            if b["aggregate_name"] == "cv":
                b["speedup"] = 0.01
        w = window_of(data)
        self.assertEqual([(p.pass_, p.cores) for p in w.points], [("backward", 1.93), ("forward", 1.04)])
        self.assertEqual([scaling.cores_shared(p) for p in w.points], [False, True])
        self.assertEqual(scaling.below_target(w), [])
        text = section_text(w)
        self.assertIn("Every point read runs 2 threads at least 1.80x faster than one.", text)
        self.assertIn("Not read, the host having given the 2 threads under 1.5 cores' worth of FMA "
                      "throughput while they ran: tiled/simd/avx512f forward d = 64, n = 1,024 (1.04 cores, 1.02x).",
                      text)
        self.assertIn("| 1.04", text)
        forward, backward = sorted(verdicts.thread_scaling(w), key=lambda v: "forward" not in v.subject)
        self.assertTrue(forward.noise)
        self.assertFalse(backward.noise)
        for b in data["benchmarks"]:  # no point read: said so, not "every point read"
            if b["aggregate_name"] == "median":
                b["cores"] = 1.0
        text = section_text(window_of(data))
        self.assertIn("No point could be read.", text)
        self.assertNotIn("Every point read", text)
        for b in data["benchmarks"]:  # the same speedup with the cores given is read, and under the target
            if b["aggregate_name"] == "median":
                b["cores"] = 1.96
        w = window_of(data)
        self.assertEqual([p.pass_ for p in scaling.below_target(w)], ["forward"])

    def test_no_measured_point(self):
        w = window_of({"context": {}, "benchmarks": []})
        self.assertIn("holds no measured point", section_text(w))


class Report(unittest.TestCase):
    def test_in_the_report_after_the_thread_scaling_section(self):
        run_dir = Path(tempfile.mkdtemp(prefix="scaling-run-", dir=support.output_root()))
        shutil.copy(support.FIXTURE, run_dir / "results.json")
        shutil.copy(FIXTURE, run_dir / scaling.FILE_NAME)
        with redirect_stdout(io.StringIO()):
            self.assertEqual(report.main([str(run_dir)]), 0)
        md = (run_dir / "report.md").read_text(encoding="utf-8")
        titles = [line[3:] for line in md.splitlines() if line.startswith("## ")]
        self.assertEqual(titles[titles.index("Thread scaling") + 1], TITLE)

    def test_without_or_with_an_unreadable_scaling_json(self):
        md = (support.fixture_report() / "report.md").read_text(encoding="utf-8")
        self.assertNotIn(TITLE, md)
        folder = Path(tempfile.mkdtemp(prefix="attnbench-scaling-", dir=support.output_root()))
        shutil.copy(support.FIXTURE, folder / "results.json")
        (folder / scaling.FILE_NAME).write_text("{not json", encoding="utf-8")
        err = io.StringIO()
        with redirect_stderr(err):
            self.assertIsNone(report.load_scaling(folder / "results.json"))
        self.assertIn("scaling.json", err.getvalue())
        self.assertIn("leaves out its section on the scaling window", err.getvalue())


if __name__ == "__main__":
    unittest.main()
