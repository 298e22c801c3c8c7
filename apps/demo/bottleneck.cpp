// bottleneck: one mean-pooled summary cannot retrieve a position; attention with a query that
// matches that position's key can.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "demo/demo_support.hpp"

namespace attnbench::demo {

using namespace detail;

namespace {

// The table's error columns, for print() and to_json() alike.
struct Column {
  const char* header;
  const char* key;  // in the JSON rows
  double BottleneckRow::*error;
  int precision;
  int width;  // 0 for the last column: no trailing padding
};
constexpr Column kColumns[] = {
    {"mean-pooled", "mean_pooled_error", &BottleneckRow::mean_pooled, 3, 18},
    {"attention", "attention_error", &BottleneckRow::attention, 4, 16},
    {"attention (worst)", "attention_worst_error", &BottleneckRow::attention_worst, 4, 0},
};

}  // namespace

BottleneckResult bottleneck(const Kernel& kernel, std::vector<std::size_t> ns) {
  BottleneckResult r;
  r.dim = 8;
  r.seeds = 8;
  // Unit keys in 8 dimensions: two random ones have cosine ~N(0, 1/8), and among 200 the closest
  // to a given key reaches about 0.9, so the matching key's score must lead by a wide margin
  // for the softmax to pick it alone; at scale 1/sqrt(8) this factor makes the lead >= ~3.5
  // even at cosine 0.9.
  r.sharpness = 100;
  const std::size_t d = r.dim;
  for (std::size_t n : ns) {
    BottleneckRow row;
    row.n = n;
    std::size_t retrievals = 0;
    for (std::size_t seed = 0; seed < r.seeds; ++seed) {
      Normal rng(std::uint32_t(1000 * n + seed));
      std::vector<float> keys = rng.vector(n * d);
      for (std::size_t j = 0; j < n; ++j) {
        const double norm =
            std::sqrt(std::inner_product(&keys[j * d], &keys[j * d + d], &keys[j * d], 0.0));
        for (std::size_t c = 0; c < d; ++c) keys[j * d + c] = float(keys[j * d + c] / norm);
      }
      const std::vector<float> values = rng.vector(n * d);

      // The summary: scale 0 weighs every key 1/n, so one query reads the mean of the values,
      // whatever position it asks for.
      Options pooled;
      pooled.scale = 0.0f;
      const Ran summary =
          call(kernel, {1, 1, 1, 1, n, d}, pooled, std::vector<float>(d, 0.0f), keys, values);
      // Attention: query row p is a scaled copy of key p, every position at once.
      std::vector<float> queries(keys);
      for (float& x : queries) x *= r.sharpness;
      const Ran retrieved = call(kernel, {1, 1, 1, n, n, d}, Options{}, queries, keys, values);
      r.kernel = retrieved.kernel;

      for (std::size_t p = 0; p < n; ++p) {
        const float* v_p = &values[p * d];
        const double size = std::sqrt(std::inner_product(v_p, v_p + d, v_p, 0.0));
        row.mean_pooled += distance(summary.o.data(), v_p, d) / size;
        const double error = distance(&retrieved.o[p * d], v_p, d) / size;
        row.attention += error;
        row.attention_worst = std::max(row.attention_worst, error);
        ++retrievals;
      }
    }
    row.mean_pooled /= double(retrievals);
    row.attention /= double(retrievals);
    r.rows.push_back(row);
  }
  return r;
}

void print(const BottleneckResult& r, std::FILE* out) {
  heading(
      out, "bottleneck",
      "a mean-pooled summary cannot retrieve one position; attention with a matching query can");
  std::fprintf(out,
               "kernel %s; %zu-dim unit keys and normal values; every position of %zu random "
               "problems retrieved; query = %g * key\n",
               r.kernel.c_str(), r.dim, r.seeds, double(r.sharpness));
  std::fprintf(out, "relative error |answer - v_p| / |v_p|, mean over the retrievals\n");
  std::fprintf(out, "%6s ", "n");
  for (const Column& c : kColumns) std::fprintf(out, " %-*s", c.width, c.header);
  std::fputc('\n', out);
  for (const BottleneckRow& row : r.rows) {
    std::fprintf(out, "%6zu ", row.n);
    for (const Column& c : kColumns) {
      std::fprintf(out, " %-*s", c.width, number(row.*c.error, c.precision).c_str());
    }
    std::fputc('\n', out);
  }
}

Json to_json(const BottleneckResult& r) {
  Json rows = Json::array();
  for (const BottleneckRow& row : r.rows) {
    Json j = {{"n", row.n}};
    for (const Column& c : kColumns) j[c.key] = row.*c.error;
    rows.push_back(std::move(j));
  }
  return {{"kernel", r.kernel},
          {"dim", r.dim},
          {"seeds", r.seeds},
          {"sharpness", r.sharpness},
          {"rows", rows}};
}

}  // namespace attnbench::demo
