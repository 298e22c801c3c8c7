// Every registry kernel against the float64 oracle, over shapes chosen to break tiling: lengths
// of 1, one past a block, primes, q_len != kv_len; odd head dims; causal on and off, windows and
// both alignments (testing/problem.hpp: window_cases); GQA; and
// outliers that make the online softmax rescale. Then the properties every kernel must keep.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <numeric>
#include <set>
#include <thread>

#include <oneapi/tbb/task_arena.h>
#include <sys/resource.h>

#include "kernels/kernel_interface.hpp"
#include "mask_band.hpp"
#include "oracle_support.hpp"
#include "registry_params.hpp"

namespace attnbench::testing {
namespace {

struct Case {
  Shape shape;
  Masking mask;
  bool outliers;
};

std::string case_name(const Case& c) {
  std::string name = shape_name(c.shape) + c.mask.name();
  if (c.outliers) name += "_outliers";
  return name;
}

// One kernel on one case, printed "tiled_simd_avx2/b1_h4_kv2_q33_k70_d40_causal".
struct KernelCase {
  std::string kernel;
  Case c;
};
std::string case_name(const KernelCase& kc) { return test_name(kc.kernel) + "/" + case_name(kc.c); }
void PrintTo(const KernelCase& kc, std::ostream* out) { *out << case_name(kc); }

std::vector<Case> oracle_cases() {
  const std::size_t lengths[] = {1, 2, 3, 17, 64, 65, 127, 200, 1000};
  const std::size_t dims[] = {1, 3, 8, 31, 64, 65, 128, 256};
  std::vector<Case> cases;
  for (bool causal : {false, true}) {
    // Every pair of lengths at an odd head dim that fits no vector width.
    for (std::size_t q : lengths) {
      for (std::size_t k : lengths) cases.push_back({{1, 1, 1, q, k, 31}, causal, false});
    }
    // Every head dim at lengths that leave edge tiles in both directions.
    for (std::size_t d : dims) {
      for (auto [q, k] : {std::pair{1, 1}, {65, 127}, {200, 1000}, {127, 17}}) {
        cases.push_back({{1, 1, 1, std::size_t(q), std::size_t(k), d}, causal, false});
      }
    }
    // Several heads: multi-head, grouped-query and multi-query, two batches.
    for (std::size_t kv_heads : {6, 3, 2, 1}) {
      cases.push_back({{2, 6, kv_heads, 17, 65, 8}, causal, false});
      cases.push_back({{2, 6, kv_heads, 65, 33, 65}, causal, false});
    }
    // Decoding: few queries, many keys, split into key chunks and merged by log-sum-exp (tiled
    // kernels), chunk edges included (4097 keys: two chunks and one key).
    cases.push_back({{1, 1, 1, 1, 5000, 64}, causal, false});
    cases.push_back({{1, 1, 1, 3, 4097, 33}, causal, false});
    cases.push_back({{2, 4, 2, 7, 6000, 16}, causal, false});
    cases.push_back({{1, 1, 1, 1, 4100, 8}, causal, true});
    // Outliers that force the running max to move in every key block.
    for (std::size_t d : {3, 64, 128}) {
      for (auto [q, k] : {std::pair{17, 1000}, {200, 200}, {1, 127}}) {
        cases.push_back({{1, 1, 1, std::size_t(q), std::size_t(k), d}, causal, true});
      }
    }
  }
  for (const MaskCase& m : window_cases(true)) cases.push_back({m.shape, m.mask, m.outliers});
  // The loops above meet at a few shapes (q 1, k 1, d 31): keep the first of each name.
  std::set<std::string> seen;
  std::erase_if(cases, [&](const Case& c) { return !seen.insert(case_name(c)).second; });
  return cases;
}

// Problem and oracle answer per case (and products: bf16 kernels are compared on the rounded
// inputs), computed once and shared by every kernel.
const std::pair<Problem, OracleAnswer>& solved(const Case& c, Products products) {
  static std::map<std::string, std::pair<Problem, OracleAnswer>> cache;
  static std::map<std::string, std::uint32_t> seeds;  // the same problem for both products
  const std::string name = case_name(c);
  const std::string key = name + "/" + std::string(to_string(products));
  auto it = cache.find(key);
  if (it == cache.end()) {
    const std::uint32_t seed = seeds.emplace(name, std::uint32_t(seeds.size() + 1)).first->second;
    Problem p = random_problem(c.shape, c.mask, seed);
    if (c.outliers) add_outliers(p);
    OracleAnswer ref = solve(p, products);
    it = cache.emplace(key, std::pair{std::move(p), std::move(ref)}).first;
  }
  return it->second;
}

// Worst error seen per kernel (absolute, and as a fraction of each criterion's allowance), printed
// at the end; each case asserts its own (both at most 1).
struct Worst {
  double abs_error = 0, bound_ratio = 0, plain_ratio = 0;
};
std::map<std::string, Worst>& worst_seen() {
  static std::map<std::string, Worst> worst;
  return worst;
}

class WorstErrorReport : public ::testing::Environment {
 public:
  void TearDown() override {
    for (const auto& [kernel, w] : worst_seen()) {
      std::printf(
          "oracle error %-24s max |error| %.3g, max error/bound %.3f, max error/(plain float32's "
          "criterion) %.3f\n",
          kernel.c_str(), w.abs_error, w.bound_ratio, w.plain_ratio);
    }
  }
};
const auto* const kReport = ::testing::AddGlobalTestEnvironment(new WorstErrorReport);

const Kernel& kernel_named(const std::string& name) { return *find_kernel(name); }

// The code a call with default options runs for `kernel` (resolved).
const kernels::KernelCode* default_code(const Kernel& kernel) {
  const Kernel& runs = resolve(kernel);
  return kernels::code(runs, kernels::stored_type(runs, Options{}));
}

#define SKIP_IF_UNAVAILABLE(kernel) \
  if (!(kernel).available()) GTEST_SKIP() << (kernel).name << ": this CPU cannot run it"

// ---------------------------------------------------------------------------------------------

std::vector<KernelCase> every_kernel_on_every_case() {
  std::vector<KernelCase> all;
  for (const std::string& kernel : kernel_names()) {
    for (const Case& c : oracle_cases()) all.push_back({kernel, c});
  }
  return all;
}

class KernelVsOracle : public ::testing::TestWithParam<KernelCase> {};

TEST_P(KernelVsOracle, WithinErrorBound) {
  const Kernel& kernel = kernel_named(GetParam().kernel);
  SKIP_IF_UNAVAILABLE(kernel);
  const auto& [problem, ref] = solved(GetParam().c, kernel.products);
  Workspace ws;
  const std::vector<float> out = run(kernel, problem, ws);
  const CriterionRatios ratio = check_against_oracle(problem, out, ref);
  Worst& w = worst_seen()[std::string(kernel.name)];
  w.bound_ratio = std::max(w.bound_ratio, ratio.bound);
  w.plain_ratio = std::max(w.plain_ratio, ratio.plain);
  for (std::size_t i = 0; i < out.size(); ++i) {
    w.abs_error = std::max(w.abs_error, std::fabs(double(out[i]) - ref.o[i]));
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, KernelVsOracle,
                         ::testing::ValuesIn(every_kernel_on_every_case()), [](const auto& info) {
                           return test_name(info.param.kernel) + "__" + case_name(info.param.c);
                         });

// ---------------------------------------------------------------------------------------------

class EveryKernel : public ::testing::TestWithParam<std::string> {
 protected:
  const Kernel& kernel() const { return kernel_named(GetParam()); }
};

// One query whose scores against three keys are exactly `scores`, with V the identity, so the
// output row is the softmax weights themselves.
std::vector<float> weights_for(const Kernel& kernel, const std::vector<float>& scores) {
  Problem p({1, 1, 1, 1, 3, 3});
  p.options.scale = 1.0f;
  p.q = {1, 0, 0};
  p.k.clear();
  for (float s : scores) p.k.insert(p.k.end(), {s, 0.0f, 0.0f});
  p.v = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  Workspace ws;
  return run(kernel, p, ws);
}

// How far a weight may sit from its exact value: float32 rounding, or for bf16 products one
// bfloat16 rounding of the weight (2^-8 relative: 8 significant bits) and float32's.
double weight_tolerance(const Kernel& kernel) {
  return kernel.products == Products::bf16 ? std::ldexp(1.0, -7) : 1e-6;
}

TEST_P(EveryKernel, SoftmaxIsStableForLargeLogits) {
  SKIP_IF_UNAVAILABLE(kernel());
  // Scores 1 apart (8 for bf16 products: bfloat16 holds 1016, 1024, not 1023), exact either way.
  const float step = kernel().products == Products::bf16 ? 8.0f : 1.0f;
  const std::vector<float> large = weights_for(kernel(), {1024, 1024 - step, 1024 - 2 * step});
  const std::vector<float> small = weights_for(kernel(), {2 * step, step, 0});
  for (int j = 0; j < 3; ++j) {
    EXPECT_TRUE(std::isfinite(large[j])) << "weight " << j;
    EXPECT_NEAR(large[j], small[j], weight_tolerance(kernel())) << "weight " << j;
  }
  const double e = std::exp(double(step));
  EXPECT_NEAR(small[0], e * e / (e * e + e + 1), weight_tolerance(kernel()));
}

TEST_P(EveryKernel, WorkedExampleWeights) {
  SKIP_IF_UNAVAILABLE(kernel());
  // 2.1, 0.4 and 1.3 to the nearest bfloat16, which every kernel then takes exactly.
  const std::vector<float> w = weights_for(kernel(), {2.09375f, 0.400390625f, 1.296875f});
  EXPECT_NEAR(w[0], 0.61, 0.005);
  EXPECT_NEAR(w[1], 0.11, 0.005);
  EXPECT_NEAR(w[2], 0.28, 0.005);
  EXPECT_NEAR(w[0] + w[1] + w[2], 1.0, 3 * weight_tolerance(kernel()));
}

TEST_P(EveryKernel, PermutingKeysAndValuesTogetherLeavesOutputUnchanged) {
  SKIP_IF_UNAVAILABLE(kernel());
  const Shape shape{1, 2, 1, 37, 150, 24};
  Problem p = random_problem(shape, false, 7);
  Problem permuted = p;
  std::vector<std::size_t> order(shape.kv_len);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(3));
  for (std::size_t j = 0; j < shape.kv_len; ++j) {
    std::copy_n(p.k.begin() + order[j] * 24, 24, permuted.k.begin() + j * 24);
    std::copy_n(p.v.begin() + order[j] * 24, 24, permuted.v.begin() + j * 24);
  }
  Workspace ws;
  const std::vector<float> a = run(kernel(), p, ws);
  const std::vector<float> b = run(kernel(), permuted, ws);
  // Both must meet the oracle's bound, so they differ by at most twice that bound; in practice
  // only by the changed summation order.
  const OracleAnswer ref = solve(p, kernel().products);
  check_against_oracle(p, a, ref);
  check_against_oracle(permuted, b, ref);
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double bound =
        row_bound(as_computed(p, kernel().products), 0, i / (37 * 24), (i / 24) % 37) +
        ref.weight_unit * ref.vmax[i / 24];
    EXPECT_NEAR(a[i], b[i], 2 * bound) << "element " << i;
  }
}

TEST_P(EveryKernel, PermutingQueriesPermutesOutputRows) {
  SKIP_IF_UNAVAILABLE(kernel());
  const Shape shape{1, 1, 1, 45, 70, 19};
  Problem p = random_problem(shape, false, 11);
  Problem permuted = p;
  std::vector<std::size_t> order(shape.q_len);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(5));
  for (std::size_t i = 0; i < shape.q_len; ++i) {
    std::copy_n(p.q.begin() + order[i] * 19, 19, permuted.q.begin() + i * 19);
  }
  Workspace ws;
  const std::vector<float> a = run(kernel(), p, ws);
  const std::vector<float> b = run(kernel(), permuted, ws);
  for (std::size_t i = 0; i < shape.q_len; ++i) {
    for (std::size_t c = 0; c < 19; ++c) {
      // Our kernels compute each row on its own, so rows match to the bit; a BLAS may round a row
      // differently at another position of its tile, so the test allows twice the oracle bound.
      EXPECT_NEAR(b[i * 19 + c], a[order[i] * 19 + c], 2 * row_bound(p, 0, 0, order[i]))
          << "row " << i << " col " << c;
    }
  }
}

TEST_P(EveryKernel, RowsWithNothingToWeighAreZero) {
  SKIP_IF_UNAVAILABLE(kernel());
  // Causal with q_len > kv_len: the first q_len - kv_len rows see no key at all.
  Problem masked = random_problem({1, 1, 1, 40, 25, 9}, true, 13);
  std::fill(masked.v.begin(), masked.v.end(), NAN);  // V must not even be read for those rows
  Workspace ws;
  const std::vector<float> out = run(kernel(), masked, ws);
  for (std::size_t i = 0; i < 15 * 9; ++i) EXPECT_EQ(out[i], 0.0f) << "element " << i;
  for (std::size_t i = 15 * 9; i < out.size(); ++i) EXPECT_TRUE(std::isnan(out[i])) << i;

  // Every score -inf (an infinite query against negative keys) weighs nothing either, whatever V
  // holds; with 5000 keys the decoding path splits the keys and merges the chunks.
  for (std::size_t kv_len : {100, 5000}) {
    Problem minus_inf = random_problem({1, 1, 1, 3, kv_len, 4}, false, 17);
    for (float& x : minus_inf.k) x = -std::fabs(x) - 0.5f;
    std::fill_n(minus_inf.q.begin() + 4, 4, INFINITY);  // row 1
    minus_inf.v[5 * 4 + 1] = NAN;                       // rows 0 and 2: column 1 is NaN
    const std::vector<float> o = run(kernel(), minus_inf, ws);
    const OracleAnswer ref = solve(minus_inf, kernel().products);
    for (std::size_t c = 0; c < 4; ++c) EXPECT_EQ(o[4 + c], 0.0f) << kv_len << " keys";
    EXPECT_TRUE(std::isnan(o[1]));
    check_against_oracle(minus_inf, o, ref);
  }
}

TEST_P(EveryKernel, NaNAndInfLandWhereTheOracleHasThem) {
  SKIP_IF_UNAVAILABLE(kernel());
  for (bool causal : {false, true}) {
    Problem p = random_problem({1, 1, 1, 90, 90, 10}, causal, 19);
    p.q[5 * 10 + 3] = NAN;        // query row 5: its whole output row
    p.k[70 * 10 + 1] = NAN;       // key 70: every row that sees it
    p.v[40 * 10 + 6] = NAN;       // value 40, column 6: that column of rows that see key 40
    p.v[20 * 10 + 2] = INFINITY;  // value 20, column 2: +inf (or NaN with the -inf below)
    p.v[20 * 10 + 8] = -INFINITY;
    p.q[80 * 10 + 0] = INFINITY;  // query row 80: +inf scores, so exp(inf - inf) = NaN
    Workspace ws;
    const std::vector<float> out = run(kernel(), p, ws);
    const OracleAnswer ref = solve(p, kernel().products);
    std::size_t nan_count = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
      EXPECT_EQ(std::isnan(out[i]), std::isnan(ref.o[i]))
          << "element " << i << " causal " << causal;
      nan_count += std::isnan(ref.o[i]);
    }
    EXPECT_GT(nan_count, 0u);
    check_against_oracle(p, out, ref);
  }
}

// The kernels' keys under a mask tensor: the band around the diagonal it keeps keys in, so that a
// causal or banded mask given as a tensor skips key blocks as the causal mask and windows do.
TEST(MaskBand, NarrowsToTheKeysTheTensorKeeps) {
  const Shape s{1, 1, 1, 50, 80, 8};
  const std::int64_t shift = 80 - 50;  // bottom-right: row i's diagonal key is i + 30
  std::vector<std::uint8_t> keep(50 * 80);
  std::vector<float> bias(50 * 80);
  const auto fill = [&](auto keeps) {
    for (std::size_t i = 0; i < 50; ++i) {
      for (std::size_t j = 0; j < 80; ++j) {
        const bool k =
            keeps(std::int64_t(i) + shift - std::int64_t(j));  // keys behind the diagonal
        keep[i * 80 + j] = k;
        bias[i * 80 + j] = k ? 0.5f : -INFINITY;
      }
    }
  };
  Options o;
  for (bool additive : {false, true}) {
    o.mask = additive ? MaskTensor{nullptr, bias.data(), {1, 1, 50, 80}}
                      : MaskTensor{keep.data(), nullptr, {1, 1, 50, 80}};
    fill([](std::int64_t behind) { return behind >= 0; });  // causal, as a tensor
    for (std::size_t i = 0; i < 50; ++i) {
      EXPECT_EQ(driver::kernel_key_mask(s, o).row(i).begin, 0u) << i;
      EXPECT_EQ(driver::kernel_key_mask(s, o).row(i).end, i + shift + 1) << i;
    }
    fill([](std::int64_t behind) { return behind >= 0 && behind < 7 && behind != 3; });  // a band
    for (std::size_t i = 0; i < 50; ++i) {
      const KeySpan keys = driver::kernel_key_mask(s, o).row(i);
      EXPECT_EQ(keys.begin, i + shift - 6) << i;
      EXPECT_EQ(keys.end, i + shift + 1) << i;
    }
    fill([](std::int64_t) { return false; });  // nothing: at most the diagonal key
    for (std::size_t i = 0; i < 50; ++i) EXPECT_LE(driver::kernel_key_mask(s, o).row(i).size(), 1u);
  }
  // Broadcast over rows (a padding mask): the keys before the first row's last kept one at most.
  std::vector<std::uint8_t> padding(80, 1);
  for (std::size_t j = 75; j < 80; ++j) padding[j] = 0;
  o.mask = {padding.data(), nullptr, {1, 1, 1, 80}};
  EXPECT_EQ(driver::kernel_key_mask(s, o).row(0).end, 75u);
  EXPECT_EQ(driver::kernel_key_mask(s, o).row(0).begin, 0u);
  // Within the options' own window: never wider.
  o.window_left = 3;
  EXPECT_EQ(driver::kernel_key_mask(s, o).row(40).begin, 40u + shift - 2);
}

TEST_P(EveryKernel, MultithreadedOutputIsBitwiseIdentical) {
  SKIP_IF_UNAVAILABLE(kernel());
  // Row blocks of several heads (uneven), a decode shape whose keys are split and one whose keys
  // are not (its 4 query heads of 17 rows folded per key/value head); 32 heads of 500 rows make
  // the SIMD tiled kernels' tasks 192 rows on 2 and 3 threads and 96 on 8 (the driver's
  // task_rows; 48 for kernels without a query block), each with a shorter last block. Causal and
  // not: without the mask every row costs the same, so the driver's split differs. Windows: a
  // row block's first key block then depends on its rows.
  constexpr Alignment kTopLeft = Alignment::top_left, kBottomRight = Alignment::bottom_right;
  for (const auto& [shape, mask] :
       {std::pair<Shape, Masking>{Shape{1, 3, 1, 300, 257, 33}, true},
        {Shape{1, 2, 1, 2, 9000, 40}, true},
        {Shape{2, 8, 2, 17, 1000, 40}, true},
        {Shape{2, 16, 4, 500, 300, 24}, true},
        {Shape{1, 3, 1, 300, 257, 33}, false},
        {Shape{1, 2, 1, 2, 9000, 40}, false},
        {Shape{2, 8, 2, 17, 1000, 40}, false},
        {Shape{2, 16, 4, 500, 300, 24}, false},
        {Shape{1, 3, 1, 300, 257, 33}, {true, kBottomRight, 50}},
        {Shape{1, 2, 1, 2, 9000, 40}, {true, kBottomRight, 3000}},
        {Shape{2, 8, 2, 17, 1000, 40}, {true, kTopLeft, 200}},
        {Shape{2, 16, 4, 500, 300, 24}, {false, kTopLeft, 40, 10}},
        {Shape{2, 8, 2, 17, 1000, 40}, Masking(true, kBottomRight, std::nullopt).with_alibi()},
        {Shape{1, 3, 1, 300, 257, 33}, Masking(true, kTopLeft, 64).capped(5)},
        {Shape{2, 8, 2, 17, 1000, 40}, Masking(false).with(TensorMask::keep)},
        {Shape{1, 2, 1, 2, 9000, 40}, Masking(true).with(TensorMask::bias)},
        {Shape{2, 16, 4, 500, 300, 24}, Masking(true).with(TensorMask::padding)}}) {
    Problem p = random_problem(shape, mask, 23);
    Workspace ws;
    const std::vector<float> serial = run(kernel(), p, ws);
    for (std::size_t threads : {2, 3, 8}) {
      p.options.threads = threads;
      const std::vector<float> parallel = run(kernel(), p, ws);
      EXPECT_EQ(0, std::memcmp(serial.data(), parallel.data(), serial.size() * sizeof(float)))
          << threads << " threads, " << shape_name(shape) << mask.name();
    }
  }
}

TEST_P(EveryKernel, LongHeadsInKeyChunksGiveWhatQueryBlocksAloneGive) {
  SKIP_IF_UNAVAILABLE(kernel());
  // A head whose K and V outgrow one L3 chunk: one thread takes it whole, in super blocks of
  // query blocks over each chunk of keys; two threads take tasks of one query block, each over
  // all keys. Rows meet the same key blocks in the same order either way: bitwise equal, and
  // within the oracle's bound. The shape leaves a short last chunk and a short last super block.
  const std::size_t d = 250;
  const kernels::KernelCode* code = default_code(kernel());
  const kernels::ForwardBlocking b =
      code && code->forward.blocking ? code->forward.blocking(d) : kernels::ForwardBlocking{};
  if (b.chunk_keys == 0) GTEST_SKIP() << kernel().name << " takes no key chunks";
  ASSERT_GT(b.super_blocks, 1u) << "a super block of one query block would test nothing";
  const std::size_t q_len = b.query_block * (b.super_blocks + 1) + 5;
  const std::size_t kv_len = 2 * b.chunk_keys + 37;
  for (bool causal : {false, true}) {
    Problem p = random_problem({1, 1, 1, q_len, kv_len, d}, causal, 29);
    Workspace ws;
    const std::vector<float> whole = run(kernel(), p, ws);
    if (!causal) check_against_oracle(p, whole, oracle(p));
    p.options.threads = 2;
    const std::vector<float> blocks = run(kernel(), p, ws);
    EXPECT_EQ(0, std::memcmp(whole.data(), blocks.data(), whole.size() * sizeof(float)))
        << "causal " << causal;
  }
}

TEST_P(EveryKernel, ThreadedCallsWorkFromInsideAnArenaAndFromOtherThreads) {
  SKIP_IF_UNAVAILABLE(kernel());
  Problem p = random_problem({1, 2, 2, 100, 120, 16}, false, 31);
  Workspace ws;
  const std::vector<float> want = run(kernel(), p, ws);
  p.options.threads = 2;
  std::vector<float> in_arena, in_thread;
  tbb::task_arena outer(2);
  outer.execute([&] {  // the caller is itself a TBB worker
    Workspace local;
    in_arena = run(kernel(), p, local);
  });
  std::thread other([&] {
    Workspace local;
    in_thread = run(kernel(), p, local);
  });
  other.join();
  EXPECT_EQ(in_arena, want);
  EXPECT_EQ(in_thread, want);
}

TEST_P(EveryKernel, ScratchFollowsTheMemoryStrategy) {
  SKIP_IF_UNAVAILABLE(kernel());
  auto scratch = [&](std::size_t q_len, std::size_t kv_len) {
    Problem p = random_problem({1, 1, 1, q_len, kv_len, 64}, false, 29);
    Workspace ws;
    run(kernel(), p, ws);
    return ws.peak_bytes();
  };
  if (kernel().strategy == Strategy::naive) {
    for (auto [q, k] : {std::pair{64, 1024}, {300, 200}, {1, 16384}}) {
      EXPECT_GE(scratch(q, k), std::size_t(q) * k * 4) << q << " x " << k;
    }
  } else {
    // Apart from the packed copy of K and V that a SIMD kernel streams (the size of K and V
    // again, O(n d)), a tiled kernel's scratch does not depend on the key length.
    auto working = [&](std::size_t kv_len) {
      return scratch(64, kv_len) -
             kernels::packed_bytes(default_code(kernel())->packing, {1, 1, 1, 64, kv_len, 64});
    };
    const std::size_t short_keys = working(1024);
    EXPECT_EQ(short_keys, working(16384));
    EXPECT_LT(short_keys, 64u * 1024 * 4);  // less than the score matrix it avoids
    EXPECT_LE(kernels::packed_bytes(default_code(kernel())->packing, {1, 1, 1, 64, 16384, 64}),
              2 * 16384 * 64 * 4 + 4096);
  }
}

// The promise a benchmark loop relies on: once a workspace has served a shape, the next call of
// that shape allocates nothing and touches no fresh page, so it pays no page faults (counted by
// the kernel as minor faults: 1024 of them would be the naive kernel's 4 MB score matrix).
TEST_P(EveryKernel, SecondCallOfAShapeTakesNoPageFaults) {
  SKIP_IF_UNAVAILABLE(kernel());
  Problem p = random_problem({1, 1, 1, 256, 4096, 64}, false, 37);
  p.options.threads = 1;  // no worker threads, whose stacks would fault too
  std::vector<float> o(p.shape.q_elements());
  Workspace ws;
  auto minor_faults = [] {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_minflt;
  };
  attention(kernel(), p.shape, p.options, p.tensors(o), ws);
  const long before = minor_faults();
  attention(kernel(), p.shape, p.options, p.tensors(o), ws);
  EXPECT_LE(minor_faults() - before, 16);
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryKernel, ::testing::ValuesIn(kernel_names()),
                         [](const auto& info) { return test_name(info.param); });

}  // namespace
}  // namespace attnbench::testing
