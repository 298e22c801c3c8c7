// What the fuzzers found, one named test per finding, over every available kernel. The exact
// fuzz inputs are kept in fuzz/regressions/<target>/ too (replayed by fuzz_replay_test).
#include <gtest/gtest.h>

#include <cstring>

#include "oracle_support.hpp"
#include "registry_params.hpp"

namespace attnbench::testing {
namespace {

class FuzzFinding : public ::testing::TestWithParam<std::string> {
 protected:
  const Kernel& kernel() const { return *find_kernel(GetParam()); }
};

// Found by fuzz_attention (fuzz/regressions/attention/scale0_nan_key.bin, scale0_inf_key.bin):
// with scale 0 a key holding NaN or +-Inf must still make the scores NaN (0 * NaN and 0 * Inf are
// NaN, as in the oracle), so the row is NaN. naive/openblas passed the scale to cblas_sgemm as
// alpha, and BLAS does not read A or B when alpha is 0: the row came out as the plain mean of V.
TEST_P(FuzzFinding, ScaleZeroStillPropagatesNaNAndInfFromQueriesAndKeys) {
  if (!resolve(kernel()).available()) GTEST_SKIP() << "this CPU cannot run it";
  for (float special : {NAN, INFINITY, -INFINITY}) {
    for (bool in_query : {false, true}) {
      Problem p = random_problem({1, 1, 1, 3, 5, 4}, false, 41);
      p.options.scale = 0.0f;
      (in_query ? p.q[1 * 4 + 2] : p.k[3 * 4 + 1]) = special;  // query row 1, or key 3
      Workspace ws;
      const std::vector<float> out = run(kernel(), p, ws);
      // bf16 products: uniform weights (exactly 1 each) need no rounding term
      const Problem computed = as_computed(p, kernel().products);
      const std::vector<double> ref = oracle(computed);
      SCOPED_TRACE(std::string(in_query ? "query" : "key") + " holds " + std::to_string(special));
      for (std::size_t i = 0; i < out.size(); ++i) {
        ASSERT_EQ(std::isnan(out[i]), std::isnan(ref[i]))
            << "element " << i << ": got " << out[i] << ", oracle " << ref[i];
      }
      check_against_oracle(computed, out, ref);
    }
  }
}

// Found by fuzz_attention (fuzz/regressions/attention/openblas_thread_dependent_q70_k53_d53.bin):
// 70 query rows, 53 keys, head dim 53 gave different bits with 2 threads than with 1 (row 48:
// -0.44687435 against -0.446874231). naive/openblas scored a call's rows with one sgemm, and
// OpenBLAS's result for a row depends on how many rows share the call (rows 48..69 scored as a
// 22-row sgemm differ from the same rows inside a 70-row one); one thread hands the kernel the
// whole head, more threads 48-row tasks.
TEST_P(FuzzFinding, OutputIsBitwiseTheSameForEveryThreadCountAtAnEdgeShape) {
  if (!resolve(kernel()).available()) GTEST_SKIP() << "this CPU cannot run it";
  for (const Shape& shape : {Shape{1, 1, 1, 70, 53, 53}, Shape{1, 2, 1, 100, 70, 17}}) {
    Problem p = random_problem(shape, false, 43);
    p.options.scale = 1.0f;
    Workspace ws;
    const std::vector<float> serial = run(kernel(), p, ws);
    for (std::size_t threads : {2, 3}) {
      p.options.threads = threads;
      const std::vector<float> parallel = run(kernel(), p, ws);
      for (std::size_t i = 0; i < serial.size(); ++i) {
        ASSERT_EQ(std::memcmp(&serial[i], &parallel[i], sizeof(float)), 0)
            << "q_len " << shape.q_len << ": element " << i << " is " << parallel[i] << " with "
            << threads << " threads and " << serial[i] << " with 1";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, FuzzFinding, ::testing::ValuesIn(kernel_names()),
                         [](const auto& info) { return test_name(info.param); });

}  // namespace
}  // namespace attnbench::testing
