// The contenders (bench/contender.hpp) against the float64 oracle, through the same check the
// benchmark makes before it times a contender (bench/oracle_check.hpp), here over every row; and
// that check itself: it must catch a wrong element, an element never written, and a wrong row
// among the sampled ones of a long head.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "contender.hpp"
#include "oracle_check.hpp"
#include "testing/problem.hpp"

namespace {

using attnbench::bench::check_against_oracle;
using attnbench::bench::Contender;
using attnbench::bench::ContenderPoint;

struct Case {
  std::size_t n, d, threads;
  bool causal;
};

// n = 1, n not a multiple of any block, odd d; causal; one and two threads.
const Case kCases[] = {{1, 8, 1, false},    {65, 31, 1, false},  {65, 31, 2, true},
                       {200, 64, 2, false}, {200, 128, 1, true}, {300, 64, 2, true}};

std::vector<float> run_contender(Contender& c, const ContenderPoint& p,
                                 const attnbench::testing::Problem& problem) {
  std::vector<float> o(problem.shape.q_elements(), -12345.0f);
  c.prepare(p, problem.tensors(o));
  c.run();
  return o;
}

TEST(Contenders, EveryContenderPassesTheOracleCheckAtEveryRow) {
  for (const auto& c : attnbench::bench::contenders()) {
    const std::string name = c->describe().name;
    for (const Case& k : kCases) {
      const ContenderPoint p{{1, 1, 1, k.n, k.n, k.d}, k.causal, k.threads};
      SCOPED_TRACE(attnbench::bench::point_name(name, p));
      const std::string why = c->unsupported(p);
      if (!why.empty()) {
        EXPECT_TRUE(why.rfind("missing: ", 0) == 0 || why.rfind("unsupported: ", 0) == 0) << why;
#ifdef ATTNBENCH_HAVE_ONEDNN
        ADD_FAILURE() << "this build has oneDNN, yet: " << why;
#endif
        continue;
      }
      auto problem = attnbench::testing::random_problem(p.shape, k.causal, 7);
      attnbench::testing::add_outliers(problem);
      std::vector<float> o = run_contender(*c, p, problem);
      const auto check = check_against_oracle(p.shape, problem.options, problem.tensors(o), k.n);
      EXPECT_TRUE(check.passed) << check.failure;
      EXPECT_EQ(check.rows_checked, k.n);
    }
    c->release();
  }
}

TEST(Contenders, TheListHasTheDispatchedKernelTheBaselineAndOnednnWithRoles) {
  const auto list = attnbench::bench::contenders();
  ASSERT_GE(list.size(), 3u);
  EXPECT_EQ(list.front()->describe().name,
            attnbench::resolve(*attnbench::find_kernel("tiled/simd")).name);
  int baselines = 0, peers = 0;
  for (const auto& c : list) {
    const auto& d = c->describe();
    baselines += d.role == "baseline";
    peers += d.role == "peer";
    EXPECT_NE(d.json().find("\"role\": \"" + d.role + "\""), std::string::npos) << d.json();
  }
  EXPECT_EQ(baselines, 1);
  EXPECT_GE(peers, 1);
}

// A contender whose output is off: the check must fail it, naming the row.
TEST(OracleCheck, FailsAWrongElementAndAnUnwrittenOne) {
  const ContenderPoint p{{1, 1, 1, 64, 64, 16}, false, 1};
  auto problem = attnbench::testing::random_problem(p.shape, false, 3);
  auto c = attnbench::bench::kernel_contender(attnbench::default_kernel());
  std::vector<float> o = run_contender(*c, p, problem);
  ASSERT_TRUE(check_against_oracle(p.shape, problem.options, problem.tensors(o), 64).passed);

  std::vector<float> wrong = o;
  wrong[10 * 16 + 3] += 1e-3f;  // row 10: far below any visible error, far above the bound
  const auto bad = check_against_oracle(p.shape, problem.options, problem.tensors(wrong), 64);
  EXPECT_FALSE(bad.passed);
  EXPECT_NE(bad.failure.find("row 10 col 3"), std::string::npos) << bad.failure;

  std::vector<float> unwritten = o;
  unwritten[63 * 16] = -12345.0f;  // the poison the benchmark fills the output with
  EXPECT_FALSE(
      check_against_oracle(p.shape, problem.options, problem.tensors(unwritten), 64).passed);
}

// The benchmark checks 16 rows of a long head: the first and the last among them.
TEST(OracleCheck, SampledRowsIncludeTheLastRowOfALongCausalHead) {
  const ContenderPoint p{{1, 1, 1, 1000, 1000, 32}, true, 2};
  auto problem = attnbench::testing::random_problem(p.shape, true, 5);
  auto c = attnbench::bench::kernel_contender(attnbench::default_kernel());
  std::vector<float> o = run_contender(*c, p, problem);
  const auto good = check_against_oracle(p.shape, problem.options, problem.tensors(o), 16);
  EXPECT_TRUE(good.passed) << good.failure;
  EXPECT_EQ(good.rows_checked, 16u);
  o[999 * 32 + 31] += 0.05f;  // the bound at 1000 keys is about 1e-3 here
  const auto bad = check_against_oracle(p.shape, problem.options, problem.tensors(o), 16);
  EXPECT_FALSE(bad.passed);
  EXPECT_NE(bad.failure.find("row 999"), std::string::npos) << bad.failure;
}

}  // namespace
