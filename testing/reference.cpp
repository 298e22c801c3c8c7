// The float64 oracle, forward and backward. Plain loops, one query row at a time, in the steps of
// the definition; no blocking, no tricks. Every kernel is tested against it.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

#include "testing/reference.hpp"

namespace attnbench {

namespace {

void check_pointers(std::initializer_list<const void*> pointers, const char* function) {
  for (const void* p : pointers) {
    if (p == nullptr) throw Error(function, "nullptr", "every tensor pointer must be non-null");
  }
}

// One row's values in a mask tensor (Options::mask), from its first visible key: a bias, or a keep
// flag, or neither.
struct TensorRow {
  const float* bias = nullptr;
  const std::uint8_t* keep = nullptr;
};
TensorRow tensor_row(const MaskTensor& m, std::size_t b, std::size_t h, std::size_t i,
                     std::size_t first_key) {
  if (m.empty()) return {};
  const auto [batch, head, row] = m.strides();
  const std::size_t at = b * batch + h * head + i * row + first_key;
  return {m.bias ? m.bias + at : nullptr, m.keep ? m.keep + at : nullptr};
}

// The softmax weights of one query row, in Real arithmetic: p_j = exp(s_j - m) / sum_j exp(s_j -
// m) over its `visible` keys, s_j = scale * q . k_j, m = max_j s_j. A NaN score makes m NaN (and
// so the row NaN). Returns false when nothing is weighed (no visible key, or every score -inf):
// the row is zero. `lse` gets m + log(l), or -inf for a zero row.
// `bf16_weights` (float only): each exp(s_j - m) rounded to bfloat16 before the division, l
// summing them unrounded, as a bf16-products kernel weighs V.
template <class Real>
bool row_weights(const float* q, const float* k, std::size_t d, std::size_t visible, Real scale,
                 std::vector<Real>& p, Real& lse, Real* sigma = nullptr, bool bf16_weights = false,
                 Real softcap = 0, Real alibi_slope = 0, long long alibi_offset = 0,
                 TensorRow tensor = {}) {
  constexpr Real kMinusInf = -std::numeric_limits<Real>::infinity();
  // Step 1, score: s_j = scale * q . k_j for every visible key j (soft-capped: softcap *
  // tanh(s_j / softcap)).
  for (std::size_t j = 0; j < visible; ++j) {
    Real dot = 0;
    for (std::size_t c = 0; c < d; ++c) dot += Real(q[c]) * Real(k[j * d + c]);
    p[j] = scale * dot;
    if (softcap > 0) p[j] = softcap * std::tanh(p[j] / softcap);
    // ALiBi: -slope |key - diagonal|, the key j + alibi_offset from the row's diagonal
    if (alibi_slope != 0) p[j] -= alibi_slope * Real(std::llabs((long long)j + alibi_offset));
    // the mask tensor: its bias added, or -inf where it keeps no key (whatever the score)
    if (tensor.bias != nullptr) p[j] += Real(tensor.bias[j]);
    if (tensor.keep != nullptr && tensor.keep[j] == 0) p[j] = kMinusInf;
  }
  // sigma = |scale| max_j sum_c |q_c k_jc|, skipping NaN as std::fmax does.
  if (sigma != nullptr) {
    Real largest = 0;
    for (std::size_t j = 0; j < visible; ++j) {
      Real sum = 0;
      for (std::size_t c = 0; c < d; ++c) sum += std::fabs(Real(q[c]) * Real(k[j * d + c]));
      largest = std::fmax(largest, sum);
    }
    *sigma = largest * std::fabs(scale);
    // ALiBi's bias moves the scores too: |slope| times the row's farthest visible key
    if (alibi_slope != 0 && visible > 0) {
      const long long far =
          std::max(std::llabs(alibi_offset), std::llabs((long long)visible - 1 + alibi_offset));
      *sigma += std::fabs(alibi_slope) * Real(far);
    }
    // and so does a mask tensor's: its largest finite magnitude
    Real bias = 0;
    for (std::size_t j = 0; tensor.bias != nullptr && j < visible; ++j) {
      if (std::isfinite(tensor.bias[j])) bias = std::fmax(bias, std::fabs(Real(tensor.bias[j])));
    }
    *sigma += bias;
  }
  // Step 2, normalise: p_j = exp(s_j - m) / l, l = sum_j exp(s_j - m).
  Real m = kMinusInf;
  for (std::size_t j = 0; j < visible; ++j) m = std::isnan(p[j]) || p[j] > m ? p[j] : m;
  lse = kMinusInf;
  if (m == kMinusInf) return false;
  Real l = 0;
  for (std::size_t j = 0; j < visible; ++j) {
    p[j] = std::exp(p[j] - m);
    l += p[j];
  }
  for (std::size_t j = 0; j < visible; ++j) {
    if (bf16_weights) p[j] = Real(round_to(KvType::bf16, float(p[j])));
    p[j] /= l;
  }
  lse = m + std::log(l);
  return true;
}

}  // namespace

namespace {

// The forward's three steps in Real arithmetic, one query row at a time (reference_attention's
// loops; Real = float is plain_attention).
template <class Real>
void forward_rows(const Shape& shape, const Options& options, const float* q, const float* k,
                  const float* v, Real* o, Real* lse, Real* blend_magnitude, Real* row_sigma,
                  Real* row_vmax, bool bf16_weights = false) {
  validate(shape, options);
  check_pointers({q, k, v, o}, "reference_attention");
  const Real scale = effective_scale(shape, options);
  const Real softcap = Real(options.softcap.value_or(0.0f));
  const KeyMask mask(shape.q_len, shape.kv_len, options);
  auto slope_of = [&](std::size_t h) {
    return options.alibi_slopes.empty() ? Real(0) : Real(options.alibi_slopes[h]);
  };
  const std::size_t d = shape.head_dim;
  std::vector<Real> p(shape.kv_len);

  for (std::size_t b = 0; b < shape.batch; ++b) {
    for (std::size_t h = 0; h < shape.q_heads; ++h) {
      const HeadOffsets at = head_offsets(shape, b, h);
      for (std::size_t i = 0; i < shape.q_len; ++i) {
        Real* oi = o + at.q + i * d;
        Real* ai = blend_magnitude != nullptr ? blend_magnitude + at.q + i * d : nullptr;
        for (std::size_t c = 0; c < d; ++c) oi[c] = 0;
        for (std::size_t c = 0; ai != nullptr && c < d; ++c) ai[c] = 0;
        Real row_lse;
        // the keys row i sees: [keys.begin, keys.end), from kv0 in K and V
        const KeySpan keys = visible_keys(shape, options, i);
        const std::size_t visible = keys.size(), kv0 = at.kv + keys.begin * d;
        const std::size_t row = at.q / d + i;
        const bool weighs =
            row_weights(q + at.q + i * d, k + kv0, d, visible, scale, p, row_lse,
                        row_sigma != nullptr ? row_sigma + row : nullptr, bf16_weights, softcap,
                        slope_of(h), (long long)keys.begin - (long long)mask.diagonal(i),
                        tensor_row(options.mask, b, h, i, keys.begin));
        if (lse != nullptr) lse[row] = row_lse;
        if (row_vmax != nullptr) {
          Real vmax = 0;
          for (std::size_t x = 0; x < visible * d; ++x)
            vmax = std::fmax(vmax, std::fabs(Real(v[kv0 + x])));
          row_vmax[row] = vmax;
        }
        if (!weighs) continue;
        // Step 3, blend: o_i = sum_j p_j v_j.
        for (std::size_t j = 0; j < visible; ++j) {
          const float* vj = v + kv0 + j * d;
          for (std::size_t c = 0; c < d; ++c) oi[c] += p[j] * Real(vj[c]);
          for (std::size_t c = 0; ai != nullptr && c < d; ++c)
            ai[c] += p[j] * std::fabs(Real(vj[c]));
        }
      }
    }
  }
}

}  // namespace

void reference_attention(const Shape& shape, const Options& options, const float* q, const float* k,
                         const float* v, double* o, double* lse, double* blend_magnitude) {
  forward_rows<double>(shape, options, q, k, v, o, lse, blend_magnitude, nullptr, nullptr);
}

void reference_attention(const Shape& shape, const Options& options, const float* q, const float* k,
                         const float* v, const ForwardConditioning& out) {
  forward_rows<double>(shape, options, q, k, v, out.o, out.lse, out.blend_magnitude, out.row_sigma,
                       out.row_vmax);
}

void plain_attention(const Shape& shape, const Options& options, const float* q, const float* k,
                     const float* v, float* o, Products products) {
  forward_rows<float>(shape, options, q, k, v, o, nullptr, nullptr, nullptr, nullptr,
                      products == Products::bf16);
}

namespace {

// The backward's loops, once for the oracle (kAbs false) and once for its conditioning (kAbs true):
// the same sums with every term replaced by its magnitude, |dp_j| by sum_c |dO_c v_jc|, D by
// sum_j p_j |dp_j|, dp_j - D by |dp_j| + |D|, and the scale, Q, K and dO by their magnitudes.
// With kAbs, dQ, dK and dV sum only the terms whose weight p_j is below `weights_below` (D still
// sums them all).
template <class Real, bool kAbs>
void backward_sums(const Shape& shape, const Options& options, const float* q, const float* k,
                   const float* v, const float* d_o, Real* dq, Real* dk, Real* dv,
                   Real weights_below = std::numeric_limits<Real>::infinity()) {
  validate(shape, options);
  check_pointers({q, k, v, d_o, dq, dk, dv}, "reference_attention_backward");
  const Real scale = effective_scale(shape, options);
  const Real softcap = Real(options.softcap.value_or(0.0f));
  const KeyMask mask(shape.q_len, shape.kv_len, options);
  auto slope_of = [&](std::size_t h) {
    return options.alibi_slopes.empty() ? Real(0) : Real(options.alibi_slopes[h]);
  };
  const Real term_scale = kAbs ? std::fabs(scale) : scale;
  auto term = [](float x) { return kAbs ? Real(std::fabs(x)) : Real(x); };
  const std::size_t d = shape.head_dim;
  for (std::size_t x = 0; x < shape.q_elements(); ++x) dq[x] = 0;
  for (std::size_t x = 0; x < shape.kv_elements(); ++x) dk[x] = dv[x] = 0;
  std::vector<Real> p(shape.kv_len), dp(shape.kv_len);

  for (std::size_t b = 0; b < shape.batch; ++b) {
    for (std::size_t h = 0; h < shape.q_heads; ++h) {
      const HeadOffsets at = head_offsets(shape, b, h);
      for (std::size_t i = 0; i < shape.q_len; ++i) {
        const float* qi = q + at.q + i * d;
        const float* doi = d_o + at.q + i * d;
        const KeySpan keys = visible_keys(shape, options, i);
        const std::size_t visible = keys.size(), kv0 = at.kv + keys.begin * d;
        Real lse;
        if (!row_weights<Real>(qi, k + kv0, d, visible, scale, p, lse, nullptr, false, softcap,
                               slope_of(h), (long long)keys.begin - (long long)mask.diagonal(i),
                               tensor_row(options.mask, b, h, i, keys.begin))) {
          continue;  // zero row
        }

        // dp_j = dO_i . v_j, D = sum_j p_j dp_j (= dO_i . o_i).
        Real delta = 0;
        for (std::size_t j = 0; j < visible; ++j) {
          Real dot = 0;
          for (std::size_t c = 0; c < d; ++c) dot += term(doi[c]) * term(v[kv0 + j * d + c]);
          dp[j] = dot;
          delta += p[j] * dot;
        }
        // ds_j = p_j (dp_j - D); dQ_i = scale sum_j ds_j k_j; dK_j += scale ds_j q_i;
        // dV_j += p_j dO_i.
        Real* dqi = dq + at.q + i * d;
        for (std::size_t j = 0; j < visible; ++j) {
          // Only a weight at or above the cut is left out: a NaN weight stays NaN.
          const Real pj = kAbs && p[j] >= weights_below ? Real(0) : p[j];
          // soft-capped: the cap's derivative 1 - tanh(s / cap)^2 (in [0, 1]) at the scaled score
          Real slope = 1;
          if (softcap > 0) {
            Real dot = 0;
            for (std::size_t c = 0; c < d; ++c) dot += Real(qi[c]) * Real(k[kv0 + j * d + c]);
            // 4 e / (1 + e)^2 with e = exp(-2 |x|): 1 - tanh(x)^2 without cancelling near t = 1
            const Real e = std::exp(-2 * std::fabs(scale * dot / softcap));
            slope = 4 * e / ((1 + e) * (1 + e));
          }
          const Real ds = pj * (kAbs ? dp[j] + delta : dp[j] - delta) * slope;
          const std::size_t kj = kv0 + j * d;
          for (std::size_t c = 0; c < d; ++c) {
            dqi[c] += term_scale * ds * term(k[kj + c]);
            dk[kj + c] += term_scale * ds * term(qi[c]);
            dv[kj + c] += pj * term(doi[c]);
          }
        }
      }
    }
  }
}

}  // namespace

template <class Real>
void reference_attention_backward(const Shape& shape, const Options& options, const float* q,
                                  const float* k, const float* v, const float* d_o, Real* dq,
                                  Real* dk, Real* dv) {
  backward_sums<Real, false>(shape, options, q, k, v, d_o, dq, dk, dv);
}

void reference_backward_magnitudes(const Shape& shape, const Options& options, const float* q,
                                   const float* k, const float* v, const float* d_o, double* dq,
                                   double* dk, double* dv, double weights_below) {
  backward_sums<double, true>(shape, options, q, k, v, d_o, dq, dk, dv, weights_below);
}

template void reference_attention_backward<double>(const Shape&, const Options&, const float*,
                                                   const float*, const float*, const float*,
                                                   double*, double*, double*);
template void reference_attention_backward<float>(const Shape&, const Options&, const float*,
                                                  const float*, const float*, const float*, float*,
                                                  float*, float*);

}  // namespace attnbench
