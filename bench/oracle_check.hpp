// The check every contender passes before it is timed: its output against the float64 oracle,
// under the tests' error bound (testing/error_bound.hpp); and the one every backward point of the
// matrix passes, its gradients against the backward oracle under the tests' criterion
// (testing/backward.hpp). The oracle costs q_len x kv_len x d
// double operations, as much as the call itself and far slower, so a benchmark point checks a
// sample of rows (each row's answer depends on that row alone: the oracle for query row i is the
// one-row problem over the keys it sees); tests check every row.
#pragma once

#include <cstddef>
#include <string>

#include <attnbench/attnbench.hpp>

namespace attnbench::bench {

struct OracleCheck {
  bool passed = false;
  double worst_ratio = 0;  // largest |error| / bound over the rows checked
  std::size_t rows_checked = 0;
  std::string failure;  // the first element out of bound, when !passed
};

// Checks `max_rows` query rows of every (batch, head), evenly spaced and including the first and
// the last (every row when q_len <= max_rows), of `o` against the oracle.
// Products::bf16: an implementation that computes with bfloat16 products (attnbench's bf16
// kernels, a peer's bf16 attention): the oracle on Q, K and V rounded to bfloat16, the bound
// widened by one bfloat16 rounding of the weights and one of the output (2^-8 (Vmax + |o|)), as a
// peer returning bfloat16 rounds it.
OracleCheck check_against_oracle(const Shape& shape, const Options& options, const Tensors& io,
                                 std::size_t max_rows, Products products = Products::f32);

// `kernel`'s forward (for O and LSE) and backward on seeded standard-normal Q, K, V and dO of
// `shape`, every element of dQ, dK and dV against the float64 backward oracle under
// testing::check_gradients (a small multiple of plain float32's error, plus a worst-case
// rounding floor). worst_ratio is the largest |error| / allowed over the three gradients. Every
// row is checked, so `shape` should be small: the oracles cost q_len x kv_len x d in double and
// in float each.
OracleCheck check_backward_against_oracle(const Kernel& kernel, const Shape& shape,
                                          const Options& options);

// Another implementation's gradients (`got`: dQ, dK, dV) for Q, K, V of `forward` and output
// gradient `d_o`, every element against the backward oracle under the same criterion: what a
// contender's training step passes before it is timed. Small shapes, as above.
OracleCheck check_gradients_against_oracle(const Shape& shape, const Options& options,
                                           const Tensors& forward, const float* d_o,
                                           const Gradients& got);

}  // namespace attnbench::bench
