// The benchmark's contenders window (attnbench_bench --contenders): every contender
// (contender.hpp) at the contender preset's points, registered with Google Benchmark.
#pragma once

#include <cstddef>
#include <map>
#include <string>

namespace attnbench::bench {

// Registers the window's points for `preset_name` ("quick" or "full") with `all_threads` cores.
// `peak_flops` (FLOP/s per thread count, for pct_peak) must outlive the run; `predicted` gets
// each registered point's predicted seconds, for the progress line.
void register_contenders(const std::string& preset_name, std::size_t all_threads,
                         const std::map<std::size_t, double>& peak_flops,
                         std::map<std::string, double>& predicted);

}  // namespace attnbench::bench
