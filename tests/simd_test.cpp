// The SIMD kernels' own promises: the vectorised exp's and exp2's accuracy and special values on
// every ISA this CPU runs, the dispatching entries picking the best ISA, and tiled/simd's error
// staying within twice naive/scalar's on the same inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <xsimd/xsimd.hpp>

#include "kernels/kernel_interface.hpp"
#include "oracle_support.hpp"
#include "registry_params.hpp"

namespace attnbench::kernels {
void PrintTo(const SimdTable* table, std::ostream* out) { *out << to_string(table->isa); }
}  // namespace attnbench::kernels

namespace attnbench::testing {
namespace {

using kernels::SimdTable;

class SimdExp : public ::testing::TestWithParam<const SimdTable*> {};

// Relative error in units of float's spacing at the true value (ulp).
double ulp_error(float got, double want) {
  const double ulp = std::ldexp(1.0, std::ilogb(want) - 23);
  return std::fabs(double(got) - want) / ulp;
}

// Every float in [lo, 0] at a stride that visits ~16 million of them in [-87, 0], plus both zeros,
// through `f`; the worst error against `want` in ulp, printed.
double worst_ulp(const SimdTable& table, void (*f)(const float*, float*, std::size_t),
                 const char* name, float lo, double (*want)(double)) {
  std::vector<float> x;
  for (float v = lo; v < 0.0f; v = std::nextafter(v, 0.0f)) {
    x.push_back(v);
    std::uint32_t bits;
    std::memcpy(&bits, &v, 4);
    bits -= 67;  // skip ahead (towards zero) through the float encodings
    std::memcpy(&v, &bits, 4);
  }
  x.push_back(0.0f);
  x.push_back(-0.0f);
  std::vector<float> y(x.size());
  f(x.data(), y.data(), x.size());
  double worst = 0;
  float worst_at = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double e = ulp_error(y[i], want(double(x[i])));
    if (e > worst) worst = e, worst_at = x[i];
  }
  std::printf("%s %-20s %zu inputs in [%g, 0]: max error %.2f ulp at x = %.9g\n", name,
              std::string(to_string(table.isa)).c_str(), x.size(), double(lo), worst, worst_at);
  EXPECT_EQ(y[x.size() - 1], 1.0f);
  EXPECT_EQ(y[x.size() - 2], 1.0f);
  return worst;
}

TEST_P(SimdExp, WithinThreeUlpOfDoubleExpOverSoftmaxRange) {
  if (!cpu_supports(GetParam()->isa)) GTEST_SKIP() << "this CPU cannot run it";
  // Cephes' polynomial is good to about 1 ulp on the reduced range; the reduction and the
  // final multiply by 2^n add at most one rounding each.
  EXPECT_LE(
      worst_ulp(*GetParam(), GetParam()->exp, "exp", -87.0f, [](double x) { return std::exp(x); }),
      3.0);
}

// exp2, the softmax sweeps' exp: its reduction is exact, so only the polynomial's error is left.
TEST_P(SimdExp, Exp2WithinTwoUlpOfDoubleExp2OverSoftmaxRange) {
  if (!cpu_supports(GetParam()->isa)) GTEST_SKIP() << "this CPU cannot run it";
  EXPECT_LE(worst_ulp(*GetParam(), GetParam()->exp2, "exp2", -126.0f,
                      [](double x) { return std::exp2(x); }),
            2.0);
}

TEST_P(SimdExp, FlushesVeryNegativeAndKeepsNaN) {
  if (!cpu_supports(GetParam()->isa)) GTEST_SKIP() << "this CPU cannot run it";
  const float x[] = {-INFINITY, -1e30f, -200.0f, -87.5f, -88.0f, -103.0f, NAN, -86.9f, -1.0f};
  float y[std::size(x)];
  GetParam()->exp(x, y, std::size(x));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y[i], 0.0f) << "exp(" << x[i] << ")";
  EXPECT_TRUE(std::isnan(y[6]));
  EXPECT_GT(y[7], 0.0f);
  EXPECT_TRUE(std::isnormal(y[7]));
  EXPECT_NEAR(y[8], std::exp(-1.0), 1e-7);
}

TEST_P(SimdExp, Exp2FlushesVeryNegativeAndKeepsNaN) {
  if (!cpu_supports(GetParam()->isa)) GTEST_SKIP() << "this CPU cannot run it";
  const float x[] = {-INFINITY, -1e30f,  -300.0f, -126.5f, -127.0f, -149.0f,
                     NAN,       -125.9f, -1.0f,   0.25f,   -0.5f};
  float y[std::size(x)];
  GetParam()->exp2(x, y, std::size(x));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y[i], 0.0f) << "exp2(" << x[i] << ")";
  EXPECT_TRUE(std::isnan(y[6]));
  EXPECT_TRUE(std::isnormal(y[7]));
  EXPECT_EQ(y[8], 0.5f);
  EXPECT_NEAR(y[9], std::exp2(0.25), 2e-7);  // a few ulp above 0, as a rounded max can give
  EXPECT_NEAR(y[10], std::exp2(-0.5), 1e-7);
}

INSTANTIATE_TEST_SUITE_P(Isa, SimdExp, ::testing::ValuesIn(kernels::simd_tables()),
                         [](const auto& info) {
                           return test_name(std::string(to_string(info.param->isa)));
                         });

TEST(SimdTables, OneTablePerIsaWidestFirst) {
  const std::vector<Isa> isas = {Isa::avx512f, Isa::avx2, Isa::sse4_2};
  ASSERT_EQ(kernels::simd_tables().size(), isas.size());
  for (std::size_t i = 0; i < isas.size(); ++i) {
    EXPECT_EQ(kernels::simd_tables()[i]->isa, isas[i]);
  }
}

TEST(Dispatch, PicksTheBestIsaThisCpuHas) {
  const auto cpu = xsimd::available_architectures();
  const Isa best = cpu.avx512f ? Isa::avx512f : cpu.fma3_avx2 ? Isa::avx2 : Isa::sse4_2;
  for (const char* strategy : {"tiled", "naive"}) {
    const Kernel& dispatcher = *find_kernel(std::string(strategy) + "/simd");
    ASSERT_TRUE(dispatcher.dispatches);
    EXPECT_EQ(resolve(dispatcher).isa, best);
    EXPECT_EQ(resolve(dispatcher).strategy, dispatcher.strategy);
    EXPECT_EQ(resolve(dispatcher).name,
              std::string(strategy) + "/simd/" + std::string(to_string(best)));
    // attention() returns the kernel that ran: the resolved one, or the forced one.
    Problem p = random_problem({1, 1, 1, 5, 7, 3}, false, 1);
    std::vector<float> o(p.shape.q_elements());
    Workspace ws;
    EXPECT_EQ(&attention(dispatcher, p.shape, p.options, p.tensors(o), ws), &resolve(dispatcher));
    const Kernel& sse = *find_kernel(std::string(strategy) + "/simd/sse4.2");
    EXPECT_EQ(&attention(sse, p.shape, p.options, p.tensors(o), ws), &sse);
  }
}

// On the same inputs, the error of tiled/simd against the oracle is at most twice that of
// naive/scalar: online softmax and a fast exp cost no accuracy that matters.
TEST(Accuracy, TiledSimdWithinTwiceNaiveScalarError) {
  const Kernel& tiled = resolve(*find_kernel("tiled/simd"));
  const Kernel& naive = *find_kernel("naive/scalar");
  double tiled_rms = 0, naive_rms = 0, tiled_max = 0, naive_max = 0;
  std::size_t count = 0;
  for (std::size_t d : {16, 64, 128}) {
    for (bool causal : {false, true}) {
      Problem p = random_problem({1, 2, 1, 500, 1500, d}, causal, std::uint32_t(d + causal));
      const std::vector<double> ref = oracle(p);
      Workspace ws;
      const std::vector<float> a = run(tiled, p, ws), b = run(naive, p, ws);
      for (std::size_t i = 0; i < ref.size(); ++i) {
        const double ea = std::fabs(a[i] - ref[i]), eb = std::fabs(b[i] - ref[i]);
        tiled_rms += ea * ea, naive_rms += eb * eb;
        tiled_max = std::max(tiled_max, ea), naive_max = std::max(naive_max, eb);
      }
      count += ref.size();
    }
  }
  tiled_rms = std::sqrt(tiled_rms / double(count));
  naive_rms = std::sqrt(naive_rms / double(count));
  std::printf(
      "error vs oracle over %zu outputs: %s rms %.3g max %.3g; naive/scalar rms %.3g max %.3g\n",
      count, std::string(tiled.name).c_str(), tiled_rms, tiled_max, naive_rms, naive_max);
  EXPECT_LE(tiled_rms, 2 * naive_rms);
  EXPECT_LE(tiled_max, 2 * naive_max);
}

}  // namespace
}  // namespace attnbench::testing
