// The error bound every kernel must meet against the float64 oracle, and the element-by-element
// comparison that applies it: the one definition the tests, the fuzzers (fuzz/) and the
// error-growth tool (bench/error_growth.cpp) all use.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <optional>
#include <sstream>
#include <string>

#include <attnbench/attnbench.hpp>

namespace attnbench::testing {

// The inputs of one call, not owned.
struct ProblemView {
  Shape shape;
  Options options;
  const float* q;
  const float* k;
  const float* v;
};

// Query row i of (batch, head): its query, its key/value head's K and V, the number of keys it
// sees (the causal mask applied) and the index of its first output element.
struct RowView {
  const float* q;
  const float* k;
  const float* v;
  std::size_t n;
  std::size_t out;
};

inline RowView row_view(const ProblemView& p, std::size_t batch, std::size_t head, std::size_t i) {
  const HeadOffsets at = head_offsets(p.shape, batch, head);
  const std::size_t out = at.q + i * p.shape.head_dim;
  return {p.q + out, p.k + at.kv, p.v + at.kv, visible_keys(p.shape, p.options.causal, i), out};
}

// The error bound for query row i of one head, a worst case rather than a statistical guess:
//   |o - o_ref| <= u * Vmax * (2 (d + 4) sigma + 2 n + 32),  u = 2^-24 (float's unit roundoff),
// where sigma = |scale| * max_j sum_c |q_c k_jc| bounds the scores, n is the number of visible
// keys and Vmax = max |v_jc| over them. Why: each float score carries an error of at most
// (d + 1) u sigma (a d-term dot product, then the scale) plus u 2 sigma for s - m, plus 2 u sigma
// where the SIMD sweeps take exp2 of (s - m) log2 e (log2 e's rounded products with the scale and
// with the max, Simd::exp_and_sum); a softmax
// weight moves by a relative 2 x max|score error| under such errors; summing n weights and n
// weighted values adds n u each; exp, the division and the rescaling add a few u (32 u leaves
// room for a vectorised exp of a few ulp). Any kernel bug larger than rounding breaks it.
// It assumes float neither overflows nor underflows on the way (docs/testing.md).
inline double row_bound(const ProblemView& p, std::size_t batch, std::size_t head, std::size_t i) {
  const std::size_t d = p.shape.head_dim;
  const RowView r = row_view(p, batch, head, i);
  double sigma = 0.0, vmax = 0.0;  // std::fmax skips NaN inputs, whose rows the NaN check covers
  for (std::size_t j = 0; j < r.n; ++j) {
    double sum = 0.0;
    for (std::size_t c = 0; c < d; ++c) {
      sum += std::fabs(double(r.q[c]) * double(r.k[j * d + c]));
      vmax = std::fmax(vmax, std::fabs(double(r.v[j * d + c])));
    }
    sigma = std::fmax(sigma, sum);
  }
  sigma *= std::fabs(double(effective_scale(p.shape, p.options)));
  const double u = std::ldexp(1.0, -24);
  return u * vmax * (2.0 * double(d + 4) * sigma + 2.0 * double(r.n) + 32.0);
}

// The first output element found out of bound.
struct Mismatch {
  std::size_t batch, head, row, col;
  double got, want, error, bound;

  std::string describe() const {
    std::ostringstream s;
    s << "batch " << batch << " head " << head << " row " << row << " col " << col << ": got "
      << got << ", oracle " << want << ", error " << error << " > bound " << bound;
    return s.str();
  }
};

struct Comparison {
  double worst_ratio = 0.0;          // largest |error| / bound over the elements compared
  std::optional<Mismatch> mismatch;  // set at the first element out of bound; comparing stops
};

// Compares query row i of (batch, head) with the oracle: NaN and Inf must sit exactly where the
// oracle has them, every other element within `bound` (the row's row_bound()). Adds to `result`.
inline void compare_row(const ProblemView& p, const float* out, const double* ref,
                        std::size_t batch, std::size_t head, std::size_t i, double bound,
                        Comparison& result) {
  const std::size_t row_at = row_view(p, batch, head, i).out;
  for (std::size_t c = 0; c < p.shape.head_dim; ++c) {
    const std::size_t at = row_at + c;
    const double want = ref[at], got = out[at];
    const bool same_special =
        (std::isnan(want) && std::isnan(got)) || (std::isinf(want) && got == want);
    if (same_special) continue;
    const double err = std::fabs(got - want);
    const double ratio = bound > 0 ? err / bound : (err == 0 ? 0 : INFINITY);
    if (!(ratio <= 1.0)) {
      result.mismatch = Mismatch{batch, head, i, c, got, want, err, bound};
      result.worst_ratio = INFINITY;
      return;
    }
    result.worst_ratio = std::max(result.worst_ratio, ratio);
  }
}

// Every row of the output against the oracle's answer `ref`.
inline Comparison compare_with_oracle(const ProblemView& p, const float* out, const double* ref) {
  Comparison result;
  const Shape& s = p.shape;
  for (std::size_t b = 0; b < s.batch; ++b) {
    for (std::size_t h = 0; h < s.q_heads; ++h) {
      for (std::size_t i = 0; i < s.q_len && !result.mismatch; ++i) {
        compare_row(p, out, ref, b, h, i, row_bound(p, b, h, i), result);
      }
    }
  }
  return result;
}

}  // namespace attnbench::testing
