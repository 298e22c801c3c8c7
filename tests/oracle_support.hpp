// The tests' side of the test-support library (testing/): the oracle comparison as a GoogleTest
// failure.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "testing/error_bound.hpp"
#include "testing/problem.hpp"

namespace attnbench::testing {

inline double row_bound(const Problem& p, std::size_t batch, std::size_t head, std::size_t i) {
  return row_bound(p.view(), batch, head, i);
}

// Largest |error| / bound over the output (NaN and Inf must sit exactly where the oracle has
// them). Adds a gtest failure naming the first element out of bound.
inline double check_against_oracle(const Problem& p, const std::vector<float>& out,
                                   const std::vector<double>& ref) {
  const Comparison c = compare_with_oracle(p.view(), out.data(), ref.data());
  if (c.mismatch) ADD_FAILURE() << c.mismatch->describe();
  return c.worst_ratio;
}

}  // namespace attnbench::testing
