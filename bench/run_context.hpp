// The JSON context every window of attnbench_bench writes: the preset and window, the CPU, memory,
// kernels' dispatch and roles, attnbench's version and git commit, compiler, library versions, and
// the machine's ceilings measured on one and on all threads (FMA peak, triad), which it also hands
// back for the points' counters.
#pragma once

#include <cstddef>
#include <map>
#include <string>

namespace attnbench::bench {

// Adds the context and measures the ceilings: `peak_flops` (FLOP/s) and `triad_gbs` (GB/s) get
// them per thread count (1 and all_threads). Without `measure` (a run that only lists its points)
// nothing is measured and the maps stay empty: the measurements take most of a minute.
void add_run_context(const std::string& preset, std::size_t all_threads, const std::string& window,
                     const std::string& backward_check_shape,
                     std::map<std::size_t, double>& peak_flops,
                     std::map<std::size_t, double>& triad_gbs, bool measure);

}  // namespace attnbench::bench
