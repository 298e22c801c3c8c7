// The K/V storage types' conversions, bit for bit: the library's scalar float16 and bfloat16
// conversions against references written here from the formats' definitions (and, for float16,
// against the CPU's own F16C instructions where it has them), and every SIMD kernel's widening
// load against the scalar conversion over all 65536 16-bit patterns.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <attnbench/attnbench.hpp>
#include "kernels/kernel_interface.hpp"
#include "tensor_checks.hpp"

namespace attnbench {
namespace {

std::uint32_t bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
float from_bits(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

// binary16 decoded from its definition: (-1)^s 2^(e-15) (1 + m/1024), subnormal 2^-14 (m/1024).
double half_definition(std::uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  const double sign = s ? -1.0 : 1.0;
  if (e == 31) return m ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(m / 1024.0, -14);
  return sign * std::ldexp(1.0 + m / 1024.0, e - 15);
}

// The nearest of the non-negative finite halves to |x| (ties to the even pattern), or infinity
// past 65520 (IEEE: round as if the exponent were unbounded, 65536 being the even neighbour), as
// a search in the sorted list of all of them: no bit tricks shared with the library.
std::uint16_t half_by_search(float x) {
  static const std::vector<double> values = [] {
    std::vector<double> v;
    for (std::uint32_t h = 0; h < 0x7C00; ++h) v.push_back(half_definition(std::uint16_t(h)));
    return v;
  }();
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(double(x));
  if (a >= 65520.0) return sign | 0x7C00;
  const auto above = std::lower_bound(values.begin(), values.end(), a);
  std::size_t hi = std::size_t(above - values.begin()), lo = hi == 0 ? 0 : hi - 1;
  if (hi == values.size() || values[hi] == a) lo = hi = std::min(hi, values.size() - 1);
  const double d_lo = a - values[lo], d_hi = values[hi] - a;
  const std::size_t pick = d_lo < d_hi ? lo : d_hi < d_lo ? hi : (lo % 2 == 0 ? lo : hi);
  return std::uint16_t(sign | pick);
}

// The nearest bfloat16 (a float32 whose low 16 bits are zero) to x, ties to the even pattern, by
// comparing the two candidates' distances in double (both are exact there).
std::uint16_t bfloat16_by_distance(float x) {
  const std::uint32_t u = bits(x);
  const std::uint32_t down = u & 0xFFFF0000u, up = down + 0x10000u;
  const double d_down = std::fabs(double(x) - double(from_bits(down)));
  const double up_value =
      (up & 0x7F800000u) == 0x7F800000u ? std::copysign(INFINITY, x) : double(from_bits(up));
  // Past the largest bfloat16 the "up" neighbour is infinity: it wins from the halfway point on
  // (the distance to 2^128, as for the unbounded exponent).
  const double d_up = std::isinf(up_value) ? std::fabs(std::ldexp(std::copysign(1.0, x), 128) - x)
                                           : std::fabs(up_value - double(x));
  if (d_down < d_up) return std::uint16_t(down >> 16);
  if (d_up < d_down) return std::uint16_t(up >> 16);
  return std::uint16_t(((down >> 16) & 1) ? up >> 16 : down >> 16);
}

// Floats to round: each side of every half's midpoint with its neighbour, the midpoints
// themselves, the halves, specials, and a million random bit patterns.
std::vector<float> float_sweep() {
  std::vector<float> xs;
  for (std::uint32_t h = 0; h < 0x7C00; ++h) {
    const double lo = half_definition(std::uint16_t(h)), hi = half_definition(std::uint16_t(h + 1));
    const float mid = float((lo + hi) / 2);  // exact: a half's midpoint has at most 12 bits
    for (float x : {float(lo), mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
      xs.push_back(x);
      xs.push_back(-x);
    }
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 1000000; ++i) xs.push_back(from_bits(rng()));
  for (float x : {0.0f, -0.0f, INFINITY, -INFINITY, 65504.0f, 65519.996f, 65520.0f, 1e-8f,
                  std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min()}) {
    xs.push_back(x);
  }
  return xs;
}

TEST(KvTypes, HalfToFloatIsTheDefinitionForEveryHalf) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float got = f16_to_float(std::uint16_t(h));
    const double want = half_definition(std::uint16_t(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << h;
      // Quiet, sign and payload kept: the 10 payload bits land on top of float's 23.
      ASSERT_EQ(bits(got), ((h & 0x8000u) << 16) | 0x7FC00000u | ((h & 0x3FFu) << 13)) << h;
    } else {
      ASSERT_EQ(bits(got), bits(float(want))) << std::hex << h;
    }
  }
}

TEST(KvTypes, FloatToHalfRoundsToNearestEven) {
  for (float x : float_sweep()) {
    if (std::isnan(x)) {
      const std::uint16_t h = float_to_f16(x);
      ASSERT_EQ(h & 0x7E00u, 0x7E00u) << x;  // a quiet NaN
      ASSERT_EQ(h & 0x3FFu, ((bits(x) >> 13) & 0x3FFu) | 0x200u);
      ASSERT_EQ(h >> 15, bits(x) >> 31);
      continue;
    }
    ASSERT_EQ(float_to_f16(x), half_by_search(x)) << x << " bits " << std::hex << bits(x);
  }
}

__attribute__((target("f16c"))) std::uint16_t half_by_f16c(float x) {
  return std::uint16_t(
      _mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(x), _MM_FROUND_TO_NEAREST_INT), 0));
}

TEST(KvTypes, FloatToHalfMatchesF16c) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "this CPU has no F16C";
  for (float x : float_sweep()) {
    ASSERT_EQ(float_to_f16(x), half_by_f16c(x)) << x << " bits " << std::hex << bits(x);
  }
}

TEST(KvTypes, BFloat16RoundsToNearestEvenAndBack) {
  for (float x : float_sweep()) {
    const std::uint16_t b = float_to_bf16(x);
    if (std::isnan(x)) {
      ASSERT_TRUE(std::isnan(bf16_to_float(b))) << x;
      continue;
    }
    ASSERT_EQ(b, bfloat16_by_distance(x)) << x << " bits " << std::hex << bits(x);
  }
  for (std::uint32_t b = 0; b < 65536; ++b)
    ASSERT_EQ(bits(bf16_to_float(std::uint16_t(b))), b << 16);
}

// q8_0's codes round half away from zero, as ggml's roundf: a block whose scale is exactly 1
// (largest magnitude 127) keeps whole values, takes halves away from zero, and the values just
// below a half down; against roundf over a sweep of scales too.
TEST(KvTypes, Q8_0RoundsHalvesAwayFromZeroAsGgml) {
  std::vector<float> x = {127.0f, 2.5f,    -2.5f,  0.5f, -0.5f, std::nextafter(0.5f, 0.0f),
                          126.5f, -126.5f, -0.25f, 3.0f, -3.0f, 1.4999999f,
                          -1.5f,  0.0f};
  x.resize(32, 7.5f);
  std::vector<float> out(32);
  round_row(KvType::q8_0, x.data(), out.data(), 32);
  const float want[14] = {127, 3, -3, 1, -1, 0, 127, -127, 0, 3, -3, 1, -2, 0};
  for (int i = 0; i < 14; ++i) EXPECT_EQ(out[i], want[i]) << "x = " << x[i];
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  for (int trial = 0; trial < 2000; ++trial) {
    for (float& e : x) e = u(rng) * std::pow(10.0f, float(trial % 7) - 3);
    round_row(KvType::q8_0, x.data(), out.data(), 32);
    float amax = 0;
    for (float e : x) amax = std::max(amax, std::fabs(e));
    const float d = f16_to_float(float_to_f16(amax / 127.0f)),
                id = d != 0 ? 1.0f / (amax / 127.0f) : 0;
    for (int i = 0; i < 32; ++i)
      ASSERT_EQ(out[i], d * float(std::int8_t(std::roundf(x[i] * id)))) << trial << " " << i;
  }
}

// The validation's fast scan (a magnitude threshold) agrees with the rounding itself.
TEST(KvTypes, OverflowThresholdIsWhereRoundingOverflows) {
  for (KvType type : {KvType::f16, KvType::bf16}) {
    const float limit = kv_overflow_threshold(type);
    EXPECT_TRUE(rounds_to_infinity(type, limit)) << to_string(type);
    EXPECT_TRUE(rounds_to_infinity(type, -limit)) << to_string(type);
    EXPECT_FALSE(rounds_to_infinity(type, std::nextafter(limit, 0.0f))) << to_string(type);
    for (float x : float_sweep()) {
      const bool over = std::isfinite(x) && std::fabs(x) >= limit;
      ASSERT_EQ(rounds_to_infinity(type, x), over) << to_string(type) << " " << x;
    }
  }
}

TEST(KvTypes, WhatBecomesInfinite) {
  EXPECT_FALSE(rounds_to_infinity(KvType::f16, 65504.0f));
  EXPECT_FALSE(rounds_to_infinity(KvType::f16, 65519.996f));
  EXPECT_TRUE(rounds_to_infinity(KvType::f16, 65520.0f));
  EXPECT_TRUE(rounds_to_infinity(KvType::f16, -70000.0f));
  EXPECT_FALSE(rounds_to_infinity(KvType::f16, INFINITY));  // already infinite: kept
  EXPECT_FALSE(rounds_to_infinity(KvType::f16, NAN));
  EXPECT_FALSE(rounds_to_infinity(KvType::bf16, 70000.0f));
  EXPECT_FALSE(rounds_to_infinity(KvType::bf16, 3.38e38f));
  EXPECT_TRUE(rounds_to_infinity(KvType::bf16, std::numeric_limits<float>::max()));
  EXPECT_FALSE(rounds_to_infinity(KvType::f32, std::numeric_limits<float>::max()));
  EXPECT_EQ(round_to(KvType::f16, 1.0f + 0x1p-11f), 1.0f);  // a tie: to even
  EXPECT_EQ(round_to(KvType::bf16, 1.0f + 0x1p-8f), 1.0f);
  // A quantised block's float16 scale, |x| / 127 or |x| / 8, sets its limit: just under it the
  // block reads back finite, at it rounds_to_infinity says so.
  for (KvType type : {KvType::q8_0, KvType::q4_0}) {
    const float limit = kv_overflow_threshold(type);
    EXPECT_EQ(limit, 65520.0f * (type == KvType::q8_0 ? 127.0f : 8.0f)) << to_string(type);
    float row[40] = {};
    row[33] = -std::nextafter(limit, 0.0f);
    round_row(type, row, row, 40);
    EXPECT_TRUE(std::isfinite(row[33])) << to_string(type);
    EXPECT_FALSE(rounds_to_infinity(type, std::nextafter(limit, 0.0f))) << to_string(type);
    EXPECT_TRUE(rounds_to_infinity(type, -limit)) << to_string(type);
    EXPECT_FALSE(rounds_to_infinity(type, NAN)) << to_string(type);  // refused elsewhere
  }
  EXPECT_EQ(kv_overflow_threshold(KvType::f16), 65520.0f);
  EXPECT_EQ(kv_type_from_string("q4_0"), KvType::q4_0);
  EXPECT_EQ(kv_type_from_string("bf16"), KvType::bf16);
  EXPECT_FALSE(kv_type_from_string("f64").has_value());
}

// Every ISA's vector load of stored values gives, bit for bit, the scalar conversion, NaNs
// included, for every 16-bit pattern.
TEST(KvTypes, SimdWideningMatchesScalarForEveryPattern) {
  std::vector<std::uint16_t> all(65536);
  for (std::uint32_t i = 0; i < 65536; ++i) all[i] = std::uint16_t(i);
  std::vector<float> out(65536);
  for (const kernels::SimdTable* table : kernels::simd_tables()) {
    if (!cpu_supports(table->isa)) continue;
    SCOPED_TRACE(std::string(to_string(table->isa)));
    table->widen_f16(all.data(), out.data(), all.size());
    for (std::uint32_t i = 0; i < 65536; ++i)
      ASSERT_EQ(bits(out[i]), bits(f16_to_float(all[i]))) << std::hex << i;
    table->widen_bf16(all.data(), out.data(), all.size());
    for (std::uint32_t i = 0; i < 65536; ++i)
      ASSERT_EQ(bits(out[i]), bits(bf16_to_float(all[i]))) << std::hex << i;
  }
}

// Every ISA's vector rounding (the packing's) gives, bit for bit, the scalar rounding over the
// sweep (its length leaves a scalar tail too).
TEST(KvTypes, SimdRoundingMatchesScalar) {
  const std::vector<float> xs = float_sweep();
  std::vector<std::uint16_t> out(xs.size());
  for (const kernels::SimdTable* table : kernels::simd_tables()) {
    if (!cpu_supports(table->isa)) continue;
    SCOPED_TRACE(std::string(to_string(table->isa)));
    table->narrow_f16(xs.data(), out.data(), xs.size());
    for (std::size_t i = 0; i < xs.size(); ++i)
      ASSERT_EQ(out[i], float_to_f16(xs[i])) << xs[i] << " bits " << std::hex << bits(xs[i]);
    table->narrow_bf16(xs.data(), out.data(), xs.size());
    for (std::size_t i = 0; i < xs.size(); ++i)
      ASSERT_EQ(out[i], float_to_bf16(xs[i])) << xs[i] << " bits " << std::hex << bits(xs[i]);
  }
}

}  // namespace
}  // namespace attnbench
