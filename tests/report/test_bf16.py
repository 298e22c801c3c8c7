"""The section "bf16 against fp32" on hand-made points of known ratios: the forward's and the
backward's tables, and the explanation the measured peaks call for (a bf16 product peak under the
FMA peak: bf16 can only be slower, and says so; over it: the gain with d)."""
from __future__ import annotations

import unittest

import support
from attnbench_report.document import Document
from attnbench_report.model import MeasuredPhases
from attnbench_report.narrative import bf16


def point(kernel, n, d, ms, threads=1, pass_="forward"):
    factor = {"forward": 1.0, "backward": 2.5}[pass_]
    flops = factor * 4.0 * n * n * d
    suffix = "" if pass_ == "forward" else f"/pass:{pass_}"
    return (f"{kernel}/n:{n}/d:{d}/threads:{threads}/causal:0{suffix}", ms,
            {"GFLOP/s": flops / (ms * 1e6), "flops_per_call": flops, "scratch_bytes": 1e6, "bytes_moved": 1e6})


def table(bf16_peak: float, amx_peak: float | None = None):
    """fp32 and the vdpbf16ps kernel at 2 points (forward and backward); with `amx_peak`, the AMX
    kernel too, 4x the fp32 speed."""
    fp32, b16, amx = "tiled/simd/avx512f", "tiled/simd-bf16/avx512bf16", "tiled/simd-bf16/amxbf16"
    points = []
    for d in (64, 128):
        points += [point(fp32, 1024, d, 2.0 * d / 64), point(b16, 1024, d, 4.0 * d / 64),
                   point(fp32, 1024, d, 5.0 * d / 64, pass_="backward"),
                   point(b16, 1024, d, 8.0 * d / 64, pass_="backward")]
        if amx_peak:
            points.append(point(amx, 1024, d, 0.5 * d / 64))
    context = {"host_name": "synthetic", "num_cpus": 2, "threads_all": "2", "fma_peak_gflops_threads_1": "200",
               "bf16_peak_gflops_threads_1": str(bf16_peak), "dispatch tiled/simd": fp32}
    if amx_peak:
        context.update({"amx_peak_gflops_threads_1": str(amx_peak), "dispatch tiled/simd-bf16": amx})
    return support.load_points(points, context)


def text_of(points, phases=None) -> str:
    """The section's paragraphs, bullets and table rows (cells joined by " | ")."""
    doc = Document("t", "s")
    bf16.section(doc, points, 2, phases)
    return support.document_text(doc)


class Bf16Section(unittest.TestCase):
    def test_forward_and_backward_ratios_from_the_points(self):
        text = text_of(table(100.0))
        self.assertIn("bf16 runs 0.500x to 0.500x the speed of fp32", text)
        self.assertIn("1,024 | 64 | 1 thread | 5.00 ms | 8.00 ms | 0.625x", text)
        self.assertIn("The bf16 backward runs 0.625x to 0.625x the speed of the fp32 one (median 0.625x over 2 points)",
                      text)
        self.assertIn("the backward 0.625x (median over 2 points)", bf16.summary_item(table(100.0)))

    def test_a_slower_bf16_peak_is_named_as_the_cause(self):
        slow, fast = text_of(table(100.0)), text_of(table(400.0))
        self.assertIn("`vdpbf16ps` delivers 0.500x to 0.500x of the fp32 FMA rate", slow)
        self.assertNotIn("The gain grows with d", slow)
        self.assertNotIn("vdpbf16ps` delivers", fast)
        self.assertIn("The gain grows with d", fast)

    def test_an_amx_kernel_is_its_own_row_against_its_own_peak(self):
        # at d = 64, 1,024: 0.5 ms is 4 n^2 d / 0.5 ms = 537 GFLOP/s, 16.8% of a 3,200 GFLOP/s tile peak
        text = text_of(table(100.0, amx_peak=3200.0))
        self.assertIn("`tiled/simd-bf16/amxbf16` | 1,024 | 64 | 1 thread | no | 2.00 ms | 0.500 ms | 4.00x | ", text)
        self.assertIn("`tiled/simd-bf16/amxbf16` runs 4.00x to 4.00x the speed of fp32", text)
        self.assertIn("of the AMX tile peak", text)
        self.assertIn("On AMX tiles the kernel runs 8.00x to 8.00x the speed of `tiled/simd-bf16/avx512bf16`", text)
        self.assertIn("The AMX tile peak: 3,200 GFLOP/s on 1 thread (16.0x the FMA peak)", text)
        self.assertNotIn("Not measured here: AMX tiles", text)
        self.assertIn("Not measured here: AMX tiles", text_of(table(100.0)))
        self.assertIn("bf16 products (`tiled/simd-bf16/amxbf16`): 4.00x to 4.00x",
                      bf16.summary_item(table(100.0, amx_peak=3200.0)))

    def test_phases_each_product_of_its_own_peak_and_the_softmax_share(self):
        def measured(kernel, score, softmax, blend):
            all_ = score + softmax + blend
            return MeasuredPhases(kernel, 1024, 128, {"all": all_, "score": score, "softmax": softmax,
                                                      "blend": blend, "pack": 0.1},
                                  {"all": 1.0, "score": score / all_, "softmax": softmax / all_,
                                   "blend": blend / all_, "pack": 0.0})
        # one product at n = 1024, d = 128: 2 n^2 d = 268 MFLOP; 2.684 ms is 100 GFLOP/s
        phases = [measured("tiled/simd/avx512f", 1.342, 0.5, 1.342),
                  measured("tiled/simd-bf16/avx512bf16", 2.684, 0.5, 2.684)]
        text = text_of(table(100.0), phases)
        self.assertIn("`tiled/simd/avx512f` | 1,024 | 128 | 3.18 ms | 1.34 ms (100%) | 0.500 ms (16%) | 1.34 ms (100%)",
                      text)
        self.assertIn("`tiled/simd-bf16/avx512bf16` | 1,024 | 128 | 5.87 ms | 2.68 ms (100%) | 0.500 ms (9%)", text)
        self.assertIn("the bf16 products take 2.00x the fp32 products' time here, so the softmax weighs less", text)
        self.assertNotIn("bf16 kernel's phases (the phases window timed float32 kernels only)", text)
        self.assertIn("bf16 kernel's phases (the phases window timed float32 kernels only)", text_of(table(100.0)))


if __name__ == "__main__":
    unittest.main()
