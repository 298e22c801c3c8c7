// The check every contender passes before it is timed: its output against the float64 oracle,
// under the tests' error bound (testing/error_bound.hpp). The oracle costs q_len x kv_len x d
// double operations, as much as the call itself and far slower, so a benchmark point checks a
// sample of rows (each row's answer depends on that row alone: the oracle for query row i is the
// one-row problem over the keys it sees); tests check every row.
#pragma once

#include <cstddef>
#include <string>

#include "attnbench.hpp"

namespace attnbench::bench {

struct OracleCheck {
  bool passed = false;
  double worst_ratio = 0;  // largest |error| / bound over the rows checked
  std::size_t rows_checked = 0;
  std::string failure;  // the first element out of bound, when !passed
};

// Checks `max_rows` query rows of every (batch, head), evenly spaced and including the first and
// the last (every row when q_len <= max_rows), of `o` against the oracle.
OracleCheck check_against_oracle(const Shape& shape, const Options& options, const Tensors& io,
                                 std::size_t max_rows);

}  // namespace attnbench::bench
