"""The contenders' windows: the loader's statuses and roles, the leads over the strongest peer, and
the report's section "Against the alternatives" built from a real quick run's windows."""
import json
import shutil
import tempfile
import unittest
from pathlib import Path

import support  # noqa: F401

from attnbench_report.analysis import contenders as ac
from attnbench_report.load import results as loader
from attnbench_report.load import windows
from attnbench_report.narrative import contenders as narrative_contenders
from attnbench_report import cli as report

FIXTURES = support.ROOT / "tests" / "fixtures"


def entry(name, ms, gflops, rep=0, error=None):
    e = {"name": name, "run_name": name, "run_type": "iteration", "repetitions": 1, "repetition_index": rep,
         "iterations": 1, "real_time": ms, "time_unit": "ms", "GFLOP/s": gflops}
    if error:
        e.update({"error_occurred": True, "error_message": error})
    return e


def describe(role, fused=False):
    return json.dumps({"role": role, "library": "x", "version": "1", "threading": "t", "fused": fused, "how": "h"})


class WindowsTest(unittest.TestCase):
    def windows(self, benchmarks, contenders, name="contenders"):
        """The windows the loader reads from one window file of these benchmarks and contenders."""
        tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, tmp, True)
        shutil.copy(support.FIXTURE, tmp / "results.json")
        context = {"attnbench_window": name}
        context.update({f"contender {k}": v for k, v in contenders.items()})
        file = "contenders.json" if name == "contenders" else "python_contenders.json"
        (tmp / file).write_text(json.dumps({"context": context, "benchmarks": benchmarks}))
        return windows.load_windows(loader.load([tmp]).runs[0])

    def window(self, benchmarks, contenders):
        return self.windows(benchmarks, contenders)[0]

    def test_roles_come_from_the_description_and_the_lead_is_over_the_fastest_peer(self):
        # A contender named like an attnbench kernel but described as a peer is a peer.
        w = self.window([
            entry("ours/k/n:64/d:8/threads:1/causal:0", 1.0, 50.0),
            entry("tiled/simd/n:64/d:8/threads:1/causal:0", 1.0, 80.0),
            entry("slow/peer/n:64/d:8/threads:1/causal:0", 1.0, 10.0),
            entry("ours/k/n:128/d:8/threads:1/causal:0", 1.0, 60.0),
            entry("slow/peer/n:128/d:8/threads:1/causal:0", 1.0, 20.0),
        ], {"ours/k": describe("attnbench", True), "tiled/simd": describe("peer"), "slow/peer": describe("peer")})
        leads = ac.leads(w)
        self.assertEqual([(l.n, l.peer.kernel) for l in leads], [(64, "tiled/simd"), (128, "slow/peer")])
        self.assertAlmostEqual(leads[0].ratio, 50.0 / 80.0)
        self.assertAlmostEqual(leads[1].ratio, 3.0)
        line = narrative_contenders.headline([w])
        self.assertIn("0.625x (`tiled/simd`, n = 64", line)  # the peer ahead is reported, not hidden
        self.assertIn("ahead at 1 of 2 points", line)

    def test_each_pass_is_a_window_and_a_fused_peer_is_explained_by_threading(self):
        decode = "q:1/kv:4096/heads:32/kv_heads:8/d:128"
        ws = self.windows([
            entry("ours/k/n:64/d:8/threads:1/causal:0", 1.0, 50.0),
            entry("fused/peer/n:64/d:8/threads:1/causal:0", 1.0, 40.0),
            entry("ours/k/n:64/d:8/threads:1/causal:0/pass:forward+backward", 1.0, 30.0),
            entry("fused/peer/n:64/d:8/threads:1/causal:0/pass:forward+backward", 1.0, 20.0),
            entry("ours/k/n:64/d:8/threads:2/causal:0/pass:forward+backward", 1.0, 57.0),
            entry("fused/peer/n:64/d:8/threads:2/causal:0/pass:forward+backward", 1.0, 25.0),
            entry(f"ours/k/{decode}/threads:1/causal:0", 1.0, 9.0),
            entry(f"fused/peer/{decode}/threads:1/causal:0", 1.0, 3.0),
        ], {"ours/k": describe("attnbench", True), "fused/peer": describe("peer", True)}, "python")
        self.assertEqual([w.name for w in ws], ["python", "python, training step", "python, decode"])
        self.assertEqual([len(w.table) for w in ws], [2, 4, 2])
        self.assertEqual([[round(l.ratio, 3) for l in ac.leads(w)] for w in ws], [[1.25], [1.5, 2.28], [3.0]])
        why = narrative_contenders._why(ws[1])
        self.assertIn("fused too (`fused/peer`)", why)
        self.assertIn("n = 64, d = 8: attnbench 1.90x, `fused/peer` 1.25x", why)

    def test_a_compute_bound_lead_divides_the_fastest_repetitions_a_decode_lead_the_medians(self):
        decode = "q:1/kv:4096/heads:32/kv_heads:8/d:128"

        def reps(name, times, flops=4e9):  # GFLOP/s of each repetition: flops / time
            return [dict(entry(name, t, flops / t / 1e6, rep=i), flops_per_call=flops, repetitions=len(times))
                    for i, t in enumerate(times)]

        w, _, dw = self.windows(
            reps("ours/k/n:64/d:8/threads:1/causal:0", [10.0, 14.0, 15.0])      # median 14, fastest 10
            + reps("fused/peer/n:64/d:8/threads:1/causal:0", [12.0, 12.5, 13.0])  # median 12.5, fastest 12
            + reps("ours/k/n:64/d:8/threads:1/causal:0/pass:forward+backward", [10.0, 11.0, 12.0])
            + [entry("fused/peer/n:64/d:8/threads:1/causal:0/pass:forward+backward", 11.0, 363.6)]  # no flops
            + reps(f"ours/k/{decode}/threads:1/causal:0", [1.0, 2.0, 2.0])
            + reps(f"fused/peer/{decode}/threads:1/causal:0", [1.5, 1.5, 1.5]),
            {"ours/k": describe("attnbench", True), "fused/peer": describe("peer", True)}, "python")
        (lead,) = ac.leads(w)
        self.assertEqual(lead.basis, "fastest")
        self.assertAlmostEqual(lead.ratio, 12.0 / 10.0)  # the medians would say 12.5 / 14 < 1
        (decode_lead,) = ac.leads(dw)
        self.assertEqual(decode_lead.basis, "median")  # memory-bound: the medians
        self.assertAlmostEqual(decode_lead.ratio, 1.5 / 2.0)
        # Decode's why: each side's K/V read rate (2 x 4 bytes x 8 heads x 4096 keys x 128 over its median).
        why = narrative_contenders._why(dw)
        self.assertIn("attnbench read K and V at 16.8 GB/s, `fused/peer` at 22.4 GB/s", why)
        self.assertIn("4 query heads per K/V head", why)
        self.assertIn("fastest repetition", narrative_contenders._basis(w))

    def test_the_readme_layer_table_gives_each_window_its_own_medians_and_lead(self):
        from attnbench_report import readme_table
        decode = "q:1/kv:4096/heads:32/kv_heads:8/d:128"
        tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, tmp, True)
        shutil.copy(support.FIXTURE, tmp / "results.json")
        for file, name, peer_ms in (("python_contenders.json", "python", [4.0, 5.0, 6.0]),
                                    ("python_contenders_q8_0.json", "python q8_0", [9.0, 9.0, 30.0])):
            context = {"attnbench_window": name, "contender ours/k": describe("attnbench", True),
                       "contender fused/peer": describe("peer", True)}
            benchmarks = [entry(f"ours/k/{decode}/threads:1/causal:0", t, 1 / t, rep=i) for i, t in enumerate([2.0, 1.0, 9.0])]
            benchmarks += [entry(f"fused/peer/{decode}/threads:1/causal:0", t, 1 / t, rep=i) for i, t in enumerate(peer_ms)]
            (tmp / file).write_text(json.dumps({"context": context, "benchmarks": benchmarks}))
        text = readme_table.table_markdown(tmp)
        rows = [line for line in text.splitlines() if "| 4,096 | 1 |" in line]
        self.assertEqual(rows, ["| decode, K/V f32 | 4,096 | 1 | 2 | `fused/peer` | 5 | 2.50x |",  # medians
                                "| decode, K/V q8_0 | 4,096 | 1 | 2 | `fused/peer` | 9 | 4.50x |"])

    def test_missing_unsupported_and_failed_are_statuses_with_reasons(self):
        w = self.window([
            entry("ours/k/n:64/d:8/threads:1/causal:1", 1.0, 50.0),
            entry("a/b/n:64/d:8/threads:1/causal:1", 0, 0, error="unsupported: causal mask over several heads"),
            entry("c/d/n:64/d:8/threads:1/causal:1", 0, 0, error="missing: oneDNN (libdnnl-dev) was not found"),
            entry("e/f/n:64/d:8/threads:1/causal:1", 0, 0, error="failed: oracle check: batch 0 head 0 row 3"),
            entry("g/h/n:64/d:8/threads:1/causal:1", 0, 0, error="skipped: predicted 9 s per call"),
        ], {"ours/k": describe("attnbench", True), "a/b": describe("peer"), "c/d": describe("peer"),
            "e/f": describe("peer"), "g/h": describe("peer")})
        status = {r.kernel: (r.status, r.skip_reason) for r in w.table}
        self.assertEqual(status["a/b"], ("unsupported", "unsupported: causal mask over several heads"))
        self.assertEqual(status["c/d"][0], "missing")
        self.assertEqual(status["e/f"], ("failed", "failed: oracle check: batch 0 head 0 row 3"))
        self.assertEqual(status["g/h"], ("skipped", "predicted 9 s per call"))
        self.assertEqual(ac.leads(w), [])  # no measured peer: no ratio
        self.assertEqual(len(ac.not_measured(w)), 4)


class ReportWithWindowsTest(unittest.TestCase):
    def test_the_report_has_the_section_the_figure_and_the_headline(self):
        tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, tmp, True)
        shutil.copy(support.FIXTURE, tmp / "results.json")
        shutil.copy(FIXTURES / "quick_contenders.json", tmp / "contenders.json")
        shutil.copy(FIXTURES / "quick_python_contenders.json", tmp / "python_contenders.json")
        self.assertEqual(report.main([str(tmp)]), 0)
        md = (tmp / "report.md").read_text()
        self.assertIn("## Against the alternatives", md)
        self.assertTrue((tmp / "fig8_contenders.png").is_file())
        summary = md.split("## Summary", 1)[1].split("\n## ", 1)[0]
        self.assertIn("Against the alternatives (ratios within one interleaved window)", summary)
        self.assertIn("`onednn/primitives`", md)
        self.assertIn("`torch/sdpa`", md)
        self.assertIn("python window", md)


if __name__ == "__main__":
    unittest.main()
