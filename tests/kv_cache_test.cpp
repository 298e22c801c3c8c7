// K and V stored as float16, bfloat16, q8_0 and q4_0, per call (Options::kv_type) and in a
// persistent KvCache: every kernel that stores a type against the float64 oracle evaluated on the
// same rounded K and V (the fp32 error bound then applies unchanged), over the shapes that break
// tiling and the decode path; a cache filled token by token gives, bit for bit, what one call's
// own packing gives; decoding's folded query heads give what separate heads give; and every bad
// input is an Error naming its field, with the cache unchanged.
#include <gtest/gtest.h>
#include <cstring>

#include <limits>
#include <set>

#include "kernels/kernel_interface.hpp"
#include "oracle_support.hpp"
#include "registry_params.hpp"

namespace attnbench::testing {
namespace {

// p with K and V rounded to `type`: what a kernel storing that type computes with.
Problem rounded(const Problem& p, KvType type) {
  Problem r = p;
  const std::size_t d = p.shape.head_dim;
  for (auto* t : {&r.k, &r.v}) {
    for (std::size_t row = 0; row < t->size(); row += d)
      round_row(type, t->data() + row, t->data() + row, d);
  }
  return r;
}

// The kernels that store 16-bit types (`type`) and run here, by name: f16 lists the float32
// kernels that do, bf16 the bf16-products kernels too.
std::vector<std::string> storing_kernels(KvType type = KvType::f16) {
  std::vector<std::string> names;
  for (const Kernel& k : registry()) {
    if (!k.dispatches && k.available() && k.stores(type)) names.emplace_back(k.name);
  }
  return names;
}

struct TypedCase {
  std::string kernel;
  KvType type;
  Shape shape;
  bool causal;
  bool outliers;
};
std::string case_name(const TypedCase& c) {
  return test_name(c.kernel) + "_" + std::string(to_string(c.type)) + "__" + shape_name(c.shape) +
         (c.causal ? "_causal" : "") + (c.outliers ? "_outliers" : "");
}
void PrintTo(const TypedCase& c, std::ostream* out) { *out << case_name(c); }

std::vector<TypedCase> typed_cases() {
  const Shape shapes[] = {{1, 1, 1, 1, 1, 31},    {1, 1, 1, 17, 65, 31},     {1, 1, 1, 127, 200, 3},
                          {1, 1, 1, 65, 127, 64}, {1, 1, 1, 200, 1000, 128}, {2, 6, 2, 17, 65, 65},
                          {1, 1, 1, 1, 5000, 64}, {1, 8, 2, 4, 4100, 128},   {2, 4, 2, 7, 6000, 16},
                          {1, 1, 1, 64, 64, 256}};
  std::vector<TypedCase> cases;
  for (const std::string& kernel : storing_kernels()) {
    for (KvType type : {KvType::f16, KvType::bf16, KvType::q8_0, KvType::q4_0}) {
      if (!find_kernel(kernel)->stores(type)) continue;
      for (const Shape& s : shapes) {
        for (bool causal : {false, true}) cases.push_back({kernel, type, s, causal, false});
      }
      cases.push_back({kernel, type, {1, 1, 1, 17, 1000, 64}, false, true});
      cases.push_back({kernel, type, {1, 1, 1, 1, 4100, 8}, true, true});
    }
  }
  std::set<std::string> seen;
  std::erase_if(cases, [&](const TypedCase& c) { return !seen.insert(case_name(c)).second; });
  return cases;
}

class StoredTypes : public ::testing::TestWithParam<TypedCase> {};

TEST_P(StoredTypes, MatchTheOracleOnTheRoundedValues) {
  const TypedCase& c = GetParam();
  Problem p = random_problem(c.shape, c.causal, 11);
  if (c.outliers) add_outliers(p);
  p.options.kv_type = c.type;
  Workspace ws;
  const std::vector<float> out = run(*find_kernel(c.kernel), p, ws);
  const Problem r = rounded(p, c.type);
  EXPECT_LE(check_against_oracle(r, out, oracle(r)), 1.0);
}

INSTANTIATE_TEST_SUITE_P(Kernels, StoredTypes, ::testing::ValuesIn(typed_cases()),
                         [](const auto& info) { return case_name(info.param); });

// Options::quantise_query: the query rows quantised to q8_0 as well (ggml's way), against the
// oracle on the rounded Q, K and V. The decode shapes (few rows a head, folded GQA heads, split
// keys) take integer dot products where the CPU has AVX-512 VNNI; the others float32 FMAs on the
// same values.
Problem with_rounded_query(Problem r) {
  const std::size_t d = r.shape.head_dim;
  for (std::size_t row = 0; row < r.q.size(); row += d)
    round_row(KvType::q8_0, r.q.data() + row, r.q.data() + row, d);
  r.options.quantise_query = false;
  return r;
}

std::vector<TypedCase> quantised_cases() {
  std::vector<TypedCase> cases = typed_cases();
  std::erase_if(cases, [](const TypedCase& c) { return !is_quantised(c.type); });
  return cases;
}

class QuantisedQuery : public ::testing::TestWithParam<TypedCase> {};

TEST_P(QuantisedQuery, MatchesTheOracleOnTheRoundedQuery) {
  const TypedCase& c = GetParam();
  Problem p = random_problem(c.shape, c.causal, 23);
  if (c.outliers) add_outliers(p);
  p.options.kv_type = c.type;
  p.options.quantise_query = true;
  Workspace ws;
  const std::vector<float> out = run(*find_kernel(c.kernel), p, ws);
  const Problem r = with_rounded_query(rounded(p, c.type));
  EXPECT_LE(check_against_oracle(r, out, oracle(r)), 1.0);
}

INSTANTIATE_TEST_SUITE_P(Kernels, QuantisedQuery, ::testing::ValuesIn(quantised_cases()),
                         [](const auto& info) { return case_name(info.param); });

TEST(QuantisedQuery, SameBitsForEveryThreadCount) {
  const Shape shapes[] = {{1, 8, 2, 4, 4100, 128},
                          {2, 4, 2, 7, 6000, 16},
                          {1, 32, 8, 1, 9000, 128},
                          {1, 1, 1, 200, 1000, 64}};
  for (const std::string& name : storing_kernels()) {
    for (KvType type : {KvType::q8_0, KvType::q4_0}) {
      if (!find_kernel(name)->stores(type)) continue;
      for (const Shape& s : shapes) {
        Problem p = random_problem(s, false, 29);
        p.options.kv_type = type;
        p.options.quantise_query = true;
        Workspace ws;
        p.options.threads = 1;
        const std::vector<float> one = run(*find_kernel(name), p, ws);
        for (std::size_t threads : {2, 3}) {
          p.options.threads = threads;
          const std::vector<float> many = run(*find_kernel(name), p, ws);
          EXPECT_EQ(0, std::memcmp(one.data(), many.data(), one.size() * sizeof(float)))
              << name << " " << to_string(type) << " " << shape_name(s) << " " << threads
              << " threads";
        }
      }
    }
  }
}

// The packed copy a 16-bit type makes is half the float32 one (the padding aside).
TEST(StoredTypes, PackedCopyIsHalfTheBytes) {
  for (const std::string& name : storing_kernels()) {
    const Kernel& k = *find_kernel(name);
    const Shape shape{1, 1, 1, 64, 4096, 128};
    const std::size_t f32 = kernels::packed_bytes(kernels::code(k, KvType::f32)->packing, shape);
    EXPECT_EQ(kernels::packed_bytes(kernels::code(k, KvType::f16)->packing, shape) * 2, f32)
        << name;
    EXPECT_EQ(kernels::packed_bytes(kernels::code(k, KvType::bf16)->packing, shape) * 2, f32)
        << name;
  }
}

// A quantised type's packed copy is ggml's blocks and nothing else: 34 (q8_0) or 18 (q4_0) bytes
// per 32 values of K (its panels padded to whole panels of keys) and of V, a head dim that is not
// a multiple of 32 padded to whole blocks.
TEST(StoredTypes, QuantisedCopyIsWholeBlocks) {
  for (const Kernel& k : registry()) {
    if (k.dispatches || !k.stores(KvType::q8_0)) continue;
    for (std::size_t d : {32, 40, 128}) {
      const Shape shape{1, 1, 1, 64, 4096, d};  // 4096 keys: whole panels for every ISA
      const std::size_t blocks = (d + 31) / 32;
      EXPECT_EQ(kernels::packed_bytes(kernels::code(k, KvType::q8_0)->packing, shape),
                2 * 4096 * 34 * blocks)
          << k.name << " d " << d;
      EXPECT_EQ(kernels::packed_bytes(kernels::code(k, KvType::q4_0)->packing, shape),
                2 * 4096 * 18 * blocks)
          << k.name << " d " << d;
    }
  }
}

// Q, K and V for `tokens` tokens of a cache's heads, and one decode step's query rows.
struct Layer {
  Shape shape;  // kv_len: the tokens
  Problem p;
  Layer(std::size_t q_heads, std::size_t kv_heads, std::size_t q_len, std::size_t tokens,
        std::size_t d, std::uint32_t seed)
      : shape{1, q_heads, kv_heads, q_len, tokens, d}, p(random_problem(shape, true, seed)) {}
};

// Appending one token at a time, or a block, then attending to the cache: bit for bit what the
// same call computes with its own packing of the same K and V.
TEST(KvCache, AppendsGiveWhatOneCallsPackingGives) {
  for (const std::string& name : storing_kernels(KvType::bf16)) {
    for (KvType type : kAllKvTypes) {
      const Kernel& k = *find_kernel(name);  // (a kernel that reads K and V in place caches none)
      if (!k.stores(type) || kernels::code(k, type)->packing.bytes == nullptr) continue;
      for (std::size_t q_len : {1, 4, 37}) {
        SCOPED_TRACE(name + " " + std::string(to_string(type)) + " q_len " + std::to_string(q_len));
        const Layer layer(8, 2, q_len, 4100, 40, 3);
        Problem p = layer.p;
        p.options.kv_type = type;
        Workspace ws;
        const std::vector<float> want = run(*find_kernel(name), p, ws);

        const Kernel& kernel = *find_kernel(name);
        KvCache by_token(kernel, 1, 2, 40, 5000, type), by_block(kernel, 1, 2, 40, 4100, type);
        const std::size_t d = 40, tokens = 4100;
        std::vector<float> k1(2 * d), v1(2 * d);
        for (std::size_t t = 0; t < tokens; ++t) {
          for (std::size_t h = 0; h < 2; ++h) {
            std::copy_n(p.k.begin() + (h * tokens + t) * d, d, k1.begin() + h * d);
            std::copy_n(p.v.begin() + (h * tokens + t) * d, d, v1.begin() + h * d);
          }
          by_token.append(k1.data(), v1.data(), 1);
        }
        by_block.append(p.k.data(), p.v.data(), tokens, 2);
        ASSERT_EQ(by_token.length(), tokens);
        EXPECT_EQ(by_block.kv_bytes(), 2 * tokens * 2 * kv_row_bytes(type, d));
        for (const KvCache* cache : {&by_token, &by_block}) {
          std::vector<float> o(p.q.size(), -1.0f);
          Tensors t{.q = p.q.data(), .o = o.data(), .kv_cache = cache};
          Options options{.causal = true, .threads = 2};
          attention(kernel, p.shape, options, t, ws);
          EXPECT_EQ(o, want);
        }
      }
    }
  }
}

// Decoding folds the query heads of a key/value head into one problem, with its keys split into
// chunks (4500 keys) or not (1000): each row's result is the one it has as a head of its own (a
// call per query head, multi-head with one head).
TEST(KvCache, FoldedQueryHeadsGiveWhatSeparateHeadsGive) {
  for (const std::string& name : storing_kernels()) {
    const Kernel& kernel = *find_kernel(name);
    // 4 or 5 heads of 1 or 3 rows: groups of 1 to 15 rows, so every tile width of the few-row
    // micro-kernels (tile_vectors) and the MR-row tiles; d = 40 leaves a one-vector column tail.
    for (const std::size_t heads : {4, 5}) {
      for (const std::size_t d : {64, 40}) {
        for (const std::size_t q_len : {1, 3}) {
          for (const std::size_t kv_len : {4500, 1000}) {
            for (const KvType type : {KvType::f32, KvType::q4_0}) {
              if (!kernel.stores(type)) continue;
              Layer layer(heads, 1, q_len, kv_len, d, 5);
              layer.p.options.kv_type = type;
              Workspace ws;
              const std::vector<float> grouped = run(kernel, layer.p, ws);
              for (std::size_t h = 0; h < heads; ++h) {
                Problem one(Shape{1, 1, 1, q_len, kv_len, d}, layer.p.options);
                one.k = layer.p.k;
                one.v = layer.p.v;
                std::copy_n(layer.p.q.begin() + h * q_len * d, q_len * d, one.q.begin());
                const std::vector<float> alone = run(kernel, one, ws);
                EXPECT_TRUE(std::equal(alone.begin(), alone.end(), grouped.begin() + h * q_len * d))
                    << name << " heads " << heads << " d " << d << " head " << h << " q_len "
                    << q_len << " kv_len " << kv_len << " " << to_string(type);
              }
            }
          }
        }
      }
    }
  }
}

// The message names the field; what the cache holds is unchanged.
template <class Call>
void expect_error(Call&& call, const std::string& field) {
  try {
    call();
    ADD_FAILURE() << "no Error for " << field;
  } catch (const Error& e) {
    EXPECT_EQ(e.field(), field) << e.what();
  }
}

TEST(KvCache, BadInputIsAnErrorAndChangesNothing) {
  const Kernel& kernel = *find_kernel("tiled/simd");
  KvCache cache(kernel, 1, 2, 8, 10, KvType::f16);
  std::vector<float> k(2 * 8 * 4, 0.5f), v(2 * 8 * 4, 0.25f);
  cache.append(k.data(), v.data(), 4);
  std::vector<float> big = k;
  big[2 * 8 + 3] = 70000.0f;  // float16 would make it inf
  expect_error([&] { cache.append(big.data(), v.data(), 4); }, "k");
  expect_error([&] { cache.append(k.data(), nullptr, 4); }, "v");
  expect_error([&] { cache.append(k.data(), v.data(), 7); }, "tokens");  // 4 + 7 > 10
  EXPECT_EQ(cache.length(), 4u);
  try {
    cache.append(big.data(), v.data(), 4);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[19] 70000"), std::string::npos) << e.what();
  }
  KvCache bf(kernel, 1, 2, 8, 10, KvType::bf16);
  bf.append(big.data(), v.data(), 4);  // bfloat16 holds 70000 (as 69632)

  // Calls on the cache: its shape, no K/V pointers, a layout the kernel reads.
  std::vector<float> q(4 * 1 * 8, 1.0f), o(q.size());
  const Shape shape{1, 4, 2, 1, 4, 8};
  Tensors t{.q = q.data(), .o = o.data(), .kv_cache = &cache};
  Workspace ws;
  attention(kernel, shape, {}, t, ws);
  const std::vector<float> before = o;
  for (auto [field, bad] : {std::pair{"shape.kv_heads", Shape{1, 4, 4, 1, 4, 8}},
                            {"shape.head_dim", Shape{1, 4, 2, 1, 4, 16}},
                            {"shape.batch", Shape{2, 4, 2, 1, 4, 8}},
                            {"shape.kv_len", Shape{1, 4, 2, 1, 5, 8}}}) {
    expect_error([&] { attention(kernel, bad, {}, t, ws); }, field);
  }
  expect_error([&] { attention(kernel, shape, {.kv_type = KvType::bf16}, t, ws); },
               "options.kv_type");
  Tensors with_k = t;
  with_k.k = k.data();
  expect_error([&] { attention(kernel, shape, {}, with_k, ws); }, "tensors.k");
  expect_error([&] { attention(*find_kernel("tiled/scalar"), shape, {}, t, ws); },
               "tensors.kv_cache");
  for (const Kernel& other : registry()) {  // another ISA's layout
    if (!other.dispatches && other.available() && other.stores(KvType::f16) &&
        other.isa != resolve(kernel).isa) {
      expect_error([&] { attention(other, shape, {}, t, ws); }, "tensors.kv_cache");
    }
  }
  attention(*find_kernel("naive/simd"), shape, {}, t, ws);  // the same layout: reads it
  attention(kernel, shape, {}, t, ws);
  EXPECT_EQ(o, before);

  // Making a cache: a kernel without a packed layout, a type it does not store, zero sizes.
  expect_error([&] { KvCache(*find_kernel("tiled/scalar"), 1, 1, 8, 8, KvType::f32); }, "kernel");
  expect_error([&] { KvCache(*find_kernel("tiled/autovec"), 1, 1, 8, 8, KvType::f16); }, "type");
  expect_error([&] { KvCache(kernel, 1, 1, 8, 0, KvType::f16); }, "capacity");
  expect_error([&] { KvCache(kernel, 1, 0, 8, 8, KvType::f16); }, "kv_heads");
}

TEST(StoredTypes, BadOptionsAreErrors) {
  Problem p = random_problem({1, 1, 1, 4, 8, 8}, false, 1);
  Workspace ws;
  p.options.kv_type = KvType::f16;
  expect_error([&] { run(*find_kernel("tiled/scalar"), p, ws); }, "options.kv_type");
  p.v[13] = -1e6f;
  expect_error([&] { run(*find_kernel("tiled/simd"), p, ws); }, "tensors.v");
  p.options.kv_type = KvType::bf16;
  run(*find_kernel("tiled/simd"), p, ws);  // bfloat16 holds it
  p.options.kv_type = KvType::q4_0;
  p.v[13] = -4e5f;  // a block scale of 4e5 / 8: a float16
  run(*find_kernel("tiled/simd"), p, ws);
  p.v[13] = -6e5f;  // 6e5 / 8: beyond float16
  expect_error([&] { run(*find_kernel("tiled/simd"), p, ws); }, "tensors.v");
  p.options.kv_type = KvType::q8_0;  // 6e5 / 127: a float16
  run(*find_kernel("tiled/simd"), p, ws);
  p.k[2] = std::numeric_limits<float>::quiet_NaN();  // would take its block's 31 others with it
  try {
    run(*find_kernel("tiled/simd"), p, ws);
    ADD_FAILURE() << "no Error for a NaN in q8_0 storage";
  } catch (const Error& e) {
    EXPECT_EQ(e.field(), "tensors.k");
    EXPECT_NE(std::string(e.what()).find("finite values only"), std::string::npos) << e.what();
  }
  p.k[2] = 0.0f;
  p.options.quantise_query = true;
  p.q[1] = std::numeric_limits<float>::infinity();  // q8_0 too: finite values only
  expect_error([&] { run(*find_kernel("tiled/simd"), p, ws); }, "tensors.q");
  p.q[1] = 0.0f;
  run(*find_kernel("tiled/simd"), p, ws);
  p.options.kv_type = KvType::bf16;  // K not quantised: nothing to quantise the query for
  expect_error([&] { run(*find_kernel("tiled/simd"), p, ws); }, "options.quantise_query");
  p.options.kv_type = KvType::q8_0;
  p.options.quantise_query = false;
  expect_error([&] { run(*find_kernel("naive/simd"), p, ws); }, "options.kv_type");
  expect_error([&] { KvCache(*find_kernel("naive/simd"), 1, 1, 8, 8, KvType::q8_0); }, "type");
}

}  // namespace
}  // namespace attnbench::testing
