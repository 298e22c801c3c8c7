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

// The worst |error| / allowed of a kernel's output under each forward criterion.
struct CriterionRatios {
  double bound = 0;  // the analytic row_bound
  double plain = 0;  // compare_with_plain: a multiple of plain float32's error
};

// Both criteria (NaN and Inf exactly where the oracle has them): a gtest failure names the first
// element out of either.
inline CriterionRatios check_against_oracle(const Problem& p, const std::vector<float>& out,
                                            const OracleAnswer& ref) {
  const Comparison bound = compare_with_bound(p.view(), out.data(), ref.yardstick());
  if (bound.mismatch) ADD_FAILURE() << bound.mismatch->describe();
  const Comparison plain = compare_with_plain(p.view(), out.data(), ref.yardstick());
  if (plain.mismatch) ADD_FAILURE() << "against plain float32: " << plain.mismatch->describe();
  return {bound.worst_ratio, plain.worst_ratio};
}

}  // namespace attnbench::testing
