// attention() on bfloat16 tensors (Bf16Tensors): the float32 call's result on the widened values,
// bit for bit, with O in float32 or rounded to bfloat16; through a KvCache too; bad calls named.
#include <gtest/gtest.h>

#include <bit>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include <attnbench/attnbench.hpp>

namespace attnbench::testing {
namespace {

// Values of ±4 standard deviations and an outlier row, rounded to bfloat16: the widened float32
// inputs and their bit patterns.
struct Bf16Inputs {
  std::vector<std::uint16_t> bits;
  std::vector<float> wide;
};
Bf16Inputs bf16_inputs(std::size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.5f);
  Bf16Inputs in;
  for (std::size_t i = 0; i < count; ++i) {
    const float x = i % 97 == 5 ? 40.0f : normal(rng);  // an outlier forces a rescale
    in.bits.push_back(float_to_bf16(x));
    in.wide.push_back(bf16_to_float(in.bits.back()));
  }
  return in;
}

const Kernel& named(const char* name) { return *find_kernel(name); }

struct Case {
  Shape shape;
  bool causal;
};

class Bf16Io : public ::testing::TestWithParam<const char*> {};

TEST_P(Bf16Io, EqualsTheFloatCallOnWidenedValuesBitForBit) {
  const Kernel& kernel = named(GetParam());
  if (!kernel.available()) GTEST_SKIP() << "this CPU cannot run it";
  for (const Case& c : {Case{{1, 1, 1, 1, 1, 8}, false}, Case{{2, 4, 2, 37, 53, 19}, true},
                        Case{{1, 2, 1, 130, 130, 64}, false}}) {
    for (std::size_t threads : {1u, 2u}) {
      const Shape& s = c.shape;
      Options options;
      options.causal = c.causal;
      options.threads = threads;
      const Bf16Inputs q = bf16_inputs(s.q_elements(), 1), k = bf16_inputs(s.kv_elements(), 2),
                       v = bf16_inputs(s.kv_elements(), 3);
      std::vector<float> want(s.q_elements()), want_lse(s.q_elements() / s.head_dim);
      Workspace ws;
      attention(kernel, s, options,
                Tensors{q.wide.data(), k.wide.data(), v.wide.data(), want.data(), want_lse.data()},
                ws);

      std::vector<float> got(s.q_elements()), lse(want_lse.size());
      std::vector<std::uint16_t> got_bf16(s.q_elements());
      attention(kernel, s, options,
                Bf16Tensors{.q = q.bits.data(),
                            .k = k.bits.data(),
                            .v = v.bits.data(),
                            .o_f32 = got.data(),
                            .lse = lse.data()},
                ws);
      EXPECT_GE(ws.peak_bytes(), (s.q_elements() + 2 * s.kv_elements()) * sizeof(float))
          << "the widened copies are the call's scratch";
      attention(
          kernel, s, options,
          Bf16Tensors{
              .q = q.bits.data(), .k = k.bits.data(), .v = v.bits.data(), .o = got_bf16.data()},
          ws);
      for (std::size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want[i]))
            << kernel.name << " o_f32[" << i << "], " << threads << " threads";
        ASSERT_EQ(got_bf16[i], float_to_bf16(want[i])) << kernel.name << " o[" << i << "]";
      }
      for (std::size_t i = 0; i < lse.size(); ++i) ASSERT_EQ(lse[i], want_lse[i]) << "lse " << i;
    }
  }
}

TEST_P(Bf16Io, ThroughAKvCacheAsTheFloatCall) {
  const Kernel& kernel = named(GetParam());
  if (!kernel.available()) GTEST_SKIP() << "this CPU cannot run it";
  const Shape s{1, 4, 2, 1, 70, 32};  // decoding: one row per query head
  const Bf16Inputs q = bf16_inputs(s.q_elements(), 4), k = bf16_inputs(s.kv_elements(), 5),
                   v = bf16_inputs(s.kv_elements(), 6);
  const KvType type = kernel.products == Products::bf16 ? KvType::bf16 : KvType::f32;
  std::unique_ptr<KvCache> made;
  try {
    made = std::make_unique<KvCache>(kernel, s.batch, s.kv_heads, s.head_dim, 80, type);
  } catch (const Error& e) {
    GTEST_SKIP() << "no cache for this kernel: " << e.what();
  }
  KvCache& cache = *made;
  cache.append(k.wide.data(), v.wide.data(), s.kv_len);
  std::vector<float> want(s.q_elements());
  std::vector<std::uint16_t> got(s.q_elements());
  Workspace ws;
  attention(kernel, s, Options{}, Tensors{.q = q.wide.data(), .o = want.data(), .kv_cache = &cache},
            ws);
  attention(kernel, s, Options{},
            Bf16Tensors{.q = q.bits.data(), .o = got.data(), .kv_cache = &cache}, ws);
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], float_to_bf16(want[i])) << i;
}

INSTANTIATE_TEST_SUITE_P(Kernels, Bf16Io,
                         ::testing::Values("tiled/simd", "naive/simd", "tiled/scalar",
                                           "tiled/simd-bf16", "tiled/scalar-bf16"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& ch : name) ch = std::isalnum(ch) ? ch : '_';
                           return name;
                         });

TEST(Bf16Io, RoundsTheOutputToNearestEvenAndKeepsNaN) {
  // Two keys of equal weight: O = (a + b) / 2 = 1 + 3 2^-8 (exact in float32), halfway between
  // the bfloat16 values 1 + 2^-7 (0x3F81, odd) and 1 + 2^-6 (0x3F82, even).
  const Shape s{1, 1, 1, 1, 2, 1};
  const std::uint16_t q[] = {0}, k[] = {0, 0};
  const std::uint16_t v[] = {0x3F81, 0x3F82};
  std::uint16_t o[1];
  Workspace ws;
  attention(named("tiled/scalar"), s, Options{}, Bf16Tensors{.q = q, .k = k, .v = v, .o = o}, ws);
  EXPECT_EQ(o[0], 0x3F82);  // to even: up, where truncating would give 0x3F81
  const std::uint16_t nan_v[] = {0x7FC0, float_to_bf16(1.0f)};
  attention(named("tiled/scalar"), s, Options{}, Bf16Tensors{.q = q, .k = k, .v = nan_v, .o = o},
            ws);
  EXPECT_TRUE(std::isnan(bf16_to_float(o[0])));
}

TEST(Bf16Io, BadCallsNameTheFieldBeforeAllocating) {
  const Shape s{1, 1, 1, 4, 4, 8};
  std::vector<std::uint16_t> q(32), k(32), v(32), o(32);
  std::vector<float> o_f32(32);
  struct Bad {
    Bf16Tensors tensors;
    const char* field;
    const char* value;
  };
  const Bad bad[] = {
      {{.q = nullptr, .k = k.data(), .v = v.data(), .o = o.data()}, "tensors.q", "nullptr"},
      {{.q = q.data(), .k = nullptr, .v = v.data(), .o = o.data()}, "tensors.k", "nullptr"},
      {{.q = q.data(), .k = k.data(), .v = v.data()}, "tensors.o", "nullptr"},
      {{.q = q.data(), .k = k.data(), .v = v.data(), .o = o.data(), .o_f32 = o_f32.data()},
       "tensors.o_f32",
       "o is set too"},
      {{.q = q.data(), .k = k.data(), .v = v.data(), .o = q.data() + 4},
       "tensors.o",
       "overlaps input tensors.q"},
  };
  for (const Bad& b : bad) {
    Workspace ws;
    try {
      attention(named("tiled/scalar"), s, Options{}, b.tensors, ws);
      ADD_FAILURE() << b.field << ": no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.field(), b.field) << e.what();
      EXPECT_NE(std::string(e.what()).find(b.value), std::string::npos) << e.what();
    }
    EXPECT_EQ(ws.peak_bytes(), 0u) << b.field << ": allocated before failing";
  }
  Workspace ws;
  Shape zero = s;
  zero.head_dim = 0;
  EXPECT_THROW(
      attention(named("tiled/scalar"), zero, Options{},
                Bf16Tensors{.q = q.data(), .k = k.data(), .v = v.data(), .o = o.data()}, ws),
      Error);
}

}  // namespace
}  // namespace attnbench::testing
