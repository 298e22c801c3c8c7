// One attention call's inputs, owned: seeded random fills, the outliers that force the online
// softmax to rescale, the float64 oracle's answer, and a run of a kernel on it.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <attnbench/attnbench.hpp>
#include "testing/error_bound.hpp"
#include "testing/reference.hpp"

namespace attnbench::testing {

struct Problem {
  Shape shape;
  Options options;
  std::vector<float> q, k, v;
  // The mask tensor's values when the problem owns one (options.mask points into them).
  std::vector<std::uint8_t> mask_keep;
  std::vector<float> mask_bias;

  // Zero Q, K and V of the shape.
  explicit Problem(const Shape& s = {}, const Options& o = {})
      : shape(s), options(o), q(s.q_elements()), k(s.kv_elements()), v(s.kv_elements()) {}
  // A copy's mask points into its own values.
  Problem(const Problem& p)
      : shape(p.shape),
        options(p.options),
        q(p.q),
        k(p.k),
        v(p.v),
        mask_keep(p.mask_keep),
        mask_bias(p.mask_bias) {
    own_mask();
  }
  Problem(Problem&&) = default;
  Problem& operator=(const Problem& p) {
    Problem copy(p);
    return *this = std::move(copy);
  }
  Problem& operator=(Problem&&) = default;
  void own_mask() {
    if (!mask_keep.empty()) options.mask.keep = mask_keep.data();
    if (!mask_bias.empty()) options.mask.bias = mask_bias.data();
  }

  ProblemView view() const { return {shape, options, q.data(), k.data(), v.data()}; }
  Tensors tensors(std::vector<float>& o) const { return {q.data(), k.data(), v.data(), o.data()}; }
};

// Seeded random values. One generator and one distribution of each kind serve every tensor a
// RandomFill fills, in the order they are filled, so a problem's values depend on its seed alone.
class RandomFill {
 public:
  explicit RandomFill(std::uint32_t seed) : rng_(seed) {}
  // Standard normal values times `scale`.
  void normal(std::vector<float>& t, float scale = 1.0f) {
    for (float& x : t) x = normal_(rng_) * scale;
  }
  // Uniform in [0, 1).
  void uniform(std::vector<float>& t) {
    for (float& x : t) x = uniform_(rng_);
  }

 private:
  std::mt19937 rng_;
  std::normal_distribution<float> normal_{0.0f, 1.0f};
  std::uniform_real_distribution<float> uniform_{0.0f, 1.0f};
};

// Standard-normal Q, K, V from a fixed seed.
inline Problem random_problem(const Shape& shape, bool causal, std::uint32_t seed) {
  Problem p(shape);
  p.options.causal = causal;
  RandomFill fill(seed);
  for (auto* t : {&p.q, &p.k, &p.v}) fill.normal(*t);
  return p;
}

// A test case's mask tensor (Options::mask): none; boolean per query head and row, broadcast over
// the batch ([1, q_heads, q_len, kv_len], about 1 key in 4 dropped, every fifth row's keys all
// dropped); additive per batch and row, broadcast over heads ([batch, 1, q_len, kv_len], normal
// biases of deviation 2, 1 in 8 -inf, every seventh row all -inf); or a boolean padding mask
// ([batch, 1, 1, kv_len], batch b's last 5 b + 3 keys dropped); or a band given as a boolean tensor
// ([1, 1, q_len, kv_len]: row i keeps the 40 keys ending at i + kv_len - q_len, with every third
// key of them dropped), which the kernels narrow their key blocks to.
enum class TensorMask : std::uint8_t { none, keep, bias, padding, band };

// A test case's mask options (Options' causal, alignment and window), soft-cap, ALiBi and mask
// tensor, and its name in test names: "_causal", "_topleft", "_wl37", "_wr5", "_cap5", "_alibi",
// "_keep", "_bias", "_pad".
struct Masking {
  bool causal = false;
  Alignment alignment = Alignment::bottom_right;
  std::optional<std::size_t> left, right;
  std::optional<float> softcap;
  bool alibi = false;  // slopes 2^-(h+1) for query head h (alibi_slopes())
  TensorMask tensor = TensorMask::none;

  Masking(bool causal_mask = false) : causal(causal_mask) {}  // NOLINT: plain causal or not
  Masking(bool causal_mask, Alignment a, std::optional<std::size_t> window_left,
          std::optional<std::size_t> window_right = std::nullopt)
      : causal(causal_mask), alignment(a), left(window_left), right(window_right) {}

  void apply(Options& o) const {
    o.causal = causal;
    o.alignment = alignment;
    o.window_left = left;
    o.window_right = right;
    o.softcap = softcap;
  }
  Masking capped(float cap) const {
    Masking m = *this;
    m.softcap = cap;
    return m;
  }
  Masking with_alibi() const {
    Masking m = *this;
    m.alibi = true;
    return m;
  }
  Masking with(TensorMask t) const {
    Masking m = *this;
    m.tensor = t;
    return m;
  }
  // The tests' ALiBi slopes: 2^-(h+1), steeper than a model's so that the bias decides weights.
  static std::vector<float> alibi_slopes(std::size_t q_heads) {
    std::vector<float> slopes(q_heads);
    for (std::size_t h = 0; h < q_heads; ++h) slopes[h] = std::ldexp(1.0f, -int(h) - 1);
    return slopes;
  }
  std::string name() const {
    std::string n = causal ? "_causal" : "";
    if (alignment == Alignment::top_left) n += "_topleft";
    if (left) n += "_wl" + std::to_string(*left);
    if (right) n += "_wr" + std::to_string(*right);
    if (softcap) n += "_cap" + std::to_string(int(*softcap));
    if (alibi) n += "_alibi";
    if (tensor != TensorMask::none) {
      n += tensor == TensorMask::keep      ? "_keep"
           : tensor == TensorMask::bias    ? "_bias"
           : tensor == TensorMask::padding ? "_pad"
                                           : "_band";
    }
    return n;
  }
};

// The mask tensor of kind `t` (TensorMask) for the problem, seeded.
inline void add_mask_tensor(Problem& p, TensorMask t, std::uint32_t seed) {
  const Shape& s = p.shape;
  std::mt19937 rng(seed);
  std::bernoulli_distribution drop(0.25), minus_inf(0.125);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  MaskTensor& m = p.options.mask;
  if (t == TensorMask::keep) {
    m.sizes = {1, s.q_heads, s.q_len, s.kv_len};
    p.mask_keep.resize(s.q_heads * s.q_len * s.kv_len);
    for (std::size_t x = 0; x < p.mask_keep.size(); ++x) {
      p.mask_keep[x] = (x / s.kv_len) % 5 != 2 && !drop(rng);
    }
  } else if (t == TensorMask::bias) {
    m.sizes = {s.batch, 1, s.q_len, s.kv_len};
    p.mask_bias.resize(s.batch * s.q_len * s.kv_len);
    for (std::size_t x = 0; x < p.mask_bias.size(); ++x) {
      const float b = normal(rng);
      const bool gone = (x / s.kv_len) % 7 == 3 || minus_inf(rng);
      p.mask_bias[x] = gone ? -std::numeric_limits<float>::infinity() : b;
    }
  } else if (t == TensorMask::band) {
    m.sizes = {1, 1, s.q_len, s.kv_len};
    p.mask_keep.resize(s.q_len * s.kv_len);
    for (std::size_t i = 0; i < s.q_len; ++i) {
      const long long diagonal = (long long)(i + s.kv_len) - (long long)s.q_len;
      for (std::size_t j = 0; j < s.kv_len; ++j) {
        const long long behind = diagonal - (long long)j;
        p.mask_keep[i * s.kv_len + j] = behind >= 0 && behind < 40 && j % 3 != 1;
      }
    }
  } else if (t == TensorMask::padding) {
    m.sizes = {s.batch, 1, 1, s.kv_len};
    p.mask_keep.resize(s.batch * s.kv_len);
    for (std::size_t b = 0; b < s.batch; ++b) {
      for (std::size_t j = 0; j < s.kv_len; ++j)
        p.mask_keep[b * s.kv_len + j] = j + 5 * b + 3 < s.kv_len;
    }
  }
  p.own_mask();
}

inline Problem random_problem(const Shape& shape, const Masking& mask, std::uint32_t seed) {
  Problem p = random_problem(shape, mask.causal, seed);
  mask.apply(p.options);
  if (mask.alibi) p.options.alibi_slopes = Masking::alibi_slopes(shape.q_heads);
  add_mask_tensor(p, mask.tensor, seed + 1000);
  return p;
}

// Windows and alignments over shapes that break tiling, for every kernel forward and backward:
// windows of 1, windows that end inside a block (37, 70), windows wider than the keys, local
// (non-causal) windows on both sides, q_len != kv_len in both alignments (rows that see no key
// included), grouped-query heads; `decoding` adds few-row shapes with many keys (split into key
// chunks by the tiled forward).
struct MaskCase {
  Shape shape;
  Masking mask;
  bool outliers = false;
};
inline std::vector<MaskCase> window_cases(bool decoding) {
  std::vector<MaskCase> cases;
  for (Alignment a : {Alignment::bottom_right, Alignment::top_left}) {
    const Masking masks[] = {{true, a, std::nullopt},
                             {true, a, 1},
                             {true, a, 37},
                             {true, a, 70},
                             {true, a, 5000},
                             {false, a, 50, 20},
                             {false, a, std::nullopt, 0}};
    for (auto [q, k] : {std::pair{1, 1}, {17, 65}, {65, 17}, {200, 1000}, {127, 127}, {300, 257}}) {
      for (const Masking& m : masks) {
        cases.push_back({{1, 1, 1, std::size_t(q), std::size_t(k), 31}, m});
      }
    }
    cases.push_back({{2, 6, 2, 17, 65, 8}, {true, a, 37}});
    cases.push_back({{2, 6, 3, 65, 33, 65}, {false, a, 20, 5}});
    cases.push_back({{1, 1, 1, 17, 1000, 64}, {true, a, 100}, true});
    cases.push_back({{1, 1, 1, 200, 200, 64}, {false, a, 30, 30}, true});
    cases.push_back({{1, 1, 1, 150, 400, 128}, {true, a, 130}});
    // soft-capping (Gemma 2's 50 and 30; 5 and 2 where ordinary scores reach the cap), with and
    // without windows, outliers past the cap
    cases.push_back({{1, 1, 1, 17, 1000, 64}, Masking(true, a, std::nullopt).capped(5), true});
    cases.push_back({{1, 1, 1, 200, 200, 64}, Masking(false, a, std::nullopt).capped(30), true});
    cases.push_back({{1, 1, 1, 65, 127, 31}, Masking(true, a, 37).capped(2)});
    cases.push_back({{2, 6, 2, 17, 65, 8}, Masking(false, a, 20, 5).capped(50)});
    // ALiBi, per query head (grouped-query heads: folded when decoding), with windows and caps
    cases.push_back({{2, 6, 2, 17, 65, 8}, Masking(true, a, std::nullopt).with_alibi()});
    cases.push_back({{1, 1, 1, 65, 127, 31}, Masking(false, a, std::nullopt).with_alibi()});
    cases.push_back({{1, 3, 1, 200, 1000, 64}, Masking(true, a, 100).capped(5).with_alibi(), true});
    // mask tensors (boolean, additive with -inf, padding), alone and with windows, caps and ALiBi
    cases.push_back(
        {{2, 4, 2, 65, 130, 31}, Masking(true, a, std::nullopt).with(TensorMask::bias)});
    if (a == Alignment::bottom_right) {
      cases.push_back({{2, 4, 2, 17, 65, 8}, Masking(false).with(TensorMask::keep)});
      cases.push_back({{2, 2, 1, 33, 300, 64}, Masking(false).with(TensorMask::padding)});
      cases.push_back({{1, 2, 1, 127, 127, 33}, Masking(false, a, 50, 20).with(TensorMask::keep)});
      cases.push_back({{2, 4, 2, 300, 257, 31}, Masking(false).with(TensorMask::band)});
      cases.push_back({{1, 1, 1, 100, 300, 64},
                       Masking(false, Alignment::top_left, std::nullopt).with(TensorMask::band)});
      cases.push_back(
          {{1, 2, 1, 200, 1000, 64}, Masking(false).capped(5).with(TensorMask::band), true});
      cases.push_back({{1, 3, 1, 200, 1000, 64},
                       Masking(true, a, 100).capped(5).with_alibi().with(TensorMask::bias),
                       true});
      if (decoding) {
        cases.push_back({{2, 4, 2, 7, 6000, 16}, Masking(true).with(TensorMask::padding)});
        cases.push_back({{1, 1, 1, 1, 5000, 64}, Masking(true).with(TensorMask::bias), true});
        cases.push_back({{1, 4, 1, 3, 4097, 33}, Masking(false).with(TensorMask::keep)});
        cases.push_back({{2, 4, 2, 7, 6000, 16}, Masking(false).with(TensorMask::band)});
      }
    }
    if (decoding) {
      cases.push_back({{2, 4, 2, 7, 6000, 16}, Masking(true, a, std::nullopt).with_alibi()});
      cases.push_back({{1, 1, 1, 1, 5000, 64}, Masking(true, a, std::nullopt).capped(5), true});
      cases.push_back({{1, 1, 1, 1, 5000, 64}, {true, a, 300}});
      cases.push_back({{1, 1, 1, 3, 4097, 33}, {true, a, 1000}});
      cases.push_back({{2, 4, 2, 7, 6000, 16}, {false, a, 500, 0}});
    }
  }
  return cases;
}

// Outliers that force the online softmax to rescale: every key gets a component along the all-ones
// direction that grows with its index, and every query a positive one, so the row max rises in
// every key block; a few keys are also multiplied by 30. Scores reach the hundreds, far past
// where exp(s) overflows float without the max subtracted.
inline void add_outliers(Problem& p) {
  const std::size_t d = p.shape.head_dim;
  const float ramp = 40.0f / std::sqrt(static_cast<float>(d));
  for (std::size_t row = 0; row * d < p.q.size(); ++row) {
    for (std::size_t c = 0; c < d; ++c) p.q[row * d + c] += 2.0f;
  }
  for (std::size_t row = 0; row * d < p.k.size(); ++row) {
    const float j = static_cast<float>(row % p.shape.kv_len) / static_cast<float>(p.shape.kv_len);
    for (std::size_t c = 0; c < d; ++c) p.k[row * d + c] += ramp * j;
    if (row % 37 == 5) {
      for (std::size_t c = 0; c < d; ++c) p.k[row * d + c] *= 30.0f;
    }
  }
}

inline std::vector<double> oracle(const Problem& p) {
  std::vector<double> o(p.shape.q_elements());
  reference_attention(p.shape, p.options, p.q.data(), p.k.data(), p.v.data(), o.data());
  return o;
}

// The oracle's answer and what the forward's criteria read beside it (ForwardYardstick).
struct OracleAnswer {
  std::vector<double> o;            // reference_attention's output
  std::vector<double> blend;        // its blend magnitude, sum_j p_j |v_jc|
  std::vector<float> plain;         // plain_attention's: the same steps in float32
  std::vector<double> sigma, vmax;  // per query row
  double weight_unit = 0;           // ForwardYardstick's

  ForwardYardstick yardstick() const {
    return {o.data(), blend.data(), plain.data(), sigma.data(), vmax.data(), weight_unit};
  }
};

// The problem a kernel with `products` computes: p itself, or for bf16 products Q, K and V rounded
// to bfloat16 (as the kernel rounds them).
inline Problem as_computed(const Problem& p, Products products) {
  if (products == Products::f32) return p;
  Problem r = p;
  for (auto* t : {&r.q, &r.k, &r.v}) {
    for (float& x : *t) x = round_to(KvType::bf16, x);
  }
  return r;
}

inline OracleAnswer solve(const Problem& p, Products products = Products::f32) {
  if (products != Products::f32) {
    const Problem rounded = as_computed(p, products);
    OracleAnswer a = solve(rounded);
    plain_attention(p.shape, p.options, rounded.q.data(), rounded.k.data(), rounded.v.data(),
                    a.plain.data(), products);
    a.weight_unit = std::ldexp(1.0, -8);  // bfloat16: 8 significant bits
    return a;
  }
  const std::size_t rows = p.shape.q_elements() / p.shape.head_dim;
  OracleAnswer a{std::vector<double>(p.shape.q_elements()),
                 std::vector<double>(p.shape.q_elements()),
                 std::vector<float>(p.shape.q_elements()), std::vector<double>(rows),
                 std::vector<double>(rows)};
  reference_attention(p.shape, p.options, p.q.data(), p.k.data(), p.v.data(),
                      ForwardConditioning{.o = a.o.data(),
                                          .blend_magnitude = a.blend.data(),
                                          .row_sigma = a.sigma.data(),
                                          .row_vmax = a.vmax.data()});
  plain_attention(p.shape, p.options, p.q.data(), p.k.data(), p.v.data(), a.plain.data());
  return a;
}

inline std::vector<float> run(const Kernel& kernel, const Problem& p, Workspace& ws) {
  std::vector<float> o(p.shape.q_elements(), -12345.0f);  // poison: every element must be written
  attention(kernel, p.shape, p.options, p.tensors(o), ws);
  return o;
}

}  // namespace attnbench::testing
