// quadratic: the naive kernels' score matrix grows as n^2, so they refuse long sequences; the
// tiled kernel's scratch does not. Measured on a few n, extrapolated to 128k by least squares.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "demo/demo_support.hpp"

namespace attnbench::demo {

using namespace detail;

namespace {

// What a column holds in an extrapolated row.
enum class Unmeasured {
  exact,   // the same as measured (a byte count that follows from n)
  fitted,  // the fit's value, printed with a "~"
  absent,  // nothing: "-" when printed, null in the JSON
};

// The table's columns after n, for print() and to_json() alike.
struct Column {
  const char* header;
  const char* key;  // in the JSON rows
  double QuadraticRow::*value;
  std::string (*format)(double);
  Unmeasured unmeasured;
  int width;  // 0 for the last column: no trailing padding
};
constexpr Column kColumns[] = {
    {"n^2*4 bytes", "score_matrix_bytes", &QuadraticRow::score_matrix_bytes, bytes,
     Unmeasured::exact, 13},
    {"naive scratch", "naive_scratch_bytes", &QuadraticRow::naive_scratch_bytes, bytes,
     Unmeasured::absent, 14},
    {"naive time", "naive_ms", &QuadraticRow::naive_ms, milliseconds, Unmeasured::fitted, 12},
    {"tiled scratch", "tiled_scratch_bytes", &QuadraticRow::tiled_scratch_bytes, bytes,
     Unmeasured::fitted, 14},
    {"tiled time", "tiled_ms", &QuadraticRow::tiled_ms, milliseconds, Unmeasured::absent, 0},
};

// A row's cell in column c, as printed.
std::string cell(const QuadraticRow& row, const Column& c) {
  if (row.measured || c.unmeasured == Unmeasured::exact) return c.format(row.*c.value);
  if (c.unmeasured == Unmeasured::absent) return "-";
  // append, not "~" + string: GCC 12 warns falsely on the latter (-Wrestrict)
  return std::string("~").append(c.format(row.*c.value));
}

double since_ms(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

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
        .n = n, .measured = true, .score_matrix_bytes = double(naive_score_bytes(shape))};

    Workspace naive_ws;
    std::vector<double> ms;
    for (std::size_t rep = 0; rep < r.reps; ++rep) {
      const auto start = std::chrono::steady_clock::now();
      r.naive_kernel =
          attention(naive, shape, options, {q.data(), k.data(), v.data(), o.data()}, naive_ws).name;
      ms.push_back(since_ms(start));
    }
    std::sort(ms.begin(), ms.end());
    row.naive_ms = ms[ms.size() / 2];
    row.naive_scratch_bytes = double(naive_ws.peak_bytes());

    Workspace tiled_ws;
    const auto start = std::chrono::steady_clock::now();
    r.tiled_kernel =
        attention(tiled, shape, options, {q.data(), k.data(), v.data(), o.data()}, tiled_ws).name;
    row.tiled_ms = since_ms(start);
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
                      .score_matrix_bytes = double(naive_score_bytes({1, 1, 1, n, n, head_dim})),
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
  std::fprintf(out, "%8s ", "n");
  for (const Column& c : kColumns) std::fprintf(out, " %-*s", c.width, c.header);
  std::fputc('\n', out);
  for (const QuadraticRow& row : r.rows) {
    std::fprintf(out, "%8zu ", row.n);
    for (const Column& c : kColumns) std::fprintf(out, " %-*s", c.width, cell(row, c).c_str());
    std::fprintf(out, "%s\n", row.measured ? "" : " (extrapolated)");
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
    Json j = {{"n", row.n}, {"measured", row.measured}};
    for (const Column& c : kColumns) {
      const bool absent = !row.measured && c.unmeasured == Unmeasured::absent;
      j[c.key] = absent ? Json(nullptr) : Json(row.*c.value);
    }
    rows.push_back(std::move(j));
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

}  // namespace attnbench::demo
