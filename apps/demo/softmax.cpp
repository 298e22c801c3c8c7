// softmax: the textbook exp/sum overflows on (1000, 999, 998); the kernels' stable softmax does
// not. The one computation done outside the kernels is that naive softmax, which exists to show
// the overflow the kernels avoid.
#include <cmath>

#include "demo/demo_support.hpp"

namespace attnbench::demo {

using namespace detail;

namespace {

// One query whose scores against three keys are exactly `scores` (q = e1, k_j = s_j e1, scale 1)
// and V the identity, so the output row is the softmax weights.
std::array<float, 3> kernel_weights(const Kernel& kernel, const std::array<float, 3>& scores,
                                    std::string& ran) {
  Options options;
  options.scale = 1.0f;
  std::vector<float> k;
  for (float s : scores) k.insert(k.end(), {s, 0.0f, 0.0f});
  const Ran r = call(kernel, {1, 1, 1, 1, 3, 3}, options, {1, 0, 0}, k, identity(3));
  ran = r.kernel;
  return {r.o[0], r.o[1], r.o[2]};
}

// The textbook formula, exp(s_j) / sum_k exp(s_k), in float: exp(1000) overflows to inf.
std::array<float, 3> naive_softmax(const std::array<float, 3>& scores, std::array<float, 3>& e,
                                   float& sum) {
  sum = 0;
  for (int j = 0; j < 3; ++j) sum += e[j] = std::exp(scores[j]);
  return {e[0] / sum, e[1] / sum, e[2] / sum};
}

}  // namespace

SoftmaxResult softmax(const Kernel& kernel) {
  SoftmaxResult r;
  r.large = {1000, 999, 998};
  r.small = {2, 1, 0};
  r.worked = {2.1f, 0.4f, 1.3f};
  r.naive_weights = naive_softmax(r.large, r.naive_exp, r.naive_sum);
  std::array<float, 3> small_exp{};
  float small_sum = 0;
  r.naive_small = naive_softmax(r.small, small_exp, small_sum);
  r.stable_large = kernel_weights(kernel, r.large, r.kernel);
  r.stable_small = kernel_weights(kernel, r.small, r.kernel);
  r.worked_weights = kernel_weights(kernel, r.worked, r.kernel);
  r.score_ratio = r.worked[0] / r.worked[2];
  r.weight_ratio = r.worked_weights[0] / r.worked_weights[2];
  return r;
}

void print(const SoftmaxResult& r, std::FILE* out) {
  heading(out, "softmax", "a naive exp/sum overflows on large logits; the stable softmax does not");
  std::fprintf(
      out, "kernel %s (q = e1, k_j = s_j e1, scale 1, V = identity: the output is the weights)\n",
      r.kernel.c_str());
  std::fprintf(out, "%-18s %-26s %s\n", "logits", "naive exp(s) / sum", "stable (kernel)");
  std::fprintf(out, "%-18s %-26s %s\n", tuple(r.large, 0).c_str(),
               tuple(r.naive_weights, 4).c_str(), tuple(r.stable_large, 4).c_str());
  std::fprintf(out, "%-18s %-26s %s\n", tuple(r.small, 0).c_str(), tuple(r.naive_small, 4).c_str(),
               tuple(r.stable_small, 4).c_str());
  std::fprintf(out, "%-18s %-26s %s\n", tuple(r.worked, 1).c_str(), "-",
               tuple(r.worked_weights, 4).c_str());
  std::fprintf(out, "naive on %s: exp = %s, sum = %s, so every weight is inf / inf = nan\n",
               tuple(r.large, 0).c_str(), tuple(r.naive_exp, 0).c_str(),
               number(r.naive_sum, 0).c_str());
  std::fprintf(out, "worked example: %s -> %s\n", tuple(r.worked, 1).c_str(),
               tuple(r.worked_weights, 2).c_str());
  std::fprintf(
      out, "sharpening: scores %s / %s = %.2fx become weights %s / %s = %.2fx (= exp(%s - %s))\n",
      number(r.worked[0], 1).c_str(), number(r.worked[2], 1).c_str(), r.score_ratio,
      number(r.worked_weights[0], 2).c_str(), number(r.worked_weights[2], 2).c_str(),
      r.weight_ratio, number(r.worked[0], 1).c_str(), number(r.worked[2], 1).c_str());
}

Json to_json(const SoftmaxResult& r) {
  return {{"kernel", r.kernel},
          {"large_logits", json_numbers(r.large)},
          {"naive_exp", json_numbers(r.naive_exp)},
          {"naive_sum", json_number(r.naive_sum)},
          {"naive_weights", json_numbers(r.naive_weights)},
          {"stable_weights", json_numbers(r.stable_large)},
          {"small_logits", json_numbers(r.small)},
          {"naive_small_weights", json_numbers(r.naive_small)},
          {"stable_small_weights", json_numbers(r.stable_small)},
          {"worked_logits", json_numbers(r.worked)},
          {"worked_weights", json_numbers(r.worked_weights)},
          {"score_ratio", r.score_ratio},
          {"weight_ratio", r.weight_ratio}};
}

}  // namespace attnbench::demo
