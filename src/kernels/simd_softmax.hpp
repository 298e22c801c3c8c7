// The SIMD kernels' softmax arithmetic (the vector exp and exp2, the sweeps over a row of scores,
// the horizontal max and sum, the output row), written once over the xsimd architecture `Arch`;
// Simd<Arch> (simd_common.hpp) builds the micro-kernels on it. Internal linkage, as there.
#pragma once

#include <immintrin.h>
#include <xsimd/xsimd.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/common.hpp"
#include "kernels/simd_storage.hpp"

namespace attnbench::kernels {
namespace {

template <class Arch>
struct SimdSoftmax : SimdStorage<Arch> {
  using Storage = SimdStorage<Arch>;
  using Storage::W;
  using typename Storage::batch;
  using typename Storage::ibatch;

  // exp(x) for x <= 0, the only inputs softmax gives it (scores minus their max). Range
  // reduction x = n ln2 + r with |r| <= ln2 / 2 (ln2 split in two constants so n ln2 is exact),
  // exp(r) by Cephes' degree-5 polynomial in r (1 + r + r^2 P(r)), then 2^n built directly in
  // the exponent bits (AVX-512: vscalefps multiplies by 2^n, exactly as that product is). Below -87
  // the result would be subnormal: it and -inf flush to 0 (a weight under 2^-125 of the row max is
  // far below float resolution). NaN stays NaN. Its error against double-precision exp is measured
  // by simd_exp_test.
  static batch exp(batch x) {
    const batch n = xsimd::nearbyint(x * batch(1.44269504088896341f));  // round(x / ln2)
    batch r = xsimd::fnma(n, batch(0.693359375f), x);                   // x - n ln2 (high part)
    r = xsimd::fnma(n, batch(-2.12194440e-4f), r);                      // ... (low part)
    const batch poly = horner(r, 1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                              4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f);
    return times_two_to(xsimd::fma(poly, r * r, r + batch(1.0f)), n, x, -87.0f);
  }

  // The polynomial c0 r^k + c1 r^(k-1) + ... + ck, by Horner's rule.
  template <class... C>
  static batch horner(batch r, float c0, C... c) {
    batch poly = batch(c0);
    ((poly = xsimd::fma(poly, r, batch(c))), ...);
    return poly;
  }

  // p x 2^n for integral n within float's normal exponents, or 0 where x < `flush` (there n
  // would not be, and x = -inf makes p NaN). AVX-512: vscalefps makes it in one step, as exactly;
  // elsewhere 2^n is built with n + 127 in the exponent field.
  static batch times_two_to(batch p, batch n, batch x, float flush) {
    if constexpr (W == 16) {  // zero-masked where x < flush (not NaN): no separate blend
      return _mm512_maskz_scalef_ps(_mm512_cmp_ps_mask(x, batch(flush), _CMP_NLT_UQ), p, n);
    }
    const ibatch biased = xsimd::to_int(n) + ibatch(127);
    const batch two_n = xsimd::bitwise_cast<batch>(biased << 23);
    return xsimd::select(x < batch(flush), batch(0.0f), p * two_n);
  }

  // 2^x for x <= 0 (a few ulp above 0 is fine): the softmax sweeps' exp, whose argument one FMA
  // makes from the raw score (exp_and_sum). Range reduction x = n + r with n = round(x) is exact
  // (no ln2 to split), 2^r by Cephes' exp2f polynomial of degree 6 on |r| <= 1/2, then 2^n as in
  // exp. Below -126 the result would be subnormal: it and -inf flush to 0. NaN stays NaN.
  // Against exp(x ln2) it saves the multiply and the two-constant reduction (with the max pass
  // only reading, the sweeps ran 1.56x faster: docs/kernels.md).
  // The reduction takes no rounding instruction (vrndscaleps and vroundps are two micro-ops
  // each): AVX-512's vreduceps gives r = x - round(x) in one, and n = x - r exactly; elsewhere
  // x + 1.5 * 2^23 holds round(x) (ties to even) in its low mantissa bits, and those bits moved to
  // the exponent field make 2^n without a conversion. The same bits as nearbyint's n, for
  // |x| < 2^22 (beyond, x < -126 and the result is 0).
  static batch exp2(batch x) {
    const auto poly = [](batch r) {
      return horner(r, 1.535336188319500e-4f, 1.339887440266574e-3f, 9.618437357674640e-3f,
                    5.550332471162809e-2f, 2.402264791363012e-1f, 6.931472028550421e-1f, 1.0f);
    };
    constexpr float kFlush = -126.0f;
    if constexpr (W == 16) {
      const batch r = _mm512_reduce_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      return times_two_to(poly(r), x - r, x, kFlush);
    } else {
      const batch shifter(0x1.8p23f);
      const batch shifted = x + shifter;
      const batch r = x - (shifted - shifter);
      const batch two_n = xsimd::bitwise_cast<batch>((xsimd::bitwise_cast<ibatch>(shifted) << 23) +
                                                     ibatch(127 << 23));
      return xsimd::select(x < batch(kFlush), batch(0.0f), poly(r) * two_n);
    }
  }

  // tanh(x), for logit soft-capping: below |x| = 0.625 the odd polynomial x + x^3 P(x^2) of
  // Cephes' tanhf (xsimd's), above it (1 - e) / (1 + e) with e = exp(-2 |x|) = 2^(-2 |x| log2 e)
  // by exp2 (in (0, 1]: no cancellation there, and no overflow whatever |x|), the sign restored.
  // NaN stays NaN; +-inf gives +-1.
  static batch tanh(batch x) {
    batch slope;
    return tanh(x, slope);
  }
  // The same, and its derivative 1 - tanh(x)^2 in `slope` (the soft-cap's backward factor): from
  // the polynomial's t below 0.625, and as 4 e / (1 + e)^2 above it, which keeps its relative
  // accuracy where tanh rounds to within an ulp of 1 (1 - t^2 would cancel there); its e is
  // computed 2^64 times larger and scaled back, so that a slope below 2^-126 underflows gradually,
  // as the oracle's does, instead of flushing to 0 with exp2.
  static batch tanh(batch x, batch& slope) {
    const batch a = xsimd::abs(x), a2 = a * a;
    const batch p = horner(a2, -5.70498872745e-3f, 2.06390887954e-2f, -5.37397155531e-2f,
                           1.33314422036e-1f, -3.33332819422e-1f);
    const batch small = xsimd::fma(p * a2, a, a);
    const batch y = a * batch(-2.88539008177792681f);  // -2 |x| log2(e)
    const batch e = exp2(y);
    const batch one_e = batch(1.0f) + e;
    const batch big = (batch(1.0f) - e) / one_e;
    const auto near_zero = a < batch(0.625f);
    const batch e_up = exp2(y + batch(64.0f));  // where it is used y <= -1.8: at most 2^62
    slope = xsimd::select(near_zero, batch(1.0f) - small * small,
                          batch(4.0f) * e_up / (one_e * one_e) * batch(0x1p-64f));
    return xsimd::select(near_zero, small, big) ^ xsimd::bitofsign(x);
  }
  // The mask tensor's values for the W scores from index j of a row whose values for [begin,
  // end) are `keep` or `bias` (MaskRows', offset to the row's index 0), read within [begin, end)
  // only: the bias, or 0 / -inf for keep bytes; 0 outside. `all_kept`: every lane keeps its key
  // with a bias of 0 (a boolean mask's common case), and the vector need not change.
  static batch tensor_lanes(const std::uint8_t* keep, const float* bias, std::size_t j,
                            std::size_t begin, std::size_t end, bool& all_kept) {
    all_kept = false;
    if (j >= begin && j + W <= end) {
      if (bias != nullptr) return batch::load_unaligned(bias + j);
      bool every = true;
      if constexpr (W >= 8) {  // every byte nonzero: (w - 0x01..) & ~w & 0x80.. finds a zero byte
        std::uint64_t words[W / 8];
        std::memcpy(words, keep + j, W);
        for (std::uint64_t w : words) {
          every &= ((w - 0x0101010101010101ull) & ~w & 0x8080808080808080ull) == 0;
        }
      } else {
        for (std::size_t x = 0; x < W; ++x) every &= keep[j + x] != 0;
      }
      if (every) {
        all_kept = true;
        return batch(0.0f);
      }
    }
    alignas(64) float lanes[W];
    for (std::size_t x = 0; x < W; ++x) {
      const std::size_t c = j + x;
      lanes[x] = c < begin || c >= end ? 0.0f
                 : bias != nullptr
                     ? bias[c]
                     : (keep[c] != 0 ? 0.0f : -std::numeric_limits<float>::infinity());
    }
    return batch::load_aligned(lanes);
  }

  // A boolean mask tensor's row applied to raw (unscaled) scores s[begin, end), `keep` indexed as
  // s: -inf where it keeps no key, the rest untouched, so that the softmax sweeps still scale them
  // (for a scale above 0, which keeps -inf at -inf): only the vectors not all of whose keys are
  // kept change, which under a banded mask are its edges alone.
  static void drop_removed(float* s, std::size_t begin, std::size_t end, const std::uint8_t* keep) {
    const batch minus_inf(-std::numeric_limits<float>::infinity());
    for (std::size_t j = begin / W * W; j < end; j += W) {
      bool all_kept;
      const batch b = tensor_lanes(keep, nullptr, j, begin, end, all_kept);
      if (!all_kept)
        xsimd::select(b == minus_inf, b, batch::load_aligned(s + j)).store_aligned(s + j);
    }
  }

  // Scores modified in place over the vectors that hold s[begin, end), scaled once here (the
  // softmax sweeps then take a scale of 1): s = scale s, soft-capped to cap tanh(s / cap) when
  // cap > 0, plus ALiBi's -slope |j + offset| for the score at index j when slope != 0 (offset:
  // the first key's index minus the row's diagonal key), then the mask tensor's row (`keep` or
  // `bias`, indexed as s; both null for none): its bias added, or -inf where it keeps no key.
  static void modify_scores(float* s, std::size_t begin, std::size_t end, float scale, float cap,
                            float slope, double offset, const std::uint8_t* keep = nullptr,
                            const float* bias = nullptr) {
    const batch sc(scale), c(cap), inv(cap > 0.0f ? 1.0f / cap : 0.0f), minus_slope(-slope);
    alignas(64) static constexpr float kLane[16] = {0, 1, 2,  3,  4,  5,  6,  7,
                                                    8, 9, 10, 11, 12, 13, 14, 15};
    const batch lane = batch::load_aligned(kLane);
    const batch minus_inf(-std::numeric_limits<float>::infinity());
    for (std::size_t j = begin / W * W; j < end; j += W) {
      batch x = batch::load_aligned(s + j) * sc;
      if (cap > 0.0f) x = c * tanh(x * inv);
      if (slope != 0.0f) {
        const batch distance = xsimd::abs(lane + batch(static_cast<float>(double(j) + offset)));
        x = xsimd::fma(minus_slope, distance, x);
      }
      if (keep != nullptr || bias != nullptr) {
        bool all_kept;
        const batch b = tensor_lanes(keep, bias, j, begin, end, all_kept);
        if (!all_kept) x = keep != nullptr ? xsimd::select(b == minus_inf, b, x) : x + b;
      }
      x.store_aligned(s + j);
    }
  }

  // y[i] = f(x[i]) over an array (the tail through a padded vector): how tests reach exp and exp2.
  template <batch (*F)(batch)>
  static void apply_array(const float* x, float* y, std::size_t n) {
    std::size_t i = 0;
    for (; i + W <= n; i += W) F(batch::load_unaligned(x + i)).store_unaligned(y + i);
    if (i < n) {
      alignas(64) float tail[W] = {};
      for (std::size_t t = 0; t < n - i; ++t) tail[t] = x[i + t];
      F(batch::load_aligned(tail)).store_aligned(tail);
      for (std::size_t t = 0; t < n - i; ++t) y[i + t] = tail[t];
    }
  }
  static void exp_array(const float* x, float* y, std::size_t n) { apply_array<exp>(x, y, n); }
  static void exp2_array(const float* x, float* y, std::size_t n) { apply_array<exp2>(x, y, n); }

  // Horizontal max and sum, for xsimd 8.1 (no reduce_max; its hadd uses the slow hadd
  // instruction): lanes folded pairwise by shuffles, the halves first, each row's sum in the same
  // order every call. Once per row per block, so the scalar tree they replace (a store, then a
  // chain of W - 1 dependent operations) was a share of the softmax at small d
  // (docs/studies/2026-12-07-softmax-sweeps.md). The max ignores NaN where the scores' running
  // maxima already dropped it (a NaN score makes its row NaN through exp either way).
  static float hmax(batch x) {
    return fold_lanes(x, [](batch a, batch b) { return xsimd::max(a, b); });
  }
  static float hsum(batch x) {
    return fold_lanes(x, [](batch a, batch b) { return a + b; });
  }
  // op over the lanes: lane i with lane i + W/2, then i + W/4, ..., then lane 0.
  template <class Op>
  static float fold_lanes(batch x, Op op) {
    if constexpr (W == 16) {
      x = op(x, batch(_mm512_shuffle_f32x4(x, x, 0x4E)));  // 256-bit halves swapped
      x = op(x, batch(_mm512_shuffle_f32x4(x, x, 0xB1)));  // 128-bit quarters
      x = op(x, batch(_mm512_permute_ps(x, 0x4E)));        // 64-bit pairs
      return _mm512_cvtss_f32(op(x, batch(_mm512_permute_ps(x, 0xB1))));
    } else if constexpr (W == 8) {
      x = op(x, batch(_mm256_permute2f128_ps(x, x, 1)));
      x = op(x, batch(_mm256_permute_ps(x, 0x4E)));
      return _mm256_cvtss_f32(op(x, batch(_mm256_permute_ps(x, 0xB1))));
    } else {
      static_assert(W == 4, "an ISA of 4, 8 or 16 float lanes");
      x = op(x, batch(_mm_shuffle_ps(x, x, 0x4E)));
      return _mm_cvtss_f32(op(x, batch(_mm_shuffle_ps(x, x, 0xB1))));
    }
  }

  // Lanes of the vector starting at key `first` that lie in [begin, end) stay; the rest become
  // `fill` (-inf).
  static batch mask_span(batch x, std::size_t first, std::size_t begin, std::size_t end,
                         batch fill = batch(kMinusInf)) {
    if (first >= begin && first + W <= end) return x;
    alignas(64) static constexpr float kLane[16] = {0, 1, 2,  3,  4,  5,  6,  7,
                                                    8, 9, 10, 11, 12, 13, 14, 15};
    const batch lane = batch::load_aligned(kLane) + batch(static_cast<float>(first));
    const auto inside =
        (lane >= batch(static_cast<float>(begin))) & (lane < batch(static_cast<float>(end)));
    return xsimd::select(inside, x, fill);
  }
  static batch mask_after(batch x, std::size_t first, std::size_t count,
                          batch fill = batch(kMinusInf)) {
    return mask_span(x, first, 0, count, fill);
  }

  // The softmax sweeps over one row of raw scores s[0, count) (a score tile's row, or naive's
  // whole row), as scale_and_max then exp_and_sum. NOTE: the first only reads: the scale's sign
  // picks max or min of the raw scores, and their product with the scale is the largest scaled
  // score exactly (rounding is monotonic). Four running extremes, not one: a single chain of
  // dependent max instructions was the sweep's bottleneck.
  static float scale_and_max(const float* s, std::size_t count, float scale) {
    return scale_and_max(s, 0, count, scale);
  }
  // The same over s[begin, end) (a windowed row's keys in a block), read from the vector that
  // holds s[begin] on.
  static float scale_and_max(const float* s, std::size_t begin, std::size_t end, float scale) {
    if (end <= begin) return kMinusInf;
    const bool up = !(scale < 0.0f);
    const batch none(up ? kMinusInf : -kMinusInf);
    auto extreme = [up](batch a, batch b) { return up ? xsimd::max(a, b) : xsimd::min(a, b); };
    batch acc[4] = {none, none, none, none};
    std::size_t j = begin / W * W;
    if (j < begin) {
      acc[1] = extreme(acc[1], mask_span(batch::load_aligned(s + j), j, begin, end, none));
      j += W;
    }
    for (; j + 4 * W <= end; j += 4 * W) {
#pragma GCC unroll 4
      for (std::size_t u = 0; u < 4; ++u)
        acc[u] = extreme(acc[u], batch::load_aligned(s + j + u * W));
    }
    for (; j < end; j += W)
      acc[0] = extreme(acc[0], mask_span(batch::load_aligned(s + j), j, begin, end, none));
    const batch e = extreme(extreme(acc[0], acc[1]), extreme(acc[2], acc[3]));
    return fold_lanes(e, extreme) * scale;
  }

  // P = exp(scale s - m_ref) in place over s[0, count) (lanes past count, up to the vector's
  // end, become 0); returns the row sum of P. NOTE: computed as exp2 of (scale s - m_ref) log2 e,
  // whose argument one FMA makes from the raw score, s c + b with c = scale log2 e and b =
  // -m_ref log2 e: nothing on the way overflows, and exp2's exact range reduction makes it 1.4x
  // cheaper than exp. c and b are rounded, so the argument of the row's largest score is 0 only
  // within a few roundings of b; while |b| <= 2^20 that keeps every P below 1.2. Beyond (scores
  // near or past 10^5), or where c or b is not a finite float, the sweep computes
  // exp(scale s - m_ref), its argument clamped at 0 (GCC may fuse the product and the difference,
  // whose exact result then exceeds 0 by up to half an ulp of a huge m_ref, and exp of that is
  // inf): the largest score weighs 1, and every input keeps its semantics, exp(NaN) = NaN,
  // exp(inf - inf) = NaN. Without a fused FMA (SSE4.2) the argument is (scale s - m_ref) log2 e.
  static constexpr bool kFusedFma = !std::is_same_v<Arch, xsimd::sse4_2>;
  // a x + b for scalars, rounded once where the ISA has an FMA. NOTE: never left to the compiler:
  // GCC contracts a x + b into an FMA or not depending on how the caller was inlined, so the same
  // row would round differently in two call paths (a row block split differently on 2 threads).
  static float mul_add(float a, float x, float b) {
#ifdef __FMA__
    return __builtin_fmaf(a, x, b);
#else
    return a * x + b;  // no FMA instruction to contract into
#endif
  }

  // a x + b rounded once. xsimd 8.1's fma for avx512f is a multiply and an add, which GCC fuses
  // at -O3 but not at -O1 (the ASan build): the intrinsic, to be fused in every build.
  static batch fused_fma(batch a, batch x, batch b) {
    if constexpr (W == 16) return batch(_mm512_fmadd_ps(a, x, b));
    return xsimd::fma(a, x, b);
  }
  static float exp_and_sum(float* s, std::size_t count, float scale, float m_ref) {
    return exp_and_sum(s, 0, count, scale, m_ref);
  }
  // The same over s[begin, end), whole vectors from the one that holds s[begin] (zero outside).
  static float exp_and_sum(float* s, std::size_t begin, std::size_t end, float scale, float m_ref) {
    return exp_and_sum(s, begin, end, scale, m_ref,
                       [s](batch p, std::size_t j) { p.store_aligned(s + j); });
  }
  // The same, each vector of P handed to store(p, j) (for j = begin rounded down to a vector,
  // then every W: whole vectors, zero outside [begin, end)) instead of written over S: a bf16
  // kernel rounds it as it stores it.
  template <class Store>
  static float exp_and_sum(const float* s, std::size_t begin, std::size_t end, float scale,
                           float m_ref, Store&& store) {
    if (end <= begin) return 0.0f;
    const std::size_t count = end;
    constexpr double kLog2e = 1.44269504088896340736;
    const float c = static_cast<float>(scale * kLog2e);
    const float b = static_cast<float>(-double(m_ref) * kLog2e);
    // weight(argument(x)) for every vector; the edge vectors, partly outside [begin, end), get
    // -inf there first, and the interior's loop has no check.
    auto sweep = [&](auto argument, auto weight) {
      batch sum = batch(0.0f);
      const std::size_t inner_end = count / W * W;
      std::size_t j = begin / W * W;
      auto edge = [&] {
        const batch p = weight(mask_span(argument(batch::load_aligned(s + j)), j, begin, count));
        store(p, j);
        sum += p;
      };
      if (j < begin) edge(), j += W;
      // Four chains of dependent adds (vector u of each 4 on chain u), not one: one chain's adds,
      // each waiting for the last, bounded the sweep (docs/studies/2026-12-07-softmax-sweeps.md).
      batch chains[4] = {batch(0.0f), batch(0.0f), batch(0.0f), batch(0.0f)};
      for (; j + 4 * W <= inner_end; j += 4 * W) {
#pragma GCC unroll 4
        for (std::size_t u = 0; u < 4; ++u) {
          const batch p = weight(argument(batch::load_aligned(s + j + u * W)));
          store(p, j + u * W);
          chains[u] += p;
        }
      }
      for (; j < inner_end; j += W) {
        const batch p = weight(argument(batch::load_aligned(s + j)));
        store(p, j);
        sum += p;
      }
      if (j < count) edge();
      return hsum((sum + chains[0]) + chains[1] + (chains[2] + chains[3]));
    };
    if (!(std::abs(c) <= std::numeric_limits<float>::max() && std::abs(b) <= 0x1p20f)) {
      return sweep(
          [&](batch x) {
            const batch e =
                x * batch(scale) - batch(m_ref);  // the compiler may fuse it: clamp at 0
            return xsimd::select(e > batch(0.0f), batch(0.0f), e);
          },
          [](batch e) { return exp(e); });
    }
    if constexpr (kFusedFma) {
      return sweep([&](batch x) { return fused_fma(x, batch(c), batch(b)); },
                   [](batch e) { return exp2(e); });
    }
    return sweep([&](batch x) { return (x * batch(scale) - batch(m_ref)) * batch(float(kLog2e)); },
                 [](batch e) { return exp2(e); });
  }

  // A whole softmax row in place, for kernels that score with another library (naive/openblas):
  // s = s * scale, m = max s, P = exp(s - m_ref) / l with l = sum P; returns l (0: a zero row,
  // whose weights are then 0). Any alignment and count: the vector body is unaligned, the tail
  // goes through one padded vector (its padding -inf, so exp gives 0 there and the sum is
  // unchanged), so every element takes the same exp.
  static float softmax_row(float* s, std::size_t count, float scale, float* lse) {
    batch running = batch(kMinusInf);
    std::size_t j = 0;
    for (; j + W <= count; j += W) {
      const batch x = batch::load_unaligned(s + j) * batch(scale);
      x.store_unaligned(s + j);
      running = xsimd::max(running, x);
    }
    float m = hmax(running);
    for (std::size_t t = j; t < count; ++t) {
      s[t] *= scale;
      m = s[t] > m ? s[t] : m;
    }
    const float m_ref = max_reference(m);
    batch sum = batch(0.0f);
    for (j = 0; j + W <= count; j += W) {
      const batch p = exp(batch::load_unaligned(s + j) - batch(m_ref));  // P = exp(S - m)
      p.store_unaligned(s + j);
      sum += p;
    }
    alignas(64) float tail[W];
    if (j < count) {
      for (std::size_t t = 0; t < W; ++t) tail[t] = j + t < count ? s[j + t] : kMinusInf;
      const batch p = exp(batch::load_aligned(tail) - batch(m_ref));
      p.store_aligned(tail);
      sum += p;
    }
    const float l = hsum(sum);
    if (lse != nullptr) *lse = log_sum_exp(m, l);
    const float inv = inverse_sum(l);
    const batch inv_l = batch(inv);
    for (std::size_t t = 0; j + t < count; ++t) s[j + t] = tail[t] * inv;
    for (std::size_t i = 0; i + W <= count; i += W) {
      (batch::load_unaligned(s + i) * inv_l).store_unaligned(s + i);
    }
    return l;
  }

  // Output row = accumulator * inv_l over d columns (no padding), or zeros when inv_l is 0 and the
  // row weighed nothing.
  static void write_row(const float* acc, float inv_l, bool empty, std::size_t d, float* out) {
    std::size_t c = 0;
    for (; c + W <= d; c += W) {
      const batch x = empty ? batch(0.0f) : batch::load_aligned(acc + c) * batch(inv_l);
      x.store_unaligned(out + c);
    }
    for (; c < d; ++c) out[c] = empty ? 0.0f : acc[c] * inv_l;
  }
};

}  // namespace
}  // namespace attnbench::kernels
