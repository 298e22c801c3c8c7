// Small helpers the benchmark's windows share (matrix, contenders, decode and scaling windows).
#pragma once

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cpu_caches.hpp"

namespace attnbench::bench {

// Marks the point failed with `message` (the JSON keeps it as the point's error) and runs out its
// iterations, as Google Benchmark requires.
inline void skip_all(benchmark::State& state, const std::string& message) {
  state.SkipWithError(message.c_str());
  for (auto _ : state) {
  }
}

// The level-`level` cache's bytes as the kernels read them (src/cpu_caches.hpp), or `fallback`.
inline std::size_t cache_bytes(int level, std::size_t fallback) {
  const std::size_t bytes = reported_cache_bytes(level);
  return bytes > 0 ? bytes : fallback;
}

// The machine's physical memory in bytes.
inline std::size_t memory_bytes() {
  return std::size_t(sysconf(_SC_PHYS_PAGES)) * std::size_t(sysconf(_SC_PAGE_SIZE));
}

// The upper median (the middle element of an odd count).
// The fastest of a point's repetitions, as a Google Benchmark statistic ("min"): a compute-bound
// call only gains time from a neighbour on the host, so comparisons read it (the report's
// analysis/contenders.py).
inline double fastest(const std::vector<double>& v) {
  return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
}

inline double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return xs[xs.size() / 2];
}

}  // namespace attnbench::bench
