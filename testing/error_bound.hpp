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
// sees (the mask and window applied; k and v point at its first) and the index of its first output
// element.
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
  const KeySpan keys = visible_keys(p.shape, p.options, i);
  const std::size_t kv0 = at.kv + keys.begin * p.shape.head_dim;
  return {p.q + out, p.k + kv0, p.v + kv0, keys.size(), out};
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
// What the bounds read off a row's inputs: sigma = |scale| max_j sum_c |q_c k_jc| over its n
// visible keys, and Vmax = max |v_jc| over them.
struct RowConditioning {
  double sigma = 0, vmax = 0;
  std::size_t n = 0;
};

inline RowConditioning row_conditioning(const ProblemView& p, std::size_t batch, std::size_t head,
                                        std::size_t i) {
  const std::size_t d = p.shape.head_dim;
  const RowView r = row_view(p, batch, head, i);
  RowConditioning rc;
  rc.n = r.n;  // std::fmax skips NaN inputs, whose rows the NaN check covers
  for (std::size_t j = 0; j < r.n; ++j) {
    double sum = 0.0;
    for (std::size_t c = 0; c < d; ++c) {
      sum += std::fabs(double(r.q[c]) * double(r.k[j * d + c]));
      rc.vmax = std::fmax(rc.vmax, std::fabs(double(r.v[j * d + c])));
    }
    rc.sigma = std::fmax(rc.sigma, sum);
  }
  rc.sigma *= std::fabs(double(effective_scale(p.shape, p.options)));
  return rc;
}

inline double row_bound(const RowConditioning& rc, std::size_t d) {
  const double u = std::ldexp(1.0, -24);
  return u * rc.vmax * (2.0 * double(d + 4) * rc.sigma + 2.0 * double(rc.n) + 32.0);
}

inline double row_bound(const ProblemView& p, std::size_t batch, std::size_t head, std::size_t i) {
  return row_bound(row_conditioning(p, batch, head, i), p.shape.head_dim);
}

// The first output element found out of bound.
struct Mismatch {
  std::size_t batch, head, row, col;
  double got, want, error, bound;
  double plain = NAN;  // compare_with_plain: plain float32's largest error in the row

  std::string describe() const {
    std::ostringstream s;
    s << "batch " << batch << " head " << head << " row " << row << " col " << col << ": got "
      << got << ", oracle " << want << ", error " << error << " > bound " << bound;
    if (!std::isnan(plain)) s << " (plain float32's error in the row: " << plain << ")";
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

// The forward criterion that stays as tight as the real error at any length (docs/testing.md,
// "Error criteria"). The analytic row_bound is a worst case: its 2 n u Vmax term grows with the
// keys while one key's weight shrinks as 1/n, so past a few thousand keys a dropped key hides
// under it, and its (d + 4) sigma term sits thousands of times above what float32 actually errs.
// This criterion measures that instead, FlashAttention's way: plain float32 (plain_attention,
// the oracle's three steps in float) errs by E_r = max_c |plain_rc - ref_rc| on row r of this very
// problem, and every element of the kernel's row must stay within
//   kPlainFactorForward E_r + kFloorUlpsForward u (1 + sigma + ln n) (A_rc + |ref_rc|)
//     + n e^-80 Vmax + (2 n + 2 d + 8) 2^-150,
// A_rc = sum_j p_j |v_jc| (the size of the blend's terms). Why these terms:
// - a kernel differs from the plain evaluation only in summation order (blocked, vector lanes,
//   key chunks merged by log-sum-exp), its exp (a few ulp) and where the max enters; its error
//   has the same sources and sizes as E_r, which grows with n as fast as rounding does; the
//   factor 2 covers the spread between two such errors (every kernel's worst row over
//   kernels_test's cases uses under half the allowance);
// - E_r can be small by luck (a row of a few elements, a few keys), so a floor: each weight is
//   perturbed relatively by its score's rounding (about u sigma, sigma = |scale| max_j sum_c
//   |q_c k_jc|, not the worst case's (d + 1) u sigma), by a log-sum-exp merge of key chunks
//   (u |LSE| <= u (sigma + ln n)), by exp and by the normalising sum (a few u); a weight's error
//   e_j moves o by p_j e_j (v_j - o), at most e (A + |o|); the blend adds terms of size A.
//   kFloorUlpsForward u (1 + sigma + ln n)(A + |o|) prices these at two rounding units each,
//   growing with n only as ln n: near the real error (15x-19x plain float32's at d = 64 or
//   128, n from 64 to 16384), orders of magnitude below row_bound (1,500x to 90,000x there);
// - two absolute terms, negligible beside any normal output: weights below e^-80 that a float
//   exp may flush to zero (n of them at most, each moving o by at most e^-80 Vmax), and terms
//   that land among float's subnormals, rounded to 2^-150 absolute.
// A dropped key moves o by p_j (v_j - o), about Vmax / n, thousands of u at n = 16384; a scale
// off by 0.1 % or weights rounded to 16 bits move it by hundreds of u at n = 1000
// (tests/criteria_test.cpp holds the criterion to rejecting them).
inline constexpr double kPlainFactorForward = 2.0;
inline constexpr double kFloorUlpsForward = 2.0;

// The oracle's answer and what the forward's criteria read beside it, per element (o, blend:
// sum_j p_j |v_jc|, plain: plain_attention's output) or per query row (sigma and vmax: as
// row_conditioning's), as testing/problem.hpp's solve() computes them in one pass.
// `weight_unit`: the unit roundoff of the weights the kernel blends with, beyond float32's: 0, or
// 2^-8 for a bf16-products kernel, whose weights are rounded to bfloat16 once (then `o` and `plain`
// are the oracle's and plain float32's on the bfloat16-rounded inputs, `plain` rounding its weights
// as the kernel does; docs/testing.md, "bf16 products").
struct ForwardYardstick {
  const double* o;
  const double* blend;
  const float* plain;
  const double* sigma;
  const double* vmax;
  double weight_unit = 0;
};

// NOTE: rounding weight p_j to bfloat16 moves it by at most weight_unit p_j, and the output
// element by at most weight_unit sum_j p_j |v_jc| = weight_unit A_c (the sum l adds the weights
// unrounded): the analytic bound adds weight_unit max_c A_c to row_bound. The plain criterion's
// floor adds a quarter of it: the kernel rounds exp(s_j - m) against its running max, plain
// float32 against the row's max, so their roundings are two draws of the same size, not the same
// draw, and on a row of one column and few keys plain's can be small by luck.
inline constexpr double kWeightFloorFraction = 0.25;

// The analytic row_bound from the yardstick's sigma and vmax: compare_with_oracle without its
// second pass over the inputs.
inline Comparison compare_with_bound(const ProblemView& p, const float* out,
                                     const ForwardYardstick& y) {
  Comparison result;
  const Shape& s = p.shape;
  for (std::size_t b = 0; b < s.batch; ++b) {
    for (std::size_t h = 0; h < s.q_heads; ++h) {
      for (std::size_t i = 0; i < s.q_len && !result.mismatch; ++i) {
        const std::size_t row = (b * s.q_heads + h) * s.q_len + i;
        const RowConditioning rc{y.sigma[row], y.vmax[row], visible_keys(s, p.options, i).size()};
        double weights = 0;  // weight_unit max_c A_c
        for (std::size_t c = 0; y.weight_unit > 0 && c < s.head_dim; ++c)
          weights = std::fmax(weights, y.weight_unit * y.blend[row * s.head_dim + c]);
        compare_row(p, out, y.o, b, h, i, row_bound(rc, s.head_dim) + weights, result);
      }
    }
  }
  return result;
}

// Plain float32's error row by row, checked against the kernel's. Elements the oracle has
// non-finite are left to compare_with_oracle (which places NaN and Inf); a finite oracle element
// the kernel has non-finite fails, and so does one where plain float32 is non-finite (the
// criterion then allows its floor alone). Stops at the first element out of bound.
inline Comparison compare_with_plain(const ProblemView& p, const float* out,
                                     const ForwardYardstick& y) {
  Comparison result;
  const Shape& s = p.shape;
  const std::size_t d = s.head_dim;
  const double u = std::ldexp(1.0, -24);
  for (std::size_t b = 0; b < s.batch; ++b) {
    for (std::size_t h = 0; h < s.q_heads; ++h) {
      for (std::size_t i = 0; i < s.q_len; ++i) {
        const std::size_t row = (b * s.q_heads + h) * s.q_len + i, row_at = row * d;
        double plain_error = 0;
        for (std::size_t c = 0; c < d; ++c) {
          const double want = y.o[row_at + c], have = y.plain[row_at + c];
          if (std::isfinite(want) && std::isfinite(have)) {
            plain_error = std::fmax(plain_error, std::fabs(have - want));
          }
        }
        const double n = double(visible_keys(s, p.options, i).size());
        const double log_n = n > 1 ? std::log(n) : 0.0;
        const double absolute =
            n * std::exp(-80.0) * y.vmax[row] + std::ldexp(2.0 * (n + double(d)) + 8.0, -150);
        for (std::size_t c = 0; c < d; ++c) {
          const std::size_t at = row_at + c;
          const double want = y.o[at], got = out[at];
          if (!std::isfinite(want)) continue;
          const double floor = kFloorUlpsForward * u * (1.0 + y.sigma[row] + log_n) *
                                   (y.blend[at] + std::fabs(want)) +
                               absolute + kWeightFloorFraction * y.weight_unit * y.blend[at];
          const double allowed = kPlainFactorForward * plain_error + floor;
          const double err = std::fabs(got - want);
          const double ratio = allowed > 0 ? err / allowed : (err == 0 ? 0 : INFINITY);
          if (!(ratio <= 1.0)) {
            result.mismatch = Mismatch{b, h, i, c, got, want, err, allowed, plain_error};
            result.worst_ratio = INFINITY;
            return result;
          }
          result.worst_ratio = std::max(result.worst_ratio, ratio);
        }
      }
    }
  }
  return result;
}

}  // namespace attnbench::testing
