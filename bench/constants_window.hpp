// The benchmark's constants window (attnbench_bench --constants): the cost model's machine
// constants (machine_constants.hpp) measured once more, as the one point of a run of their own.
// The matrix window measures them before its points; a shared host can be slow in that minute, so
// the study measures them again after its last window, and the cost model prices with the faster
// reading of each (scripts/report/model.py, Machine).
//   constants/threads:<all>
//       one call; a counter per constant, named as its key in the matrix's context.
#pragma once

#include <cstddef>
#include <map>
#include <string>

namespace attnbench::bench {

// Registers the window's one point; `predicted` gets its predicted seconds, for the progress line.
void register_constants(std::size_t all_threads, std::map<std::string, double>& predicted);

}  // namespace attnbench::bench
