// Ring attention (ring/) under mpirun: every rank runs every test, the global problem made from
// the same seed on each, its O and gradients gathered from the ranks' rows and held to the same
// criteria as the single-process kernels (testing/). tests/CMakeLists.txt runs it with 1 to 4
// ranks.
#include <gtest/gtest.h>
#include <mpi.h>
#include <cstring>

#include <attnbench/ring.hpp>

#include "testing/backward.hpp"
#include "testing/problem.hpp"

namespace attnbench::testing {
namespace {

std::size_t ranks() {
  int p;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  return std::size_t(p);
}
std::size_t rank() {
  int r;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return std::size_t(r);
}

const Kernel& kernel() { return *find_kernel("tiled/simd"); }

// Rank r's rows of a global tensor (ring::local_rows, this communicator).
std::vector<float> local_rows(const std::vector<float>& global, std::size_t heads, std::size_t n,
                              std::size_t width, std::size_t r, bool causal) {
  return ring::local_rows(global.data(), heads, n, width, ranks(), r, causal);
}

// Every rank's local [heads][local_len][width] rows put back in their global places.
std::vector<float> gather_global(const std::vector<float>& local, std::size_t heads, std::size_t n,
                                 std::size_t width, bool causal) {
  const int p = int(ranks());
  std::vector<int> counts(p), offsets(p);
  for (int r = 0; r < p; ++r)
    counts[r] = int(heads * ring::local_len(n, ranks(), std::size_t(r), causal) * width);
  for (int r = 1; r < p; ++r) offsets[r] = offsets[r - 1] + counts[r - 1];
  std::vector<float> all(std::size_t(offsets[p - 1] + counts[p - 1]));
  MPI_Allgatherv(local.data(), int(local.size()), MPI_FLOAT, all.data(), counts.data(),
                 offsets.data(), MPI_FLOAT, MPI_COMM_WORLD);
  std::vector<float> global(heads * n * width);
  for (int r = 0; r < p; ++r)
    ring::place_rows(all.data() + offsets[r], heads, n, width, ranks(), std::size_t(r), causal,
                     global.data());
  return global;
}

struct Case {
  Shape shape;  // q_len = kv_len = the sequence
  bool causal;
  bool outliers;
};
std::vector<Case> cases() {
  std::vector<Case> all;
  for (bool causal : {false, true}) {
    all.push_back({{1, 1, 1, 1, 1, 8}, causal, false});       // n = 1: ranks without rows
    all.push_back({{1, 4, 2, 37, 37, 5}, causal, false});     // GQA, odd d, n % P != 0
    all.push_back({{2, 2, 2, 130, 130, 16}, causal, true});   // batch, rescaling outliers
    all.push_back({{1, 2, 1, 611, 611, 64}, causal, false});  // past one key block
  }
  return all;
}

struct RingRun {
  std::vector<float> o, lse;  // this rank's rows
};
RingRun run_forward(const Problem& p, std::size_t threads) {
  const Shape& s = p.shape;
  const bool causal = p.options.causal;
  const std::size_t n = s.q_len, local = ring::local_len(n, ranks(), rank(), causal);
  std::vector<float> q = local_rows(p.q, s.batch * s.q_heads, n, s.head_dim, rank(), causal);
  std::vector<float> k = local_rows(p.k, s.batch * s.kv_heads, n, s.head_dim, rank(), causal);
  std::vector<float> v = local_rows(p.v, s.batch * s.kv_heads, n, s.head_dim, rank(), causal);
  RingRun r{std::vector<float>(s.batch * s.q_heads * local * s.head_dim, -12345.0f),
            std::vector<float>(s.batch * s.q_heads * local, -12345.0f)};
  Options options = p.options;
  options.threads = threads;
  Workspace ws;
  ring::ring_attention(MPI_COMM_WORLD, kernel(), {s.batch, s.q_heads, s.kv_heads, n, s.head_dim},
                       options, Tensors{q.data(), k.data(), v.data(), r.o.data(), r.lse.data()},
                       ws);
  return r;
}

TEST(Ring, ForwardMatchesOracle) {
  for (const Case& c : cases()) {
    Problem p = random_problem(c.shape, c.causal, 7);
    if (c.outliers) add_outliers(p);
    const RingRun r = run_forward(p, 1);
    const std::vector<float> o = gather_global(r.o, c.shape.batch * c.shape.q_heads, c.shape.q_len,
                                               c.shape.head_dim, c.causal);
    const OracleAnswer ref = solve(p);
    const Comparison cmp = compare_with_plain(p.view(), o.data(), ref.yardstick());
    EXPECT_FALSE(cmp.mismatch) << "P = " << ranks() << ", n = " << c.shape.q_len
                               << (c.causal ? " causal: " : ": ")
                               << (cmp.mismatch ? cmp.mismatch->describe() : "");
    // LSE against the single-process kernel's
    std::vector<float> lse =
        gather_global(r.lse, c.shape.batch * c.shape.q_heads, c.shape.q_len, 1, c.causal);
    std::vector<float> o1(p.shape.q_elements()), lse1(lse.size());
    Tensors t = p.tensors(o1);
    t.lse = lse1.data();
    Workspace ws;
    attention(kernel(), p.shape, p.options, t, ws);
    for (std::size_t i = 0; i < lse.size(); ++i)
      ASSERT_NEAR(lse[i], lse1[i], 1e-5 * (1 + std::fabs(lse1[i]))) << "row " << i;
  }
}

// K and V stored as float16 by each step's call: the oracle on the rounded K and V.
TEST(Ring, ForwardWithF16KvMatchesOracle) {
  for (bool causal : {false, true}) {
    Problem p = random_problem({1, 2, 1, 203, 203, 32}, causal, 19);
    for (auto* t : {&p.k, &p.v})
      for (float& x : *t) x = round_to(KvType::f16, x);
    p.options.kv_type = KvType::f16;
    const RingRun r = run_forward(p, 1);
    const std::vector<float> o = gather_global(r.o, 2, 203, 32, causal);
    Problem rounded = p;
    rounded.options.kv_type = KvType::f32;
    const Comparison cmp = compare_with_plain(rounded.view(), o.data(), solve(rounded).yardstick());
    EXPECT_FALSE(cmp.mismatch) << (cmp.mismatch ? cmp.mismatch->describe() : "");
  }
}

TEST(Ring, SameBitsForEveryThreadCount) {
  for (const Case& c : cases()) {
    const Problem p = random_problem(c.shape, c.causal, 11);
    const RingRun one = run_forward(p, 1), two = run_forward(p, 2);
    EXPECT_TRUE(one.o.empty() ||  // a rank without rows
                std::memcmp(one.o.data(), two.o.data(), one.o.size() * sizeof(float)) == 0)
        << "n = " << c.shape.q_len;
  }
}

TEST(Ring, BackwardMatchesOracle) {
  for (const Case& c : cases()) {
    Problem p = random_problem(c.shape, c.causal, 13);
    if (c.outliers) add_outliers(p);
    const Shape& s = p.shape;
    const std::size_t n = s.q_len, d = s.head_dim, qh = s.batch * s.q_heads,
                      kvh = s.batch * s.kv_heads;
    const std::vector<float> d_o = random_output_gradient(p, 17);
    for (std::size_t threads : {1, 2}) {
      const RingRun f = run_forward(p, threads);
      std::vector<float> q = local_rows(p.q, qh, n, d, rank(), c.causal);
      std::vector<float> k = local_rows(p.k, kvh, n, d, rank(), c.causal);
      std::vector<float> v = local_rows(p.v, kvh, n, d, rank(), c.causal);
      std::vector<float> g = local_rows(d_o, qh, n, d, rank(), c.causal);
      std::vector<float> dq(q.size(), -12345.0f), dk(k.size(), -12345.0f), dv(v.size(), -12345.0f);
      Options options = p.options;
      options.threads = threads;
      Workspace ws;
      ring::ring_attention_backward(
          MPI_COMM_WORLD, kernel(), {s.batch, s.q_heads, s.kv_heads, n, d}, options,
          Tensors{q.data(), k.data(), v.data(), const_cast<float*>(f.o.data()),
                  const_cast<float*>(f.lse.data())},
          Gradients{g.data(), dq.data(), dk.data(), dv.data()}, ws);
      const GradientsOf<float> got{gather_global(dq, qh, n, d, c.causal),
                                   gather_global(dk, kvh, n, d, c.causal),
                                   gather_global(dv, kvh, n, d, c.causal)};
      for (const GradientCheck& check : check_kernel_gradients(kernel(), p, d_o, got)) {
        EXPECT_FALSE(check.failure)
            << "P = " << ranks() << ", n = " << n << (c.causal ? " causal, " : ", ") << threads
            << " threads: " << check.tensor << ": " << check.failure.value_or("");
      }
    }
  }
}

// A bad input on the last rank only: every rank throws the same Error, naming the rank and the
// field, and none hangs (a hang fails the test by its ctest timeout).
TEST(Ring, BadInputOnOneRankStopsEveryRank) {
  const Problem p = random_problem({1, 2, 1, 50, 50, 8}, true, 3);
  const std::size_t last = ranks() - 1;
  struct Bad {
    const char* field;
    void (*spoil)(Options&, ring::RingShape&);
  };
  const Bad bads[] = {
      {"options.window_left", [](Options& o, ring::RingShape&) { o.window_left = 4; }},
      {"seq_len", [](Options&, ring::RingShape& s) { s.seq_len += ranks() > 1 ? 1 : 0; }},
      {"scale", [](Options& o, ring::RingShape&) { o.scale = -1.0f; }},
  };
  for (const Bad& bad : bads) {
    if (ranks() == 1 && std::string(bad.field) != "options.window_left") continue;
    Options options = p.options;
    ring::RingShape shape{1, 2, 1, 50, 8};
    if (rank() == last) bad.spoil(options, shape);
    const std::size_t local = ring::local_len(50, ranks(), rank(), true);
    std::vector<float> q(2 * local * 8, 1.0f), kv(local * 8, 1.0f), o(q.size());
    Workspace ws;
    try {
      ring::ring_attention(MPI_COMM_WORLD, kernel(), shape, options,
                           Tensors{q.data(), kv.data(), kv.data(), o.data()}, ws);
      ADD_FAILURE() << "no Error for a bad " << bad.field;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("rank " + std::to_string(last)), std::string::npos) << what;
      EXPECT_NE(what.find(bad.field), std::string::npos) << what;
    }
  }
}

TEST(Ring, LayoutCoversTheSequenceOnce) {
  for (bool causal : {false, true}) {
    for (std::size_t n : {1, 2, 7, 100, 101}) {
      for (std::size_t p : {1, 2, 3, 4}) {
        std::vector<int> seen(n);
        std::size_t rows = 0;
        for (std::size_t r = 0; r < p; ++r) {
          for (const KeySpan& s : ring::local_spans(n, p, r, causal))
            for (std::size_t i = s.begin; i < s.end; ++i) ++seen[i];
          rows += ring::local_len(n, p, r, causal);
        }
        EXPECT_EQ(rows, n);
        for (int x : seen) EXPECT_EQ(x, 1) << "n " << n << " P " << p;
      }
    }
  }
}

}  // namespace
}  // namespace attnbench::testing

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  // Only rank 0 prints the results; every rank's failures still fail its exit status.
  if (attnbench::testing::rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int status = RUN_ALL_TESTS();
  int worst = 0;
  MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
