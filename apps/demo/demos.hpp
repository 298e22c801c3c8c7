// attnbench demos: the attention module's experiments, each computed with the project's own
// kernels, so a reader can watch each claim happen.
//
//   softmax     naive exp/sum overflows on (1000, 999, 998); the stable softmax does not
//   bottleneck  one mean-pooled summary cannot retrieve a position; attention can
//   alignment   "le chat noir" -> "the black cat": the weights cross
//   quadratic   the naive score matrix grows as n^2; the tiled kernel's scratch does not
//   order       without positions attention is blind to word order; with them it is not
//   uniform     equal scores give equal weights and the plain mean of the values
//   copy        the module's challenge: two models trained to output the p-th of n vectors; the
//               one with attention stays accurate as n grows, the fixed-width bottleneck does not
//
// Each demo is one function returning a result struct with its numbers; print() writes it as a
// small table, to_json() as the JSON object a report script draws from. Tests assert each
// demo's claim on the structs (tests/demo_test.cpp). Each demo's three functions live in its own
// file (apps/demo/softmax.cpp, ...); demos.cpp lists the demos and runs them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <attnbench/attnbench.hpp>

namespace attnbench::demo {

// JSON objects keep their fields in the order written.
using Json = nlohmann::ordered_json;

// The demos in the order `attnbench demo all` runs them.
std::span<const std::string_view> names();

// The first registry kernel of `strategy` that runs on this CPU (registry order is priority order),
// e.g. naive/simd for the quadratic demo's score matrix.
const Kernel& best_kernel(Strategy strategy);

// ---------------------------------------------------------------------------------------------
// softmax
// ---------------------------------------------------------------------------------------------

struct SoftmaxResult {
  std::string kernel;                     // the kernel that computed the stable weights
  std::array<float, 3> large{};           // logits (1000, 999, 998)
  std::array<float, 3> naive_exp{};       // exp(logit) in float: all +inf
  float naive_sum = 0;                    // their sum: +inf
  std::array<float, 3> naive_weights{};   // exp / sum: inf / inf = NaN
  std::array<float, 3> stable_large{};    // the kernel's weights for (1000, 999, 998)
  std::array<float, 3> small{};           // logits (2, 1, 0)
  std::array<float, 3> naive_small{};     // exp / sum for (2, 1, 0): fine at this size
  std::array<float, 3> stable_small{};    // the kernel's weights for (2, 1, 0)
  std::array<float, 3> worked{};          // the worked example's logits (2.1, 0.4, 1.3)
  std::array<float, 3> worked_weights{};  // -> (0.61, 0.11, 0.28)
  // The sharpening claim on the worked example's first and third logits: 2.1 / 1.3 = 1.6 in
  // score becomes 0.61 / 0.28 = exp(0.8) = 2.2 in weight.
  float score_ratio = 0;
  float weight_ratio = 0;
};
SoftmaxResult softmax(const Kernel& kernel = default_kernel());

// ---------------------------------------------------------------------------------------------
// bottleneck
// ---------------------------------------------------------------------------------------------

struct BottleneckRow {
  std::size_t n = 0;           // keys and values
  double mean_pooled = 0;      // mean over positions and seeds of |summary - v_p| / |v_p|
  double attention = 0;        // the same for attention with query = sharpness * k_p
  double attention_worst = 0;  // the largest single attention error
};
struct BottleneckResult {
  std::string kernel;
  std::size_t dim = 0;    // of keys and values
  std::size_t seeds = 0;  // random problems per n; every position of each is retrieved
  float sharpness = 0;    // query = sharpness * key (keys have unit length)
  std::vector<BottleneckRow> rows;
};
BottleneckResult bottleneck(const Kernel& kernel = default_kernel(),
                            std::vector<std::size_t> ns = {5, 25, 200});

// ---------------------------------------------------------------------------------------------
// alignment
// ---------------------------------------------------------------------------------------------

struct AlignmentResult {
  std::string kernel;
  std::array<std::string, 3> source{};  // keys: "le", "chat", "noir"
  std::array<std::string, 3> target{};  // queries: "the", "black", "cat"
  std::array<std::array<float, 3>, 3> source_embedding{};
  std::array<std::array<float, 3>, 3> target_embedding{};
  std::array<std::array<float, 3>, 3> weights{};  // [target][source]; each row sums to 1
  std::array<std::size_t, 3> aligned{};           // argmax source of each target word
};
AlignmentResult alignment(const Kernel& kernel = default_kernel());

// ---------------------------------------------------------------------------------------------
// quadratic
// ---------------------------------------------------------------------------------------------

struct QuadraticRow {
  std::size_t n = 0;               // q_len = kv_len
  bool measured = false;           // false: extrapolated from the fits
  double score_matrix_bytes = 0;   // n^2 * 4, exact
  double naive_scratch_bytes = 0;  // measured Workspace::peak_bytes() (0 if extrapolated)
  double naive_ms = 0;             // median of `reps` calls, or the fit's value
  double tiled_scratch_bytes = 0;  // measured, or the fit's value
  double tiled_ms = 0;             // one call (0 if extrapolated)
};
struct QuadraticResult {
  std::string naive_kernel;
  std::string tiled_kernel;
  std::size_t head_dim = 0;
  std::size_t reps = 0;
  // log(naive_ms) = time_log_intercept + time_exponent * log(n), least squares over the measured n.
  double time_exponent = 0;
  double time_log_intercept = 0;
  // tiled_scratch_bytes = tiled_bytes_fixed + tiled_bytes_per_key * n, least squares.
  double tiled_bytes_fixed = 0;
  double tiled_bytes_per_key = 0;
  double memory_budget_bytes = 0;  // the naive kernels' default budget: they refuse larger n
  std::vector<QuadraticRow> rows;  // the measured n, then the extrapolated ones
};
QuadraticResult quadratic(const Kernel& naive = best_kernel(Strategy::naive),
                          const Kernel& tiled = best_kernel(Strategy::tiled),
                          std::vector<std::size_t> measured = {128, 512, 2048, 8192},
                          std::vector<std::size_t> extrapolated = {128000},
                          std::size_t head_dim = 64, std::size_t reps = 5);

// ---------------------------------------------------------------------------------------------
// order
// ---------------------------------------------------------------------------------------------

struct OrderCase {
  std::vector<float> pooled_a;  // mean over output rows, sentence a
  std::vector<float> pooled_b;  // the same, sentence b
  double max_difference = 0;    // max |pooled_a - pooled_b|
};
struct OrderResult {
  std::string kernel;
  std::array<std::string, 3> sentence_a{};  // "dog bites man"
  std::array<std::string, 3> sentence_b{};  // "man bites dog"
  std::size_t dim = 0;
  OrderCase without_positions;  // self-attention over the word embeddings: equal (to rounding)
  OrderCase with_positions;     // the same plus sinusoidal position encodings: different
};
OrderResult order(const Kernel& kernel = default_kernel());

// ---------------------------------------------------------------------------------------------
// uniform
// ---------------------------------------------------------------------------------------------

struct UniformCase {
  std::string how;             // "scale 0" or "identical keys"
  std::vector<float> weights;  // one query's weights over the keys: all 1/n
  std::vector<float> output;   // its output
  std::vector<float> mean;     // the plain mean of the values (in double, rounded)
  double max_difference = 0;   // max |output - mean|
};
struct UniformResult {
  std::string kernel;
  std::size_t n = 0, dim = 0;
  std::vector<UniformCase> cases;
};
UniformResult uniform(const Kernel& kernel = default_kernel());

// ---------------------------------------------------------------------------------------------
// copy
// ---------------------------------------------------------------------------------------------

// The sizes and the training budget. The defaults are the demo's; the test trains smaller.
struct CopyConfig {
  std::vector<std::size_t> lengths = {5, 10, 20, 50, 100};  // n, one row each
  std::size_t dim = 8;                                      // of each vector x_j
  std::size_t encoding_dim = 16;      // sinusoidal position encoding of j and p (attention model)
  std::size_t head_dim = 16;          // of the attention model's queries, keys and values
  std::size_t bottleneck_width = 64;  // the bottleneck's one vector, the same for every n
  std::size_t decoder_hidden = 128;   // each of the bottleneck decoder's two hidden layers
  std::size_t steps = 2000;           // Adam steps per model and n
  std::size_t batch = 128;            // training examples per step, fresh each step
  std::size_t test_examples = 2000;   // held out: drawn from a stream training never sees
  double learning_rate = 1e-2;        // Adam's, decayed to 0 by a cosine over the steps
  std::size_t threads = 0;            // models trained at once (0: every core); same numbers
  std::uint32_t seed = 0;             // shifts every seed: another draw of data and weights

  // A few steps on tiny problems (n = 3 and 6, 40 steps of 16 examples): untrained models, for
  // checking the command and its JSON (`attnbench demo --quick`), not the demo's claims.
  static CopyConfig quick();
};

struct CopyRow {
  std::size_t n = 0;
  double chance = 0;               // 1 / n: the accuracy of a random position
  double attention_accuracy = 0;   // share of test examples whose output is nearest x_p
  double bottleneck_accuracy = 0;  //   (nearer it than any other x_j of the sequence)
  double attention_mse = 0;        // test mean squared error per component
  double bottleneck_mse = 0;
  std::size_t attention_parameters = 0;
  std::size_t bottleneck_parameters = 0;  // grows with n: its encoder reads n x dim numbers
};
struct CopyResult {
  std::string kernel;  // the kernel that ran the attention model's forward and backward
  CopyConfig config;
  std::vector<CopyRow> rows;
};
CopyResult copy_task(const Kernel& kernel = default_backward_kernel(),
                     const CopyConfig& config = {});

// Each model's hand-written gradient against central differences of its loss, on a small batch:
// the largest |analytic - numeric| over every parameter, relative to the largest |analytic|.
struct CopyGradientCheck {
  double attention = 0;
  double bottleneck = 0;
};
CopyGradientCheck copy_gradient_check(const Kernel& kernel, std::size_t n);

// ---------------------------------------------------------------------------------------------
// Printing, JSON, and the command
// ---------------------------------------------------------------------------------------------

void print(const SoftmaxResult& r, std::FILE* out);
void print(const BottleneckResult& r, std::FILE* out);
void print(const AlignmentResult& r, std::FILE* out);
void print(const QuadraticResult& r, std::FILE* out);
void print(const OrderResult& r, std::FILE* out);
void print(const UniformResult& r, std::FILE* out);
void print(const CopyResult& r, std::FILE* out);

Json to_json(const SoftmaxResult& r);
Json to_json(const BottleneckResult& r);
Json to_json(const AlignmentResult& r);
Json to_json(const QuadraticResult& r);
Json to_json(const OrderResult& r);
Json to_json(const UniformResult& r);
Json to_json(const CopyResult& r);

// `attnbench demo NAME [--json FILE] [--quick]`: runs one demo (or every one for "all"), prints
// each to `out` and, if json_path is not empty, writes {"demos": {NAME: {...}, ...}} there
// (atomically: a temporary name, then renamed). `quick` trains the copy demo on
// CopyConfig::quick() instead of its defaults (the other demos take seconds as they are). Throws
// attnbench::Error for an unknown name or a file that cannot be written.
int run(std::string_view name, const std::string& json_path, std::FILE* out, bool quick = false);

}  // namespace attnbench::demo
