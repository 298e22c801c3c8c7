// Every bad call gives attnbench::Error naming the field and the value, before any allocation
// and without touching the output.
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "oracle_support.hpp"
#include "registry_params.hpp"

namespace attnbench::testing {
namespace {

struct BadCall {
  const char* what;
  std::function<void(Shape&, Options&, Tensors&)> spoil;
  const char* field;
  const char* value;  // expected in the message, next to the field
};

void PrintTo(const BadCall& bad, std::ostream* out) { *out << bad.what; }

class Validation : public ::testing::TestWithParam<BadCall> {};

TEST_P(Validation, FailsWithFieldAndValueBeforeAllocating) {
  const BadCall& bad = GetParam();
  Problem p = random_problem({2, 4, 2, 9, 11, 5}, false, 1);
  std::vector<float> o(p.shape.q_elements(), 7.0f);
  Shape shape = p.shape;
  Options options = p.options;
  Tensors tensors = p.tensors(o);
  bad.spoil(shape, options, tensors);
  for (const Kernel& kernel : registry()) {
    if (!kernel.available()) continue;
    Workspace ws;
    try {
      attention(kernel, shape, options, tensors, ws);
      ADD_FAILURE() << bad.what << ": no error from " << kernel.name;
    } catch (const Error& e) {
      EXPECT_EQ(e.field(), bad.field) << e.what();
      EXPECT_NE(std::string(e.what()).find(bad.field), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(bad.value), std::string::npos) << e.what();
    }
    EXPECT_EQ(ws.peak_bytes(), 0u) << bad.what << ": allocated before failing";
  }
  for (float x : o) ASSERT_EQ(x, 7.0f) << bad.what << ": output written";
}

constexpr std::size_t kHuge = std::size_t{1} << 40;

const BadCall kBadCalls[] = {
    {"zero batch", [](Shape& s, Options&, Tensors&) { s.batch = 0; }, "shape.batch", "0"},
    {"zero q heads", [](Shape& s, Options&, Tensors&) { s.q_heads = 0; }, "shape.q_heads", "0"},
    {"zero kv heads", [](Shape& s, Options&, Tensors&) { s.kv_heads = 0; }, "shape.kv_heads", "0"},
    {"zero q_len", [](Shape& s, Options&, Tensors&) { s.q_len = 0; }, "shape.q_len", "0"},
    {"zero kv_len", [](Shape& s, Options&, Tensors&) { s.kv_len = 0; }, "shape.kv_len", "0"},
    {"zero head_dim", [](Shape& s, Options&, Tensors&) { s.head_dim = 0; }, "shape.head_dim", "0"},
    {"heads not divisible", [](Shape& s, Options&, Tensors&) { s.kv_heads = 3; }, "shape.q_heads",
     "4"},
    {"q bytes overflow",
     [](Shape& s, Options&, Tensors&) {
       s.q_len = kHuge;
       s.head_dim = kHuge;
     },
     "shape", "overflow"},
    {"kv bytes overflow", [](Shape& s, Options&, Tensors&) { s.kv_len = std::size_t(1) << 62; },
     "shape", "overflow"},
    {"null q", [](Shape&, Options&, Tensors& t) { t.q = nullptr; }, "tensors.q", "nullptr"},
    {"null k", [](Shape&, Options&, Tensors& t) { t.k = nullptr; }, "tensors.k", "nullptr"},
    {"null v", [](Shape&, Options&, Tensors& t) { t.v = nullptr; }, "tensors.v", "nullptr"},
    {"null o", [](Shape&, Options&, Tensors& t) { t.o = nullptr; }, "tensors.o", "nullptr"},
    {"o overlaps q", [](Shape&, Options&, Tensors& t) { t.o = const_cast<float*>(t.q) + 3; },
     "tensors.o", "overlaps input tensors.q"},
    {"o overlaps v", [](Shape&, Options&, Tensors& t) { t.v = t.o + 10; }, "tensors.o",
     "overlaps input tensors.v"},
    {"scale NaN", [](Shape&, Options& o, Tensors&) { o.scale = NAN; }, "options.scale", "nan"},
    {"scale inf", [](Shape&, Options& o, Tensors&) { o.scale = INFINITY; }, "options.scale", "inf"},
    {"too many threads", [](Shape&, Options& o, Tensors&) { o.threads = 5000; }, "options.threads",
     "5000"},
    {"window of 0", [](Shape&, Options& o, Tensors&) { o.window_left = 0; }, "options.window_left",
     "0"},
    {"right window with causal",
     [](Shape&, Options& o, Tensors&) {
       o.causal = true;
       o.window_right = 4;
     },
     "options.window_right", "4"},
    {"softcap 0", [](Shape&, Options& o, Tensors&) { o.softcap = 0.0f; }, "options.softcap",
     "0.000000"},
    {"softcap negative", [](Shape&, Options& o, Tensors&) { o.softcap = -2.0f; }, "options.softcap",
     "-2.000000"},
    {"softcap NaN", [](Shape&, Options& o, Tensors&) { o.softcap = NAN; }, "options.softcap",
     "nan"},
    {"softcap inf", [](Shape&, Options& o, Tensors&) { o.softcap = INFINITY; }, "options.softcap",
     "inf"},
    {"alibi slopes of the wrong count",
     [](Shape&, Options& o, Tensors&) {
       o.alibi_slopes = {0.5f, 0.25f, 0.125f};
     },
     "options.alibi_slopes", "3 slopes"},
    {"alibi slope NaN",
     [](Shape& s, Options& o, Tensors&) {
       o.alibi_slopes.assign(s.q_heads, 0.5f), o.alibi_slopes[0] = NAN;
     },
     "options.alibi_slopes[0]", "nan"},
    {"mask both boolean and additive",
     [](Shape& s, Options& o, Tensors&) {
       static std::uint8_t keep[2 * 4 * 9 * 11];
       static float bias[2 * 4 * 9 * 11];
       o.mask = {keep, bias, {s.batch, s.q_heads, s.q_len, s.kv_len}};
     },
     "options.mask", "keep and bias"},
    {"mask of 3 heads, not 4 or 1",
     [](Shape& s, Options& o, Tensors&) {
       static std::uint8_t keep[2 * 4 * 9 * 11];
       o.mask = {keep, nullptr, {s.batch, 3, s.q_len, s.kv_len}};
     },
     "options.mask.sizes[1]", "3"},
    {"mask broadcast over keys",
     [](Shape& s, Options& o, Tensors&) {
       static float bias[2 * 4 * 9];
       o.mask = {nullptr, bias, {s.batch, s.q_heads, s.q_len, 1}};
     },
     "options.mask.sizes[3]", "1"},
    {"mask overlapping the output",
     [](Shape& s, Options& o, Tensors& t) {
       o.mask = {nullptr, t.o, {1, 1, 1, s.kv_len}};
     },
     "tensors.o", "options.mask.bias"},
    {"alignment out of range",
     [](Shape&, Options& o, Tensors&) { o.alignment = static_cast<Alignment>(7); },
     "options.alignment", "7"},
};

INSTANTIATE_TEST_SUITE_P(BadInput, Validation, ::testing::ValuesIn(kBadCalls),
                         [](const auto& info) { return test_name(info.param.what); });

TEST(Validation, NaiveScoreMatrixOverBudgetFailsBeforeAllocating) {
  Problem p = random_problem({1, 1, 1, 300, 200, 4}, false, 2);
  std::vector<float> o(p.shape.q_elements());
  p.options.memory_budget_bytes = 300 * 200 * 4 - 1;
  for (const Kernel& kernel : registry()) {
    if (!kernel.available()) continue;
    Workspace ws;
    if (kernel.strategy == Strategy::naive) {
      try {
        attention(kernel, p.shape, p.options, p.tensors(o), ws);
        ADD_FAILURE() << kernel.name << " accepted a score matrix over budget";
      } catch (const Error& e) {
        EXPECT_EQ(e.field(), "options.memory_budget_bytes");
        EXPECT_NE(std::string(e.what()).find("needs 240000 bytes"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("239999"), std::string::npos) << e.what();
      }
      EXPECT_EQ(ws.peak_bytes(), 0u);
    } else {
      EXPECT_NO_THROW(attention(kernel, p.shape, p.options, p.tensors(o), ws)) << kernel.name;
    }
  }
  // The default budget is half the machine's memory: a 128k x 128k matrix (64 GiB) exceeds it
  // here, and a tiled kernel is not limited by it.
  EXPECT_GT(default_memory_budget(), std::size_t{1} << 28);
  EXPECT_EQ(naive_score_bytes({1, 1, 1, 131072, 131072, 64}), std::size_t{1} << 36);
}

TEST(Validation, ExactlyAtBudgetIsAllowed) {
  Problem p = random_problem({1, 1, 1, 30, 20, 4}, false, 3);
  std::vector<float> o(p.shape.q_elements());
  p.options.memory_budget_bytes = 30 * 20 * 4;
  Workspace ws;
  EXPECT_NO_THROW(attention(*find_kernel("naive/scalar"), p.shape, p.options, p.tensors(o), ws));
}

// The backward pass: every bad call an Error naming the field and the value, before allocating
// and without touching the gradients.
struct BadBackward {
  const char* what;
  std::function<void(Shape&, Options&, Tensors&, Gradients&)> spoil;
  const char* field;
  const char* value;
};
void PrintTo(const BadBackward& bad, std::ostream* out) { *out << bad.what; }

class BackwardValidation : public ::testing::TestWithParam<BadBackward> {};

TEST_P(BackwardValidation, FailsWithFieldAndValueBeforeAllocating) {
  const BadBackward& bad = GetParam();
  Problem p = random_problem({2, 4, 2, 9, 11, 5}, false, 1);
  std::vector<float> o(p.shape.q_elements()), lse(2 * 4 * 9), d_o(o.size(), 1.0f);
  std::vector<float> dq(o.size(), 7.0f), dk(p.k.size(), 7.0f), dv(p.v.size(), 7.0f);
  Shape shape = p.shape;
  Options options = p.options;
  Tensors tensors = p.tensors(o);
  tensors.lse = lse.data();
  Gradients gradients{d_o.data(), dq.data(), dk.data(), dv.data()};
  bad.spoil(shape, options, tensors, gradients);
  for (const Kernel& kernel : registry()) {
    if (!kernel.available() || !kernel.has_backward()) continue;
    Workspace ws;
    try {
      attention_backward(kernel, shape, options, tensors, gradients, ws);
      ADD_FAILURE() << bad.what << ": no error from " << kernel.name;
    } catch (const Error& e) {
      EXPECT_EQ(e.field(), bad.field) << e.what();
      EXPECT_NE(std::string(e.what()).find(bad.value), std::string::npos) << e.what();
    }
    EXPECT_EQ(ws.peak_bytes(), 0u) << bad.what << ": allocated before failing";
  }
  for (const auto* t : {&dq, &dk, &dv}) {
    for (float x : *t) ASSERT_EQ(x, 7.0f) << bad.what << ": gradient written";
  }
}

const BadBackward kBadBackwards[] = {
    {"zero head_dim", [](Shape& s, Options&, Tensors&, Gradients&) { s.head_dim = 0; },
     "shape.head_dim", "0"},
    {"no lse", [](Shape&, Options&, Tensors& t, Gradients&) { t.lse = nullptr; }, "tensors.lse",
     "nullptr"},
    {"no o", [](Shape&, Options&, Tensors& t, Gradients&) { t.o = nullptr; }, "tensors.o",
     "nullptr"},
    {"no d_o", [](Shape&, Options&, Tensors&, Gradients& g) { g.d_o = nullptr; }, "gradients.d_o",
     "nullptr"},
    {"no dk", [](Shape&, Options&, Tensors&, Gradients& g) { g.dk = nullptr; }, "gradients.dk",
     "nullptr"},
    {"dq overlaps d_o", [](Shape&, Options&, Tensors&, Gradients& g) { g.d_o = g.dq + 3; },
     "gradients.dq", "overlaps input gradients.d_o"},
    {"dv overlaps dk", [](Shape&, Options&, Tensors&, Gradients& g) { g.dv = g.dk + 1; },
     "gradients.dv", "overlaps output gradients.dk"},
    {"nan scale",
     [](Shape&, Options& o, Tensors&, Gradients&) {
       o.scale = std::numeric_limits<float>::quiet_NaN();
     },
     "options.scale", "nan"},
    {"window of 0", [](Shape&, Options& o, Tensors&, Gradients&) { o.window_left = 0; },
     "options.window_left", "0"},
};

INSTANTIATE_TEST_SUITE_P(BadInput, BackwardValidation, ::testing::ValuesIn(kBadBackwards),
                         [](const auto& info) { return test_name(info.param.what); });

TEST(BackwardValidation, KernelWithoutBackwardIsNamed) {
  for (const Kernel& kernel : registry()) {
    if (!kernel.available() || kernel.has_backward()) continue;
    Problem p = random_problem({1, 1, 1, 4, 4, 4}, false, 1);
    std::vector<float> o(16), lse(4), d_o(16), dq(16), dk(16), dv(16);
    Tensors t = p.tensors(o);
    t.lse = lse.data();
    Workspace ws;
    try {
      attention_backward(kernel, p.shape, p.options, t,
                         Gradients{d_o.data(), dq.data(), dk.data(), dv.data()}, ws);
      ADD_FAILURE() << kernel.name << " ran a backward it does not have";
    } catch (const Error& e) {
      EXPECT_EQ(e.field(), "kernel");
      EXPECT_NE(std::string(e.what()).find(kernel.name), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("no backward"), std::string::npos) << e.what();
    }
  }
}

TEST(BackwardValidation, NaivePAndDsOverBudgetFailBeforeAllocating) {
  Problem p = random_problem({1, 1, 1, 300, 200, 4}, false, 2);
  std::vector<float> o(p.shape.q_elements()), lse(300), d_o(o.size()), dq(o.size()), dk(p.k.size()),
      dv(p.v.size());
  Tensors t = p.tensors(o);
  t.lse = lse.data();
  Workspace ws;
  attention(*find_kernel("naive/scalar"), p.shape, p.options, t, ws);
  p.options.memory_budget_bytes = 2 * 300 * 224 * 4 - 1;  // rows padded to 224 floats
  Workspace fresh;
  try {
    attention_backward(*find_kernel("naive/scalar"), p.shape, p.options, t,
                       Gradients{d_o.data(), dq.data(), dk.data(), dv.data()}, fresh);
    ADD_FAILURE() << "P and dS over budget accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.field(), "options.memory_budget_bytes");
    EXPECT_NE(std::string(e.what()).find("need 537600 bytes"), std::string::npos) << e.what();
  }
  EXPECT_EQ(fresh.peak_bytes(), 0u);
}

// A bf16-products kernel rounds Q (and the backward's dO) too: a finite value bfloat16 would turn
// into an infinity is an Error naming the tensor, forward and backward, before anything is written.
TEST(Bf16Validation, QueryBeyondBfloat16IsAnErrorNamingIt) {
  const Kernel& kernel = *find_kernel("tiled/scalar-bf16");  // runs on every CPU
  Problem p = random_problem({1, 2, 1, 9, 11, 5}, false, 1);
  p.q[7] = 3.4e38f;
  std::vector<float> o(p.shape.q_elements(), 7.0f), lse(2 * 9);
  Tensors t = p.tensors(o);
  Workspace ws;
  try {
    attention(kernel, p.shape, p.options, t, ws);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.field(), "tensors.q") << e.what();
  }
  EXPECT_EQ(o[0], 7.0f);
  p.q[7] = 1.0f;
  t.lse = lse.data();
  attention(kernel, p.shape, p.options, t, ws);
  std::vector<float> d_o(o.size(), 1.0f), dq(o.size()), dk(p.k.size()), dv(p.v.size());
  d_o[3] = -3.4e38f;
  try {
    attention_backward(kernel, p.shape, p.options, t,
                       Gradients{d_o.data(), dq.data(), dk.data(), dv.data()}, ws);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.field(), "gradients.d_o") << e.what();
  }
}

// ALiBi's slopes as the paper's get_slopes gives them: 8 heads 2^-1 ... 2^-8; 6 heads those of 4
// (2^-2, 2^-4, 2^-6, 2^-8) then every other one of 8 (2^-1, 2^-3).
TEST(Alibi, SlopesAsThePaperDefines) {
  const std::vector<float> eight = alibi_slopes(8), six = alibi_slopes(6);
  ASSERT_EQ(eight.size(), 8u);
  for (int h = 0; h < 8; ++h) EXPECT_EQ(eight[h], std::ldexp(1.0f, -h - 1));
  const std::vector<float> want = {0x1p-2f, 0x1p-4f, 0x1p-6f, 0x1p-8f, 0x1p-1f, 0x1p-3f};
  EXPECT_EQ(six, want);
  EXPECT_TRUE(alibi_slopes(0).empty());
  EXPECT_EQ(alibi_slopes(1), std::vector<float>{0x1p-8f});
}

TEST(Registry, NamesAreUniqueAndWellFormed) {
  std::set<std::string_view> seen;
  for (const Kernel& k : registry()) {
    EXPECT_TRUE(seen.insert(k.name).second) << k.name;
    EXPECT_EQ(k.name.substr(0, k.name.find('/')), to_string(k.strategy)) << k.name;
    EXPECT_EQ(find_kernel(k.name), &k);
  }
  EXPECT_EQ(find_kernel("no/such"), nullptr);
  EXPECT_TRUE(default_kernel().available());
}

TEST(Reference, RejectsBadShapesToo) {
  const float x = 1.0f;
  double o = 0.0;
  EXPECT_THROW(reference_attention({1, 1, 1, 1, 1, 0}, {}, &x, &x, &x, &o), Error);
  EXPECT_THROW(reference_attention({1, 1, 1, 1, 1, 1}, {}, nullptr, &x, &x, &o), Error);
}

}  // namespace
}  // namespace attnbench::testing
