// uniform: equal scores, by scale 0 or by identical keys, give equal weights 1/n and so the plain
// mean of the values.
#include "demo/demo_support.hpp"

namespace attnbench::demo {

using namespace detail;

UniformResult uniform(const Kernel& kernel) {
  UniformResult r;
  r.n = 4;
  r.dim = 4;  // = n, so V = identity fits and one query's output row is its weights
  Normal rng(4);
  const std::vector<float> q = rng.vector(r.dim), random_keys = rng.vector(r.n * r.dim),
                           values = rng.vector(r.n * r.dim);
  std::vector<float> identical_keys;
  for (std::size_t j = 0; j < r.n; ++j) {
    identical_keys.insert(identical_keys.end(), random_keys.begin(), random_keys.begin() + r.dim);
  }
  std::vector<float> mean(r.dim);
  for (std::size_t c = 0; c < r.dim; ++c) {
    double sum = 0;
    for (std::size_t j = 0; j < r.n; ++j) sum += values[j * r.dim + c];
    mean[c] = float(sum / double(r.n));
  }
  const Shape shape{1, 1, 1, 1, r.n, r.dim};
  Options scale_zero;
  scale_zero.scale = 0.0f;
  struct Way {
    const char* how;
    Options options;
    const std::vector<float>& keys;
  };
  for (const Way& way : {Way{"scale 0", scale_zero, random_keys},
                         Way{"identical keys", Options{}, identical_keys}}) {
    UniformCase c;
    c.how = way.how;
    c.weights = call(kernel, shape, way.options, q, way.keys, identity(r.n)).o;
    const Ran ran = call(kernel, shape, way.options, q, way.keys, values);
    r.kernel = ran.kernel;
    c.output = ran.o;
    c.mean = mean;
    c.max_difference = max_abs_difference(c.output, c.mean);
    r.cases.push_back(std::move(c));
  }
  return r;
}

void print(const UniformResult& r, std::FILE* out) {
  heading(out, "uniform", "equal scores give equal weights and the plain mean of the values");
  std::fprintf(out, "kernel %s; one query, %zu random keys and values of dim %zu\n",
               r.kernel.c_str(), r.n, r.dim);
  std::fprintf(out, "%-16s %-34s %-38s %s\n", "equal scores by", "weights", "output",
               "max |output - mean|");
  for (const UniformCase& c : r.cases) {
    char diff[32];
    std::snprintf(diff, sizeof diff, "%.2g", c.max_difference);
    std::fprintf(out, "%-16s %-34s %-38s %s\n", c.how.c_str(), tuple(c.weights, 4).c_str(),
                 tuple(c.output, 4).c_str(), diff);
  }
  if (!r.cases.empty()) {
    std::fprintf(out, "%-16s %-34s %s\n", "mean of values", "", tuple(r.cases[0].mean, 4).c_str());
  }
}

Json to_json(const UniformResult& r) {
  Json cases = Json::array();
  for (const UniformCase& c : r.cases) {
    cases.push_back({{"how", c.how},
                     {"weights", json_numbers(c.weights)},
                     {"output", json_numbers(c.output)},
                     {"mean", json_numbers(c.mean)},
                     {"max_difference", c.max_difference}});
  }
  return {{"kernel", r.kernel}, {"n", r.n}, {"dim", r.dim}, {"cases", cases}};
}

}  // namespace attnbench::demo
