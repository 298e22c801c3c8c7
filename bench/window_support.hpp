// Small helpers the benchmark's windows share (decode_window.cpp, scaling_window.cpp).
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>
#include <vector>

namespace attnbench::bench {

// Marks the point failed with `message` (the JSON keeps it as the point's error) and runs out its
// iterations, as Google Benchmark requires.
inline void skip_all(benchmark::State& state, const std::string& message) {
  state.SkipWithError(message.c_str());
  for (auto _ : state) {
  }
}

// The upper median (the middle element of an odd count).
inline double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return xs[xs.size() / 2];
}

}  // namespace attnbench::bench
