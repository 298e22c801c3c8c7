// What every kernel file includes: the kernel interface, and the small pieces of softmax
// arithmetic all kernels (and the driver's split-key merge) share.
#pragma once

#include <limits>

#include "cpu_caches.hpp"
#include "kernels/kernel_interface.hpp"

namespace attnbench::kernels {

// The helpers below are compiled into scalar and per-ISA translation units alike: internal
// linkage keeps the linker from sharing one ISA's copy with another.
namespace {

constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

inline std::size_t min_of(std::size_t a, std::size_t b) { return a < b ? a : b; }
inline std::size_t max_of(std::size_t a, std::size_t b) { return a < b ? b : a; }

// The per-core L2 this CPU reports, in bytes (cpu_caches.hpp), or 512 KiB where it reports none:
// what the SIMD kernels size their key and query blocks from.
inline std::size_t reported_l2_bytes() {
  const std::size_t reported = reported_cache_bytes(2);
  return reported > 0 ? reported : std::size_t{512} << 10;
}
// The per-core L1 data cache this CPU reports, in bytes, or 32 KiB where it reports none.
inline std::size_t reported_l1_bytes() {
  const std::size_t reported = reported_cache_bytes(1);
  return reported > 0 ? reported : std::size_t{32} << 10;
}
// The L3 this CPU reports, in bytes, or 0 where it reports none.
inline std::size_t reported_l3_bytes() { return reported_cache_bytes(3); }
inline float scalar_exp(float x) { return __builtin_expf(x); }

// The value subtracted from a row's scores before exp: its running max m, or 0 while m is -inf
// (no key seen yet, or every score -inf), so that exp(s - m) is exp(-inf) = 0 and never
// exp(-inf - -inf) = NaN. A NaN score still gives exp(NaN) = NaN and poisons the row, as in the
// oracle.
inline float max_reference(float m) { return m == kMinusInf ? 0.0f : m; }

// 1 / l for the final normalisation, or 0 when the row weighed nothing (l == 0: no visible key,
// or every score -inf), which the library defines as a zero row. A NaN l stays NaN.
inline float inverse_sum(float l) { return l == 0.0f ? 0.0f : 1.0f / l; }

// A row's log-sum-exp from its max m and its sum l = sum_j exp(s_j - max_reference(m)):
// max_reference(m) + log(l), or -inf for a zero row (l == 0). A NaN l stays NaN.
inline float log_sum_exp(float m, float l) {
  return l == 0.0f ? kMinusInf : max_reference(m) + __builtin_logf(l);
}

// The backward's exponent S - LSE, clamped at 0: P = exp(S - LSE) <= 1 exactly, but when the
// scores are so large that their float rounding exceeds ~88 (values near 2^40 in the fuzzer's
// moderate regime), the recomputed S can exceed LSE by that much and exp would give inf, then
// NaN gradients where the oracle's are finite. NaN stays NaN (the comparison is false).
inline float at_most_zero(float x) { return x > 0.0f ? 0.0f : x; }

// ALiBi's bias for key j of a row whose diagonal key is `diagonal`: -slope |j - diagonal|.
inline float alibi_bias(float slope, std::size_t j, std::int64_t diagonal) {
  const std::int64_t distance = std::int64_t(j) - diagonal;
  return -slope * float(distance < 0 ? -distance : distance);
}

// Scores s[c], c in [begin, end), of the mask tensor row at `at` (MaskRows::offset), key j0 + c
// each: plus the row's bias, or -inf where it keeps no key (a loop the compiler vectorises).
inline void apply_mask(const MaskRows& t, std::size_t at, float* s, std::size_t begin,
                       std::size_t end, std::size_t j0) {
  if (t.bias != nullptr) {
    const float* b = t.bias + at + j0;
    for (std::size_t c = begin; c < end; ++c) s[c] += b[c];
  } else {
    const std::uint8_t* keep = t.keep + at + j0;
    for (std::size_t c = begin; c < end; ++c) s[c] = keep[c] != 0 ? s[c] : kMinusInf;
  }
}
// Score s of key j under the mask tensor row at `at`: plus its bias, or -inf where not kept.
inline float masked_score(const MaskRows& t, std::size_t at, std::size_t j, float s) {
  return t.bias != nullptr ? s + t.bias[at + j] : (t.keep[at + j] != 0 ? s : kMinusInf);
}

// A scaled score soft-capped (Options::softcap, cap > 0): cap * tanh(s / cap).
inline float soft_capped(float s, float cap) { return cap * __builtin_tanhf(s / cap); }
// The backward's factor for it, the derivative 1 - tanh(x)^2 at x = s / cap, as
// 4 e / (1 + e)^2 with e = exp(-2 |x|): 1 - t^2 would cancel where t rounds to near 1.
inline float soft_cap_slope(float x) {
  const float e = __builtin_expf(-2.0f * __builtin_fabsf(x));
  return 4.0f * e / ((1.0f + e) * (1.0f + e));
}

}  // namespace

}  // namespace attnbench::kernels
