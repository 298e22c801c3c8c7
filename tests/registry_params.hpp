// The parameters every per-kernel test suite shares: the registry's kernel names, a name made fit
// for a gtest test name ("tiled/simd/sse4.2" -> "tiled_simd_sse4_2"), and a shape's short name.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include <attnbench/attnbench.hpp>

namespace attnbench::testing {

inline std::vector<std::string> kernel_names() {
  std::vector<std::string> names;
  for (const Kernel& k : registry()) names.emplace_back(k.name);
  return names;
}

// The kernels whose products are float32: what a test of float32 arithmetic itself runs on.
inline std::vector<std::string> float32_kernel_names() {
  std::vector<std::string> names;
  for (const Kernel& k : registry()) {
    if (k.products == Products::f32) names.emplace_back(k.name);
  }
  return names;
}

inline std::string test_name(std::string name) {
  std::replace_if(
      name.begin(), name.end(), [](unsigned char c) { return !std::isalnum(c); },
      '_');  // UTF-8 bytes too
  return name;
}

// "b1_h4_kv2_q33_k70_d40": batch, query heads, key/value heads, query and key lengths, head dim.
inline std::string shape_name(const Shape& s) {
  return "b" + std::to_string(s.batch) + "_h" + std::to_string(s.q_heads) + "_kv" +
         std::to_string(s.kv_heads) + "_q" + std::to_string(s.q_len) + "_k" +
         std::to_string(s.kv_len) + "_d" + std::to_string(s.head_dim);
}

}  // namespace attnbench::testing
