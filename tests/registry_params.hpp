// The parameters every per-kernel test suite shares: the registry's kernel names, and a name made
// fit for a gtest test name ("tiled/simd/sse4.2" -> "tiled_simd_sse4_2").
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "attnbench.hpp"

namespace attnbench::testing {

inline std::vector<std::string> kernel_names() {
  std::vector<std::string> names;
  for (const Kernel& k : registry()) names.emplace_back(k.name);
  return names;
}

inline std::string test_name(std::string name) {
  std::replace_if(name.begin(), name.end(),
                  [](unsigned char c) { return !std::isalnum(c); }, '_');  // UTF-8 bytes too
  return name;
}

}  // namespace attnbench::testing
