// The benchmark's phases window (attnbench_bench --phases): where a tiled SIMD kernel's time goes,
// measured, to check the cost model's breakdown against (python/attnbench_report/model.py). Each
// point times rounds of calls on one head of one problem, on one thread: the kernel's own rows
// function over the head (`all`), and the variants that do one phase alone over the same loops
// (SimdTable::phases: the score product, the softmax's sweeps, the blend product), and the packing
// of K and V; each round in a rotated order, so that every phase's share is a ratio of calls made
// milliseconds apart.
//   phases/<kernel>/n:N/d:D/threads:1
//       counters ms_<phase> (median call time) and share_<phase> (median over rounds of the
//       phase's time over the round's `all`), for phase all, score, softmax, blend, pack; rounds.
// Every available tiled SIMD kernel by name, so that the /avx2 kernel is measured beside a wider
// one.
#pragma once

#include <cstddef>
#include <map>
#include <string>

namespace attnbench::bench {

// Registers the window's points for `preset_name` ("quick" or "full"); `predicted` gets each
// point's predicted seconds, for the progress line.
void register_phases(const std::string& preset_name, std::map<std::string, double>& predicted);

}  // namespace attnbench::bench
