// The benchmark's constants window (attnbench_bench --constants): the cost model's machine
// constants (machine_constants.hpp) measured once more, as the one point of a run of their own.
// The matrix window measures them before its points; a shared host can be slow in that minute, so
// the matrix also takes readings among its points (repetitions of this point, interleaved with
// theirs, preset.constants_readings), the study measures them again after its last window, and the
// cost model prices with the fastest reading of each
// (python/attnbench_report/load/machine_constants.py).
//   constants/threads:<all>
//       one call a repetition; a counter per constant, named as its key in the matrix's context.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>

namespace attnbench::bench {

// Registers the point with `repetitions` readings; `predicted` gets its predicted seconds, for the
// progress line, and `ran` (when set) is told of each reading done, as a matrix point's calls are.
void register_constants(std::size_t all_threads, int repetitions,
                        std::map<std::string, double>& predicted,
                        std::function<void(const std::string&, double)> ran = {});

}  // namespace attnbench::bench
