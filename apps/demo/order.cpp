// order: without positions, self-attention is blind to word order ("dog bites man" pools to the
// same vector as "man bites dog"); with sinusoidal position encodings it is not.

#include "demo/demo_support.hpp"

namespace attnbench::demo {

using namespace detail;

namespace {

constexpr std::size_t kOrderDim = 4;

// Hand-made 4-dim word vectors; any distinct vectors show the effect.
std::array<float, kOrderDim> word_vector(const std::string& word) {
  if (word == "dog") return {1.0f, 0.2f, -0.3f, 0.5f};
  if (word == "bites") return {-0.4f, 1.0f, 0.6f, -0.2f};
  return {0.3f, -0.5f, 1.0f, 0.4f};  // "man"
}

// Self-attention (Q = K = V = X) over a sentence, the output rows averaged into one vector.
std::vector<float> pooled(const Kernel& kernel, const std::array<std::string, 3>& sentence,
                          bool positions, std::string& ran) {
  std::vector<float> x;
  for (std::size_t pos = 0; pos < 3; ++pos) {
    std::array<float, kOrderDim> e = word_vector(sentence[pos]);
    if (positions) {
      std::array<float, kOrderDim> pe;
      position_encoding(pos, kOrderDim, pe.data());
      for (std::size_t c = 0; c < kOrderDim; ++c) e[c] += pe[c];
    }
    x.insert(x.end(), e.begin(), e.end());
  }
  const Ran r = call(kernel, {1, 1, 1, 3, 3, kOrderDim}, Options{}, x, x, x);
  ran = r.kernel;
  std::vector<float> mean(kOrderDim, 0.0f);
  for (std::size_t c = 0; c < kOrderDim; ++c) {
    mean[c] = (r.o[c] + r.o[kOrderDim + c] + r.o[2 * kOrderDim + c]) / 3.0f;
  }
  return mean;
}

}  // namespace

OrderResult order(const Kernel& kernel) {
  OrderResult r;
  r.sentence_a = {"dog", "bites", "man"};
  r.sentence_b = {"man", "bites", "dog"};
  r.dim = kOrderDim;
  for (bool positions : {false, true}) {
    OrderCase& c = positions ? r.with_positions : r.without_positions;
    c.pooled_a = pooled(kernel, r.sentence_a, positions, r.kernel);
    c.pooled_b = pooled(kernel, r.sentence_b, positions, r.kernel);
    c.max_difference = max_abs_difference(c.pooled_a, c.pooled_b);
  }
  return r;
}

void print(const OrderResult& r, std::FILE* out) {
  heading(out, "order",
          "without positions attention cannot tell \"dog bites man\" from \"man bites dog\"");
  std::fprintf(out,
               "kernel %s; self-attention (Q = K = V = X) over %zu-dim word vectors, output rows "
               "averaged\n",
               r.kernel.c_str(), r.dim);
  std::fprintf(out, "%-22s %-34s %-34s %s\n", "inputs", "dog bites man", "man bites dog",
               "max |difference|");
  for (bool positions : {false, true}) {
    const OrderCase& c = positions ? r.with_positions : r.without_positions;
    char diff[32];
    std::snprintf(diff, sizeof diff, "%.2g", c.max_difference);
    std::fprintf(out, "%-22s %-34s %-34s %s\n", positions ? "words + sinusoidal PE" : "words only",
                 tuple(c.pooled_a, 4).c_str(), tuple(c.pooled_b, 4).c_str(), diff);
  }
}

Json to_json(const OrderResult& r) {
  auto one = [](const OrderCase& c) {
    return Json{{"pooled_a", json_numbers(c.pooled_a)},
                {"pooled_b", json_numbers(c.pooled_b)},
                {"max_difference", c.max_difference}};
  };
  return {{"kernel", r.kernel},
          {"sentence_a", r.sentence_a},
          {"sentence_b", r.sentence_b},
          {"dim", r.dim},
          {"without_positions", one(r.without_positions)},
          {"with_positions", one(r.with_positions)}};
}

}  // namespace attnbench::demo
