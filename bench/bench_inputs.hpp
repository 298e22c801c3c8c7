// The benchmark's inputs: seeded standard normal tensors, made and touched once per (size, role)
// and shared by every point and contender of that shape (attention_bench.cpp,
// contenders_window.cpp).
#pragma once

#include <cstddef>
#include <map>
#include <random>
#include <utility>
#include <vector>

namespace attnbench::bench {

// Inputs per shape, made and touched once and shared by every kernel's point of that shape.
inline const std::vector<float>& random_tensor(std::size_t elements, int which) {
  static std::map<std::pair<std::size_t, int>, std::vector<float>> cache;
  auto& t = cache[{elements, which}];
  if (t.empty()) {
    t.resize(elements);
    std::mt19937 rng(static_cast<unsigned>(which + 1));
    std::normal_distribution<float> normal;
    for (float& x : t) x = normal(rng);
  }
  return t;
}

}  // namespace attnbench::bench
