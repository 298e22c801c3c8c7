// Test support: random problems, the float64 oracle's answer, and the error bound every kernel
// must meet against it.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "attnbench.hpp"
#include "error_bound.hpp"

namespace attnbench::testing {

// One attention call's inputs and options, owned.
struct Problem {
  Shape shape;
  Options options;
  std::vector<float> q, k, v;

  Tensors tensors(std::vector<float>& o) const { return {q.data(), k.data(), v.data(), o.data()}; }
};

// Standard-normal Q, K, V from a fixed seed.
inline Problem random_problem(const Shape& shape, bool causal, std::uint32_t seed) {
  Problem p{shape, Options{}, std::vector<float>(shape.q_elements()),
            std::vector<float>(shape.kv_elements()), std::vector<float>(shape.kv_elements())};
  p.options.causal = causal;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (auto* t : {&p.q, &p.k, &p.v}) {
    for (float& x : *t) x = normal(rng);
  }
  return p;
}

// Outliers that force the online softmax to rescale: every key gets a component along the all-ones
// direction that grows with its index, and every query a positive one, so the row max rises in
// every key block; a few keys are also multiplied by 30. Scores reach the hundreds, far past
// where exp(s) overflows float without the max subtracted.
inline void add_outliers(Problem& p) {
  const std::size_t d = p.shape.head_dim;
  const float ramp = 40.0f / std::sqrt(static_cast<float>(d));
  for (std::size_t row = 0; row * d < p.q.size(); ++row) {
    for (std::size_t c = 0; c < d; ++c) p.q[row * d + c] += 2.0f;
  }
  for (std::size_t row = 0; row * d < p.k.size(); ++row) {
    const float j = static_cast<float>(row % p.shape.kv_len) / static_cast<float>(p.shape.kv_len);
    for (std::size_t c = 0; c < d; ++c) p.k[row * d + c] += ramp * j;
    if (row % 37 == 5) {
      for (std::size_t c = 0; c < d; ++c) p.k[row * d + c] *= 30.0f;
    }
  }
}

inline std::vector<double> oracle(const Problem& p) {
  std::vector<double> o(p.shape.q_elements());
  reference_attention(p.shape, p.options, p.q.data(), p.k.data(), p.v.data(), o.data());
  return o;
}

inline std::vector<float> run(const Kernel& kernel, const Problem& p, Workspace& ws) {
  std::vector<float> o(p.shape.q_elements(), -12345.0f);  // poison: every element must be written
  attention(kernel, p.shape, p.options, p.tensors(o), ws);
  return o;
}

// The error bound for query row i of one head, and the comparison with the oracle that applies
// it: defined once, in error_bound.hpp, which the fuzzers and the error-growth tool share.
inline ProblemView problem_view(const Problem& p) {
  return {p.shape, p.options, p.q.data(), p.k.data(), p.v.data()};
}

inline double row_bound(const Problem& p, std::size_t batch, std::size_t head, std::size_t i) {
  return row_bound(problem_view(p), batch, head, i);
}

// Largest |error| / bound over the output (NaN and Inf must sit exactly where the oracle has
// them). Adds a gtest failure naming the first element out of bound.
inline double check_against_oracle(const Problem& p, const std::vector<float>& out,
                                   const std::vector<double>& ref) {
  const Comparison c = compare_with_oracle(problem_view(p), out.data(), ref.data());
  if (c.mismatch) ADD_FAILURE() << c.mismatch->describe();
  return c.worst_ratio;
}

}  // namespace attnbench::testing
