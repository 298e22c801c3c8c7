// The six demos: each builds a tiny problem, runs it through attention() with a registry kernel,
// and returns the numbers its claim rests on. The one computation done outside the kernels is the
// naive exp/sum softmax, which exists to show the overflow the kernels avoid.
#include "demo/demos.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numbers>
#include <numeric>
#include <random>

namespace attnbench::demo {

namespace {

constexpr std::array<std::string_view, 6> kNames = {"softmax",   "bottleneck", "alignment",
                                                    "quadratic", "order",      "uniform"};

// ---------------------------------------------------------------------------------------------
// Running the kernels
// ---------------------------------------------------------------------------------------------

struct Ran {
  std::vector<float> o;
  std::string kernel;  // the kernel that ran (a dispatching entry resolved to its ISA variant)
};

Ran call(const Kernel& kernel, const Shape& shape, const Options& options,
         const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v) {
  std::vector<float> o(shape.q_elements());
  Workspace ws;
  const Kernel& ran =
      attention(kernel, shape, options, {q.data(), k.data(), v.data(), o.data()}, ws);
  return {std::move(o), std::string(ran.name)};
}

std::vector<float> identity(std::size_t n) {
  std::vector<float> v(n * n, 0.0f);
  for (std::size_t i = 0; i < n; ++i) v[i * n + i] = 1.0f;
  return v;
}

// Standard normals by Box-Muller over mt19937, whose output the C++ standard fixes (its
// distributions it does not), so every demo prints the same numbers with any standard library.
class Normal {
 public:
  explicit Normal(std::uint32_t seed) : gen_(seed) {}
  float operator()() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = (double(gen_()) + 1.0) / 4294967296.0;  // (0, 1]: log(u1) is finite
    const double u2 = double(gen_()) / 4294967296.0;
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = float(r * std::sin(2 * std::numbers::pi * u2));
    has_spare_ = true;
    return float(r * std::cos(2 * std::numbers::pi * u2));
  }
  std::vector<float> vector(std::size_t count) {
    std::vector<float> x(count);
    for (float& e : x) e = (*this)();
    return x;
  }

 private:
  std::mt19937 gen_;
  float spare_ = 0;
  bool has_spare_ = false;
};

double distance(const float* a, const float* b, std::size_t n) {
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return std::sqrt(sum);
}

double max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
  return worst;
}

// ---------------------------------------------------------------------------------------------
// Formatting
// ---------------------------------------------------------------------------------------------

std::string number(double x, int precision) {
  if (std::isnan(x)) return "nan";  // no "-nan": inf / inf has its sign bit set on x86
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, x);
  return buf;
}

std::string tuple(std::span<const float> xs, int precision) {
  std::string s = "(";
  for (std::size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + number(xs[i], precision);
  return s + ")";
}

// Decimal units, as the "65.5 GB" is.
std::string bytes(double b) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) {
    b /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

std::string milliseconds(double ms) {
  char buf[32];
  if (ms >= 60000) {
    std::snprintf(buf, sizeof buf, "%.1f min", ms / 60000);
  } else if (ms >= 1000) {
    std::snprintf(buf, sizeof buf, "%.2f s", ms / 1000);
  } else {
    std::snprintf(buf, sizeof buf, "%.3f ms", ms);
  }
  return buf;
}

void heading(std::FILE* out, std::string_view name, const char* claim) {
  std::fprintf(out, "== %.*s: %s ==\n", int(name.size()), name.data(), claim);
}

// JSON has no inf or NaN: they are written as the strings "inf", "-inf" and "nan" (Python's
// float() reads all three).
Json json_number(double x) {
  if (std::isfinite(x)) return x;
  return number(x, 0);
}
Json json_numbers(std::span<const float> xs) {
  Json a = Json::array();
  for (float x : xs) a.push_back(json_number(x));
  return a;
}

// ---------------------------------------------------------------------------------------------
// Least squares
// ---------------------------------------------------------------------------------------------

// y = intercept + slope * x over the points.
struct Line {
  double intercept, slope;
};
Line fit(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = double(x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  const double denominator = n * sxx - sx * sx;
  if (denominator == 0) return {sy / n, 0};  // one point, or every x equal: a constant
  const double slope = (n * sxy - sx * sy) / denominator;
  return {(sy - slope * sx) / n, slope};
}

}  // namespace

std::span<const std::string_view> names() { return kNames; }

const Kernel& best_kernel(Strategy strategy) {
  for (const Kernel& k : registry()) {
    if (k.strategy == strategy && resolve(k).available()) return k;
  }
  return default_kernel();  // not reached: each strategy has a scalar kernel that runs anywhere
}

// ---------------------------------------------------------------------------------------------
// softmax
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// bottleneck
// ---------------------------------------------------------------------------------------------

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
  std::fprintf(out, "%6s  %-18s %-16s %s\n", "n", "mean-pooled", "attention", "attention (worst)");
  for (const BottleneckRow& row : r.rows) {
    std::fprintf(out, "%6zu  %-18s %-16s %s\n", row.n, number(row.mean_pooled, 3).c_str(),
                 number(row.attention, 4).c_str(), number(row.attention_worst, 4).c_str());
  }
}

Json to_json(const BottleneckResult& r) {
  Json rows = Json::array();
  for (const BottleneckRow& row : r.rows) {
    rows.push_back({{"n", row.n},
                    {"mean_pooled_error", row.mean_pooled},
                    {"attention_error", row.attention},
                    {"attention_worst_error", row.attention_worst}});
  }
  return {{"kernel", r.kernel},
          {"dim", r.dim},
          {"seeds", r.seeds},
          {"sharpness", r.sharpness},
          {"rows", rows}};
}

// ---------------------------------------------------------------------------------------------
// alignment
// ---------------------------------------------------------------------------------------------

AlignmentResult alignment(const Kernel& kernel) {
  AlignmentResult r;
  r.source = {"le", "chat", "noir"};
  r.target = {"the", "black", "cat"};
  // Three hand-made axes: (article, animal, colour). Each word mostly one axis, with a little
  // of the others, so the weights are not one-hot.
  r.source_embedding = {{{2.0f, 0.2f, 0.0f}, {0.1f, 2.0f, 0.3f}, {0.0f, 0.3f, 2.0f}}};
  r.target_embedding = {{{2.0f, 0.1f, 0.1f}, {0.1f, 0.2f, 2.0f}, {0.2f, 2.0f, 0.1f}}};
  std::vector<float> q, k;
  for (const auto& e : r.target_embedding) q.insert(q.end(), e.begin(), e.end());
  for (const auto& e : r.source_embedding) k.insert(k.end(), e.begin(), e.end());
  // The target words query the source words; V = identity, so each output row is its weights.
  const Ran ran = call(kernel, {1, 1, 1, 3, 3, 3}, Options{}, q, k, identity(3));
  r.kernel = ran.kernel;
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 3; ++j) r.weights[i][j] = ran.o[i * 3 + j];
    r.aligned[i] = std::size_t(std::max_element(r.weights[i].begin(), r.weights[i].end()) -
                               r.weights[i].begin());
  }
  return r;
}

void print(const AlignmentResult& r, std::FILE* out) {
  heading(out, "alignment", "\"the black cat\" attends to \"le chat noir\" across the crossing");
  std::fprintf(out,
               "kernel %s; 3-dim embeddings on axes (article, animal, colour), scale 1/sqrt(3)\n",
               r.kernel.c_str());
  std::fprintf(out, "%-8s", "");
  for (const std::string& s : r.source) std::fprintf(out, "%8s", s.c_str());
  std::fprintf(out, "%8s   %s\n", "sum", "aligned to");
  for (std::size_t i = 0; i < 3; ++i) {
    std::fprintf(out, "%-8s", r.target[i].c_str());
    for (float w : r.weights[i]) std::fprintf(out, "%8.3f", w);
    std::fprintf(out, "%8.3f   %s\n", r.weights[i][0] + r.weights[i][1] + r.weights[i][2],
                 r.source[r.aligned[i]].c_str());
  }
}

Json to_json(const AlignmentResult& r) {
  Json weights = Json::array(), source = Json::array(), target = Json::array();
  for (const auto& row : r.weights) weights.push_back(json_numbers(row));
  for (const auto& e : r.source_embedding) source.push_back(json_numbers(e));
  for (const auto& e : r.target_embedding) target.push_back(json_numbers(e));
  return {{"kernel", r.kernel},         {"source", r.source},         {"target", r.target},
          {"source_embedding", source}, {"target_embedding", target}, {"weights", weights},
          {"aligned", r.aligned}};
}

// ---------------------------------------------------------------------------------------------
// quadratic
// ---------------------------------------------------------------------------------------------

QuadraticResult quadratic(const Kernel& naive, const Kernel& tiled,
                          std::vector<std::size_t> measured, std::vector<std::size_t> extrapolated,
                          std::size_t head_dim, std::size_t reps) {
  QuadraticResult r;
  r.head_dim = head_dim;
  r.reps = std::max<std::size_t>(reps, 1);
  r.memory_budget_bytes = double(default_memory_budget());
  std::vector<double> log_n, log_ms, n_keys, tiled_bytes;
  for (std::size_t n : measured) {
    const Shape shape{1, 1, 1, n, n, head_dim};
    Normal rng{std::uint32_t(n)};
    const std::vector<float> q = rng.vector(shape.q_elements()),
                             k = rng.vector(shape.kv_elements()),
                             v = rng.vector(shape.kv_elements());
    std::vector<float> o(shape.q_elements());
    Options options;  // one thread: the timings measure the kernel, not this shared machine
    options.threads = 1;
    QuadraticRow row{
        .n = n, .measured = true, .score_matrix_bytes = double(n) * double(n) * sizeof(float)};

    Workspace naive_ws;
    std::vector<double> ms;
    for (std::size_t rep = 0; rep < r.reps; ++rep) {
      const auto start = std::chrono::steady_clock::now();
      r.naive_kernel =
          attention(naive, shape, options, {q.data(), k.data(), v.data(), o.data()}, naive_ws).name;
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
    std::sort(ms.begin(), ms.end());
    row.naive_ms = ms[ms.size() / 2];
    row.naive_scratch_bytes = double(naive_ws.peak_bytes());

    Workspace tiled_ws;
    const auto start = std::chrono::steady_clock::now();
    r.tiled_kernel =
        attention(tiled, shape, options, {q.data(), k.data(), v.data(), o.data()}, tiled_ws).name;
    row.tiled_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    row.tiled_scratch_bytes = double(tiled_ws.peak_bytes());

    log_n.push_back(std::log(double(n)));
    log_ms.push_back(std::log(row.naive_ms));
    n_keys.push_back(double(n));
    tiled_bytes.push_back(row.tiled_scratch_bytes);
    r.rows.push_back(row);
  }
  // Time: a power law t = a n^b, fitted as a line in log-log. Tiled scratch: a fixed part (its
  // tiles) plus a part per key (K and V packed once per head), fitted as a line in n.
  const Line time = fit(log_n, log_ms);
  r.time_log_intercept = time.intercept;
  r.time_exponent = time.slope;
  const Line scratch = fit(n_keys, tiled_bytes);
  r.tiled_bytes_fixed = scratch.intercept;
  r.tiled_bytes_per_key = scratch.slope;
  for (std::size_t n : extrapolated) {
    r.rows.push_back({.n = n,
                      .measured = false,
                      .score_matrix_bytes = double(n) * double(n) * sizeof(float),
                      .naive_ms = std::exp(time.intercept + time.slope * std::log(double(n))),
                      .tiled_scratch_bytes = scratch.intercept + scratch.slope * double(n)});
  }
  return r;
}

void print(const QuadraticResult& r, std::FILE* out) {
  heading(out, "quadratic",
          "the naive score matrix grows as n^2; the tiled kernel's scratch grows as n d at most");
  std::fprintf(out,
               "naive kernel %s (time: median of %zu calls), tiled kernel %s (one call); "
               "q_len = kv_len = n, head dim %zu, one head, one thread\n",
               r.naive_kernel.c_str(), r.reps, r.tiled_kernel.c_str(), r.head_dim);
  std::fprintf(out, "%8s  %-13s %-14s %-12s %-14s %s\n", "n", "n^2*4 bytes", "naive scratch",
               "naive time", "tiled scratch", "tiled time");
  for (const QuadraticRow& row : r.rows) {
    if (row.measured) {
      std::fprintf(out, "%8zu  %-13s %-14s %-12s %-14s %s\n", row.n,
                   bytes(row.score_matrix_bytes).c_str(), bytes(row.naive_scratch_bytes).c_str(),
                   milliseconds(row.naive_ms).c_str(), bytes(row.tiled_scratch_bytes).c_str(),
                   milliseconds(row.tiled_ms).c_str());
    } else {
      const std::string naive_ms = std::string("~").append(milliseconds(row.naive_ms));
      const std::string tiled_bytes = std::string("~").append(bytes(row.tiled_scratch_bytes));
      std::fprintf(out, "%8zu  %-13s %-14s %-12s %-14s %s\n", row.n,
                   bytes(row.score_matrix_bytes).c_str(), "-", naive_ms.c_str(),
                   tiled_bytes.c_str(), "- (extrapolated)");
    }
  }
  std::fprintf(out,
               "fits: naive time ~ n^%.2f (least squares of log t on log n); tiled scratch ~ "
               "%s + %.1f bytes per key\n",
               r.time_exponent, bytes(r.tiled_bytes_fixed).c_str(), r.tiled_bytes_per_key);
  for (const QuadraticRow& row : r.rows) {
    if (row.score_matrix_bytes > r.memory_budget_bytes) {
      std::fprintf(out,
                   "n = %zu: the naive kernels refuse it here (score matrix %s > memory budget %s, "
                   "half of RAM); the tiled ones need ~%s\n",
                   row.n, bytes(row.score_matrix_bytes).c_str(),
                   bytes(r.memory_budget_bytes).c_str(), bytes(row.tiled_scratch_bytes).c_str());
    }
  }
}

Json to_json(const QuadraticResult& r) {
  Json rows = Json::array();
  for (const QuadraticRow& row : r.rows) {
    rows.push_back(
        {{"n", row.n},
         {"measured", row.measured},
         {"score_matrix_bytes", row.score_matrix_bytes},
         {"naive_scratch_bytes", row.measured ? Json(row.naive_scratch_bytes) : Json(nullptr)},
         {"naive_ms", row.naive_ms},
         {"tiled_scratch_bytes", row.tiled_scratch_bytes},
         {"tiled_ms", row.measured ? Json(row.tiled_ms) : Json(nullptr)}});
  }
  return {{"naive_kernel", r.naive_kernel},
          {"tiled_kernel", r.tiled_kernel},
          {"head_dim", r.head_dim},
          {"reps", r.reps},
          {"time_exponent", r.time_exponent},
          {"time_log_intercept", r.time_log_intercept},
          {"tiled_bytes_fixed", r.tiled_bytes_fixed},
          {"tiled_bytes_per_key", r.tiled_bytes_per_key},
          {"memory_budget_bytes", r.memory_budget_bytes},
          {"rows", rows}};
}

// ---------------------------------------------------------------------------------------------
// order
// ---------------------------------------------------------------------------------------------

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
      // PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d))
      for (std::size_t i = 0; i < kOrderDim / 2; ++i) {
        const double angle = double(pos) / std::pow(10000.0, 2.0 * double(i) / kOrderDim);
        e[2 * i] += float(std::sin(angle));
        e[2 * i + 1] += float(std::cos(angle));
      }
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

// ---------------------------------------------------------------------------------------------
// uniform
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// The command
// ---------------------------------------------------------------------------------------------

namespace {

template <class Result>
Json show(const Result& r, std::FILE* out) {
  print(r, out);
  std::fflush(out);
  return to_json(r);
}

Json run_one(std::string_view name, std::FILE* out) {
  if (name == "softmax") return show(softmax(), out);
  if (name == "bottleneck") return show(bottleneck(), out);
  if (name == "alignment") return show(alignment(), out);
  if (name == "quadratic") return show(quadratic(), out);
  if (name == "order") return show(order(), out);
  return show(uniform(), out);  // "uniform": run() has checked the name
}

}  // namespace

int run(std::string_view name, const std::string& json_path, std::FILE* out) {
  std::vector<std::string_view> chosen;
  if (name == "all") {
    chosen.assign(kNames.begin(), kNames.end());
  } else if (std::find(kNames.begin(), kNames.end(), name) != kNames.end()) {
    chosen.push_back(name);
  } else {
    std::string known;
    for (std::string_view n : kNames) known += std::string(n) + ", ";
    throw Error("demo", std::string(name), "unknown demo; expected one of " + known + "all");
  }

  // Open the JSON file before running anything, so a bad path fails at once; write it under a
  // temporary name and rename, so a failed run leaves no half-written file.
  const std::string temporary = json_path + ".tmp";
  std::ofstream json_file;
  if (!json_path.empty()) {
    json_file.open(temporary);
    if (!json_file) {
      throw Error("--json", json_path, std::string("cannot write: ") + std::strerror(errno));
    }
  }

  Json doc = {{"demos", Json::object()}};
  try {
    for (std::size_t i = 0; i < chosen.size(); ++i) {
      if (i > 0) std::fputc('\n', out);
      doc["demos"][std::string(chosen[i])] = run_one(chosen[i], out);
    }
  } catch (...) {
    if (!json_path.empty()) {
      json_file.close();
      std::remove(temporary.c_str());
    }
    throw;
  }

  if (!json_path.empty()) {
    json_file << doc.dump(2) << '\n';
    json_file.close();
    if (!json_file || std::rename(temporary.c_str(), json_path.c_str()) != 0) {
      const std::string why = std::strerror(errno);
      std::remove(temporary.c_str());
      throw Error("--json", json_path, "cannot write: " + why);
    }
  }
  return 0;
}

}  // namespace attnbench::demo
