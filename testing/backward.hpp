// The backward pass's side of the test support: a backward run of a kernel (its own forward
// first, for O and LSE, as a user would call them), the oracle's gradients, and the error
// criterion every backward kernel must meet, one definition for the tests, the fuzzer and the
// benchmark's oracle check.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <attnbench/attnbench.hpp>
#include "testing/error_bound.hpp"
#include "testing/problem.hpp"
#include "testing/reference.hpp"

namespace attnbench::testing {

template <class Real>
struct GradientsOf {
  std::vector<Real> dq, dk, dv;
};

// dO for a problem: seeded standard normals.
inline std::vector<float> random_output_gradient(const Problem& p, std::uint32_t seed) {
  std::vector<float> d_o(p.shape.q_elements());
  RandomFill(seed).normal(d_o);
  return d_o;
}

template <class Real>
GradientsOf<Real> reference_gradients(const Problem& p, const std::vector<float>& d_o) {
  GradientsOf<Real> g{std::vector<Real>(p.shape.q_elements()),
                      std::vector<Real>(p.shape.kv_elements()),
                      std::vector<Real>(p.shape.kv_elements())};
  reference_attention_backward<Real>(p.shape, p.options, p.q.data(), p.k.data(), p.v.data(),
                                     d_o.data(), g.dq.data(), g.dk.data(), g.dv.data());
  return g;
}

// The kernel's forward (O and LSE), then its backward on them. Poisoned outputs: every element
// must be written.
inline GradientsOf<float> run_backward(const Kernel& kernel, const Problem& p,
                                       const std::vector<float>& d_o, Workspace& ws) {
  std::vector<float> o(p.shape.q_elements()), lse(o.size() / p.shape.head_dim);
  Tensors t = p.tensors(o);
  t.lse = lse.data();
  attention(kernel, p.shape, p.options, t, ws);
  GradientsOf<float> g{std::vector<float>(p.shape.q_elements(), -12345.0f),
                       std::vector<float>(p.shape.kv_elements(), -12345.0f),
                       std::vector<float>(p.shape.kv_elements(), -12345.0f)};
  attention_backward(kernel, p.shape, p.options, t,
                     Gradients{d_o.data(), g.dq.data(), g.dk.data(), g.dv.data()}, ws);
  return g;
}

// The error criterion, per gradient tensor, FlashAttention's way (its tests compare the fused
// kernel's error with a plain evaluation's), row by row (a query row of dQ, a key row of dK and
// dV): every element's |error| against the float64 oracle is at most
//   kPlainFactor E_row + kFloorUlps u (1 + sigma) magnitude_x + flushed_x + 2^-150 (2 n + 2 d + 2 r
//   + 8)
// with E_row the largest |error| of the same formulas in plain float32 on that row
// (reference_attention_backward<float>). Why: how far float32 lands from the truth depends on the
// problem's conditioning (cancellation in dP - D, large scores), which the plain evaluation
// measures on this very problem, row by row, so the allowance grows with n, d and the rows a key
// sums only as fast as the real error; a kernel differs from it in summation order (blocked
// sums), its exp (a few ulp), and in how it gets the weights (P = exp(s - LSE), s recomputed,
// LSE the forward's, against the plain exp(s - m) / l), errors of the same kind and size.
// The plain evaluation can be exact where a kernel is not (one dominant key: p = 1, dS = dp - D
// = 0 in float too, while the kernel's D = dO . O and dp = dO . v are two dot products summed in
// different orders), so a floor per element, from its magnitude (reference_backward_magnitudes:
// the element's terms summed by their absolute values, which bounds the gradient and every term
// it rounds): each term carries a few u of rounding and its weight a relative error of about
// u sigma (the score's rounding; sigma the largest |scale| sum_c |q_c k_jc| with finite sum over
// the problem, not the worst case's (d + 2) sigma) plus u |LSE| <= u (sigma + ln n) (exp's
// argument s - LSE rounded; the fuzzer's decoding shapes, one query over 4099 keys, need it),
// kFloorUlps u (1 + sigma + ln n) of the magnitude, plus u (sigma + ln n) for the forward's own
// rounding of LSE and kExpUlps u for the kernel's exp.
// It no longer grows with n or d (the old floor, u (2 (d + 2) sigma + 2 n + ...) times the
// whole tensor's largest magnitude, sat 430 to 12,000 times above plain float32's error and
// decided every verdict). Two absolute terms join it, for what float cannot represent: a weight
// below e^-80 may be flushed to 0 by the kernel's exp (the SIMD exp flushes below e^-87, and the
// kernel's argument s - LSE carries the forward's rounding), which costs at most the magnitude of
// the terms it weighs (reference_backward_magnitudes over those weights alone); and a term that
// lands among float's subnormals is rounded to 2^-150 absolute, not relative, once per addition
// and product (2 n + 2 d + 2 r + 8 of them; r the query rows one key's gradient sums). Both
// vanish beside any gradient whose terms are not all below float's smallest normal.
// A bug (a missed block, a wrong scale, a stale max) is orders of magnitude past it: dQ scaled
// by 1 + 2^-7 fails at 200 x 1000 x 64 (backward_test's
// PassesTheRoundedOracleAndFailsModelledBugs). NaN and Inf must sit exactly where the oracle has
// them.
inline constexpr double kPlainFactor = 2.0;
inline constexpr double kFloorUlps = 2.0;
// The SIMD and scalar exps' largest error in ulp, as simd_test asserts it.
inline constexpr double kExpUlps = 3.0;
inline const double kFlushableWeight = std::exp(-80.0);

struct GradientCheck {
  std::string tensor;                  // "dq", "dk" or "dv"
  double error = 0;                    // the kernel's largest |error|
  double plain = 0;                    // plain float32's largest |error|
  double ratio = 0;                    // the largest |error| / allowed over the elements
  double allowed = 0;                  // error / ratio: what the largest error is measured against
  std::optional<std::string> failure;  // the first element out of bound or special mismatch
};

// The query rows one key's gradient sums: q_len x the query heads per key/value head.
inline std::size_t rows_per_key(const Shape& s) { return s.q_len * (s.q_heads / s.kv_heads); }

// 2^-150 (2 n + 2 d + 2 r + 8): the absolute rounding of subnormal terms (above).
inline double backward_subnormal_rounding(const Shape& s) {
  const double terms = 2.0 * double(s.kv_len + s.head_dim + rows_per_key(s)) + 8.0;
  return std::ldexp(terms, -150);
}

// sigma: the largest |scale| sum_c |q_c k_jc| over the problem's visible pairs, finite sums only.
inline double backward_sigma(const Problem& p) {
  const ProblemView view = p.view();
  double sigma = 0;
  for (std::size_t b = 0; b < p.shape.batch; ++b) {
    for (std::size_t h = 0; h < p.shape.q_heads; ++h) {
      for (std::size_t i = 0; i < p.shape.q_len; ++i) {
        const RowView r = row_view(view, b, h, i);
        for (std::size_t j = 0; j < r.n; ++j) {
          double sum = 0;
          for (std::size_t c = 0; c < p.shape.head_dim; ++c)
            sum += std::fabs(double(r.q[c]) * double(r.k[j * p.shape.head_dim + c]));
          if (std::isfinite(sum)) sigma = std::fmax(sigma, sum);  // finite scores only (above)
        }
      }
    }
  }
  sigma *= std::fabs(double(effective_scale(p.shape, p.options)));
  // ALiBi's bias moves the scores too: the largest |slope| times the farthest visible key.
  if (!p.options.alibi_slopes.empty()) {
    double slope = 0;
    for (float s : p.options.alibi_slopes) slope = std::fmax(slope, std::fabs(double(s)));
    const KeyMask mask(p.shape.q_len, p.shape.kv_len, p.options);
    double farthest = 0;
    for (std::size_t i = 0; i < p.shape.q_len; ++i) {
      const KeySpan keys = mask.row(i);
      if (keys.empty()) continue;
      const double d = double(mask.diagonal(i));
      farthest = std::fmax(farthest, std::fmax(std::fabs(double(keys.begin) - d),
                                               std::fabs(double(keys.end - 1) - d)));
    }
    sigma += slope * farthest;
  }
  // and so does a mask tensor's bias: its largest finite magnitude
  const MaskTensor& m = p.options.mask;
  const std::size_t elements = m.sizes[0] * m.sizes[1] * m.sizes[2] * m.sizes[3];
  double bias = 0;
  for (std::size_t x = 0; m.bias != nullptr && x < elements; ++x) {
    if (std::isfinite(m.bias[x])) bias = std::fmax(bias, std::fabs(double(m.bias[x])));
  }
  return sigma + bias;
}

// One gradient tensor of rows of `d` elements. `relative` is u (kFloorUlps (1 + sigma + ln n) +
// sigma + ln n + kExpUlps),
// `magnitude`
// and `flushed` reference_backward_magnitudes's over all weights and over the flushable ones,
// `absolute` the subnormal rounding (above). `specials_exact` false: where the oracle has NaN or
// Inf the kernel need only be non-finite too (inputs holding Inf: a weight float's exp flushes to
// 0 meets the Inf as 0 * inf = NaN where double's tiny weight gives inf, as in the forward's
// fuzzing exception).
inline GradientCheck check_gradient(const char* name, std::size_t d, const std::vector<float>& got,
                                    const std::vector<float>& plain, const std::vector<double>& ref,
                                    double relative, const std::vector<double>& magnitude,
                                    const std::vector<double>& flushed, double absolute,
                                    bool specials_exact = true) {
  GradientCheck c;
  c.tensor = name;
  for (std::size_t row = 0; row * d < ref.size(); ++row) {
    double plain_error = 0;
    for (std::size_t x = row * d; x < (row + 1) * d; ++x) {
      if (std::isfinite(ref[x])) plain_error = std::fmax(plain_error, std::fabs(plain[x] - ref[x]));
    }
    c.plain = std::fmax(c.plain, plain_error);
    for (std::size_t x = row * d; x < (row + 1) * d; ++x) {
      const double want = ref[x], have = got[x];
      std::ostringstream why;
      if (!std::isfinite(want)) {
        const bool same = !specials_exact    ? !std::isfinite(have)
                          : std::isnan(want) ? std::isnan(have)
                                             : have == want;
        if (!same && !c.failure) {
          why << name << "[" << x << "] = " << have << ", oracle " << want;
          c.failure = why.str();
        }
        continue;
      }
      // A NaN or infinite magnitude (an Inf among the inputs) allows nothing beyond the rest.
      const double m = std::isfinite(magnitude[x]) ? magnitude[x] : 0.0;
      const double f = std::isfinite(flushed[x]) ? flushed[x] : 0.0;
      const double floor = relative * m + f + absolute;
      const double allowed = kPlainFactor * plain_error + floor;
      const double error = std::fabs(have - want);
      const double ratio = allowed > 0 ? error / allowed : (error == 0 ? 0 : INFINITY);
      if (!(ratio <= 1.0) && !c.failure) {
        why << name << "[" << x << "] = " << have << ", oracle " << want << ": error " << error
            << " > " << allowed << " (" << kPlainFactor << " x plain float32's " << plain_error
            << " in the row + floor " << floor << ")";
        c.failure = why.str();
      }
      c.error = std::fmax(c.error, std::isnan(error) ? INFINITY : error);
      c.ratio = std::fmax(c.ratio, std::isnan(ratio) ? INFINITY : ratio);
    }
  }
  c.allowed = c.ratio > 0 ? c.error / c.ratio : INFINITY;
  return c;
}

// All three gradients of problem `p` with output gradient `d_o`.
// `weight_unit`: 2^-8 for a bf16-products kernel (p, d_o, plain and ref then on the
// bfloat16-rounded inputs: check_kernel_gradients), whose every term has one factor rounded to
// bfloat16 once (P in dV, dS in dK and dQ): at most weight_unit of the element's magnitude.
inline std::vector<GradientCheck> check_gradients(const Problem& p, const std::vector<float>& d_o,
                                                  const GradientsOf<float>& got,
                                                  const GradientsOf<float>& plain,
                                                  const GradientsOf<double>& ref,
                                                  bool specials_exact = true,
                                                  double weight_unit = 0) {
  auto magnitudes = [&](double weights_below) {
    GradientsOf<double> m{std::vector<double>(p.shape.q_elements()),
                          std::vector<double>(p.shape.kv_elements()),
                          std::vector<double>(p.shape.kv_elements())};
    reference_backward_magnitudes(p.shape, p.options, p.q.data(), p.k.data(), p.v.data(),
                                  d_o.data(), m.dq.data(), m.dk.data(), m.dv.data(), weights_below);
    return m;
  };
  const GradientsOf<double> size = magnitudes(INFINITY), flushable = magnitudes(kFlushableWeight);
  // The weight's argument bound |s - LSE| <= sigma + ln n, rounded once more where the forward
  // wrote LSE = m + log(l), and the kernel's exp (within kExpUlps, simd_test) on top of the
  // recomputed argument: the fuzzer's one query over 4099 keys (d = 8) erred 32.6 u on a dV
  // element whose floor without these two terms was 29.7 u (fuzz/regressions/attention/
  // backward_dv_one_query_4099_keys_lse_rounding.bin).
  const double argument = backward_sigma(p) + std::log(double(p.shape.kv_len));
  const double relative =
      std::ldexp(1.0, -24) * (kFloorUlps * (1.0 + argument) + argument + kExpUlps) + weight_unit;
  const double absolute = backward_subnormal_rounding(p.shape);
  // A bf16-products kernel converts dS to bfloat16, which flushes a subnormal to 0: each term
  // dS q (dK) or dS k (dQ) it drops is below the smallest normal float times |q| or |k|, so at
  // most that times the sum of every |q| or |k| in all (a soft-cap's slope far past the cap makes
  // such dS, as ALiBi's or the outliers' tiny weights do).
  double flushed_dk = 0, flushed_dq = 0;
  if (weight_unit > 0) {
    for (float x : p.q) flushed_dk += std::isfinite(x) ? std::fabs(double(x)) : 0.0;  // NaN, Inf:
    for (float x : p.k) flushed_dq += std::isfinite(x) ? std::fabs(double(x)) : 0.0;  // no bound
    flushed_dk *= double(std::numeric_limits<float>::min());
    flushed_dq *= double(std::numeric_limits<float>::min());
  }
  const std::size_t d = p.shape.head_dim;
  return {check_gradient("dq", d, got.dq, plain.dq, ref.dq, relative, size.dq, flushable.dq,
                         absolute + flushed_dq, specials_exact),
          check_gradient("dk", d, got.dk, plain.dk, ref.dk, relative, size.dk, flushable.dk,
                         absolute + flushed_dk, specials_exact),
          check_gradient("dv", d, got.dv, plain.dv, ref.dv, relative, size.dv, flushable.dv,
                         absolute, specials_exact)};
}

// `kernel`'s gradients `got` for problem p and dO: against the oracle and plain float32 on the
// problem the kernel computes (bf16 products: Q, K, V and dO rounded to bfloat16, and the weight
// rounding priced in).
inline std::vector<GradientCheck> check_kernel_gradients(const Kernel& kernel, const Problem& p,
                                                         const std::vector<float>& d_o,
                                                         const GradientsOf<float>& got,
                                                         bool specials_exact = true) {
  if (kernel.products == Products::f32) {
    return check_gradients(p, d_o, got, reference_gradients<float>(p, d_o),
                           reference_gradients<double>(p, d_o), specials_exact);
  }
  const Problem c = as_computed(p, kernel.products);
  std::vector<float> dc = d_o;
  for (float& x : dc) x = round_to(KvType::bf16, x);
  return check_gradients(c, dc, got, reference_gradients<float>(c, dc),
                         reference_gradients<double>(c, dc), specials_exact, std::ldexp(1.0, -8));
}

}  // namespace attnbench::testing
