// The backward pass's side of the test support: a backward run of a kernel (its own forward
// first, for O and LSE, as a user would call them), the oracle's gradients, and the error
// criterion every backward kernel must meet, one definition for the tests, the fuzzer and the
// benchmark's oracle check.
#pragma once

#include <cmath>
#include <cstdint>
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

// The error criterion, per gradient tensor. First FlashAttention's (its tests compare the fused
// kernel's error with a plain evaluation's): the kernel's largest |error| against the float64
// oracle is at most kPlainFactor times that of the same formulas in plain float32
// (reference_attention_backward<float>). Why: how far float32 lands from the truth depends on the
// problem's conditioning (cancellation in dP - D, large scores), which the plain evaluation
// measures on this very problem; a kernel differs from it in summation order (blocked sums), its
// exp (a few ulp), and in how it gets the weights: P = exp(s - LSE) with s recomputed by the
// backward's own dot products and LSE from the forward's, against the plain exp(s - m) / l whose
// largest weight is exact. That last difference is a relative error of P of the forward's own
// order, (d + 2) u sigma, and plain float32 can be exact where it shows (one dominant key: p = 1,
// dS = dp - D = 0 in float too, while the kernel's D = dO . O and dp = dO . v are two dot
// products summed in different orders), so the bound adds a worst-case floor:
//   u (2 (d + 2) sigma + 2 n + 2 d + 2 r + 32) max |magnitude|
// with sigma the largest |scale| sum_c |q_c k_jc| over the problem, n the longest row, d the dot
// products' length, r the query rows one key's gradient sums (q_len x the group of query heads
// per key/value head), and the magnitude reference_backward_magnitudes's: each gradient element's
// terms summed by their absolute values, which bounds the gradient and every term it rounds.
// Two absolute terms join it, for what float cannot represent: a weight below e^-80 may be
// flushed to 0 by the kernel's exp (the SIMD exp flushes below e^-87, and the kernel's argument
// s - LSE carries the forward's rounding), which costs at most the magnitude of the terms it
// weighs (reference_backward_magnitudes over those weights alone); and a term that lands among
// float's subnormals is rounded to 2^-150 absolute, not relative, once per addition and product
// (2 n + 2 d + 2 r + 8 of them, as in the relative rounding). Both vanish beside any gradient
// whose terms are not all below float's smallest normal.
// A bug (a missed block, a wrong scale, a stale max) is orders of magnitude past it.
// NaN and Inf must sit exactly where the oracle has them.
inline constexpr double kPlainFactor = 4.0;
inline const double kFlushableWeight = std::exp(-80.0);

struct GradientCheck {
  std::string tensor;                  // "dq", "dk" or "dv"
  double error = 0;                    // the kernel's largest |error|
  double plain = 0;                    // plain float32's largest |error|
  double allowed = 0;                  // the bound
  std::optional<std::string> failure;  // the first element out of bound or special mismatch
};

// The query rows one key's gradient sums: q_len x the query heads per key/value head.
inline std::size_t rows_per_key(const Shape& s) { return s.q_len * (s.q_heads / s.kv_heads); }

// 2^-150 (2 n + 2 d + 2 r + 8): the absolute rounding of subnormal terms (above).
inline double backward_subnormal_rounding(const Shape& s) {
  const double terms = 2.0 * double(s.kv_len + s.head_dim + rows_per_key(s)) + 8.0;
  return std::ldexp(terms, -150);
}

// u (2 (d + 2) sigma + 2 n + 2 d + 2 r + 32): the relative rounding of the floor, over the whole
// problem (above).
inline double backward_rounding(const Problem& p) {
  const ProblemView view = p.view();
  double worst = 0;
  for (std::size_t b = 0; b < p.shape.batch; ++b) {
    for (std::size_t h = 0; h < p.shape.q_heads; ++h) {
      for (std::size_t i = 0; i < p.shape.q_len; ++i) {
        const RowView r = row_view(view, b, h, i);
        double sigma = 0;
        for (std::size_t j = 0; j < r.n; ++j) {
          double sum = 0;
          for (std::size_t c = 0; c < p.shape.head_dim; ++c)
            sum += std::fabs(double(r.q[c]) * double(r.k[j * p.shape.head_dim + c]));
          if (std::isfinite(sum)) sigma = std::fmax(sigma, sum);  // finite scores only (above)
        }
        sigma *= std::fabs(double(effective_scale(p.shape, p.options)));
        worst = std::fmax(worst, 2.0 * double(p.shape.head_dim + 2) * sigma + 2.0 * double(r.n));
      }
    }
  }
  const std::size_t d = p.shape.head_dim;
  return std::ldexp(worst + 2.0 * double(d) + 2.0 * double(rows_per_key(p.shape)) + 32.0, -24);
}

// One gradient tensor: `floor` is the rounding times the tensor's largest magnitude (above).
// `specials_exact` false: where the oracle has NaN or Inf the kernel need only be non-finite too
// (inputs holding Inf: a weight float's exp flushes to 0 meets the Inf as 0 * inf = NaN where
// double's tiny weight gives inf, as in the forward's fuzzing exception).
inline GradientCheck check_gradient(const char* name, const std::vector<float>& got,
                                    const std::vector<float>& plain, const std::vector<double>& ref,
                                    double floor, bool specials_exact = true) {
  GradientCheck c;
  c.tensor = name;
  for (std::size_t x = 0; x < ref.size(); ++x) {
    if (std::isfinite(ref[x])) c.plain = std::fmax(c.plain, std::fabs(double(plain[x]) - ref[x]));
  }
  c.allowed = kPlainFactor * c.plain + floor;
  for (std::size_t x = 0; x < ref.size(); ++x) {
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
    const double error = std::fabs(have - want);
    if (!(error <= c.allowed) && !c.failure) {
      why << name << "[" << x << "] = " << have << ", oracle " << want << ": error " << error
          << " > " << c.allowed << " (" << kPlainFactor << " x plain float32's " << c.plain
          << " + floor " << floor << ")";
      c.failure = why.str();
    }
    c.error = std::fmax(c.error, std::isnan(error) ? INFINITY : error);
  }
  return c;
}

// All three gradients of problem `p` with output gradient `d_o`.
inline std::vector<GradientCheck> check_gradients(const Problem& p, const std::vector<float>& d_o,
                                                  const GradientsOf<float>& got,
                                                  const GradientsOf<float>& plain,
                                                  const GradientsOf<double>& ref,
                                                  bool specials_exact = true) {
  auto magnitudes = [&](double weights_below) {
    GradientsOf<double> m{std::vector<double>(p.shape.q_elements()),
                          std::vector<double>(p.shape.kv_elements()),
                          std::vector<double>(p.shape.kv_elements())};
    reference_backward_magnitudes(p.shape, p.options, p.q.data(), p.k.data(), p.v.data(),
                                  d_o.data(), m.dq.data(), m.dk.data(), m.dv.data(), weights_below);
    return m;
  };
  const GradientsOf<double> size = magnitudes(INFINITY), flushable = magnitudes(kFlushableWeight);
  auto largest = [](const std::vector<double>& magnitude) {
    double x = 0;
    for (double m : magnitude) {
      if (std::isfinite(m)) x = std::fmax(x, m);
    }
    return x;
  };
  const double rounding = backward_rounding(p), subnormal = backward_subnormal_rounding(p.shape);
  auto floor = [&](const std::vector<double>& all, const std::vector<double>& flushed) {
    return rounding * largest(all) + largest(flushed) + subnormal;
  };
  return {
      check_gradient("dq", got.dq, plain.dq, ref.dq, floor(size.dq, flushable.dq), specials_exact),
      check_gradient("dk", got.dk, plain.dk, ref.dk, floor(size.dk, flushable.dk), specials_exact),
      check_gradient("dv", got.dv, plain.dv, ref.dv, floor(size.dv, flushable.dv), specials_exact)};
}

}  // namespace attnbench::testing
