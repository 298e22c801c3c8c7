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

// The error bound for query row i of one head, a worst case rather than a statistical guess:
//   |o - o_ref| <= u * Vmax * (2 (d + 2) sigma + 2 n + 32),  u = 2^-24 (float's unit roundoff),
// where sigma = |scale| * max_j sum_c |q_c k_jc| bounds the scores, n is the number of visible
// keys and Vmax = max |v_jc| over them. Why: each float score carries an error of at most
// (d + 1) u sigma (a d-term dot product, then the scale) plus u 2 sigma for s - m; a softmax
// weight moves by a relative 2 x max|score error| under such errors; summing n weights and n
// weighted values adds n u each; exp, the division and the rescaling add a few u (32 u leaves
// room for a vectorised exp of a few ulp). Any kernel bug larger than rounding breaks it.
inline double row_bound(const Problem& p, std::size_t batch, std::size_t head, std::size_t i) {
  const Shape& s = p.shape;
  const std::size_t d = s.head_dim;
  const std::size_t kv_head = head / (s.q_heads / s.kv_heads);
  const float* q = p.q.data() + ((batch * s.q_heads + head) * s.q_len + i) * d;
  const float* k = p.k.data() + (batch * s.kv_heads + kv_head) * s.kv_len * d;
  const float* v = p.v.data() + (batch * s.kv_heads + kv_head) * s.kv_len * d;
  const HeadProblem shape_only{nullptr, nullptr, nullptr, nullptr, s.q_len, s.kv_len, d,
                               effective_scale(s, p.options), p.options.causal};
  const std::size_t n = shape_only.visible_keys(i);
  double sigma = 0.0, vmax = 0.0;  // std::fmax skips NaN inputs, whose rows the NaN check covers
  for (std::size_t j = 0; j < n; ++j) {
    double sum = 0.0;
    for (std::size_t c = 0; c < d; ++c) {
      sum += std::fabs(double(q[c]) * double(k[j * d + c]));
      vmax = std::fmax(vmax, std::fabs(double(v[j * d + c])));
    }
    sigma = std::fmax(sigma, sum);
  }
  sigma *= std::fabs(double(shape_only.scale));
  const double u = std::ldexp(1.0, -24);
  return u * vmax * (2.0 * double(d + 2) * sigma + 2.0 * double(n) + 32.0);
}

// Largest |error| / bound over the output (NaN and Inf must sit exactly where the oracle has
// them). Adds a gtest failure naming the first element out of bound.
inline double check_against_oracle(const Problem& p, const std::vector<float>& out,
                                   const std::vector<double>& ref) {
  const Shape& s = p.shape;
  double worst = 0.0;
  for (std::size_t b = 0; b < s.batch; ++b) {
    for (std::size_t h = 0; h < s.q_heads; ++h) {
      for (std::size_t i = 0; i < s.q_len; ++i) {
        const double bound = row_bound(p, b, h, i);
        for (std::size_t c = 0; c < s.head_dim; ++c) {
          const std::size_t at = ((b * s.q_heads + h) * s.q_len + i) * s.head_dim + c;
          const double want = ref[at], got = out[at];
          const bool same_special = (std::isnan(want) && std::isnan(got)) ||
                                    (std::isinf(want) && got == want);
          if (same_special) continue;
          const double err = std::fabs(got - want);
          const double ratio = bound > 0 ? err / bound : (err == 0 ? 0 : INFINITY);
          if (!(ratio <= 1.0)) {
            ADD_FAILURE() << "batch " << b << " head " << h << " row " << i << " col " << c
                          << ": got " << got << ", oracle " << want << ", error " << err
                          << " > bound " << bound;
            return INFINITY;
          }
          worst = std::max(worst, ratio);
        }
      }
    }
  }
  return worst;
}

}  // namespace attnbench::testing
