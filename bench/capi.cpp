// libattnbench_capi.so: the few C entry points the Python runner (scripts/contenders.py) loads
// with ctypes, so that it times attnbench's kernels in its own rounds, on its own arrays, with
// the same clock as NumPy and PyTorch, and checks every contender with the benchmark's oracle
// check. One head: Q, K, V and O are contiguous [n][d] float32 arrays.
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "contender.hpp"
#include "oracle_check.hpp"

namespace {

void write_message(const std::string& message, char* out, std::size_t size) {
  if (out == nullptr || size == 0) return;
  std::strncpy(out, message.c_str(), size - 1);
  out[size - 1] = '\0';
}

attnbench::Shape head(std::size_t n, std::size_t d) { return {1, 1, 1, n, n, d}; }

}  // namespace

extern "C" {

// The contender preset `name` ("quick", "full"): writes up to `max` points (n, d, causal,
// threads, with every core = `all_threads`) and the window's repetitions, minimum seconds per
// repetition and per-call budget; returns the number of points, or -1 for an unknown preset.
int attnbench_c_preset(const char* name, std::size_t all_threads, std::size_t* n, std::size_t* d,
                       int* causal, std::size_t* threads, std::size_t max, int* repetitions,
                       double* min_time, double* budget_seconds) {
  const auto preset = attnbench::bench::contender_preset(name, all_threads);
  if (!preset) return -1;
  std::size_t i = 0;
  for (; i < preset->points.size() && i < max; ++i) {
    const auto& p = preset->points[i];
    n[i] = p.shape.q_len;
    d[i] = p.shape.head_dim;
    causal[i] = p.causal;
    threads[i] = p.threads;
  }
  *repetitions = preset->repetitions;
  *min_time = preset->min_time;
  *budget_seconds = preset->budget_seconds;
  return static_cast<int>(i);
}

// The kernel registry entry `kernel` resolves to here ("tiled/simd" -> "tiled/simd/avx512f"), or
// null for an unknown name.
// The library's version (<attnbench/version.hpp>), for the runner's context.
const char* attnbench_c_version() { return attnbench::kVersion; }

const char* attnbench_c_resolve(const char* kernel) {
  const attnbench::Kernel* k = attnbench::find_kernel(kernel);
  return k ? attnbench::resolve(*k).name.data() : nullptr;  // registry names are NUL-terminated
}

// The role of registry kernel `kernel` ("attnbench" or "baseline", bench/contender.hpp's
// kernel_role) and whether it is fused (a tiled kernel); null for an unknown name.
const char* attnbench_c_role(const char* kernel, int* fused) {
  const attnbench::Kernel* k = attnbench::find_kernel(kernel);
  if (k == nullptr) return nullptr;
  *fused = k->strategy == attnbench::Strategy::tiled;
  return attnbench::bench::kernel_role(*k);
}

// O = attention(Q, K, V) with registry kernel `kernel` on `threads` threads, one Workspace per
// kernel kept between calls (as the benchmark keeps it). Returns 0, or -1 with the message.
int attnbench_c_attention(const char* kernel, std::size_t n, std::size_t d, std::size_t threads,
                          int causal, const float* q, const float* k, const float* v, float* o,
                          char* error, std::size_t error_size) {
  static std::map<std::string, std::unique_ptr<attnbench::Workspace>> workspaces;
  try {
    const attnbench::Kernel* found = attnbench::find_kernel(kernel);
    if (found == nullptr) throw std::invalid_argument(std::string("unknown kernel ") + kernel);
    auto& ws = workspaces[kernel];
    if (!ws) ws = std::make_unique<attnbench::Workspace>();
    attnbench::Options options;
    options.causal = causal != 0;
    options.threads = threads;
    attnbench::attention(*found, head(n, d), options, {q, k, v, o}, *ws);
    return 0;
  } catch (const std::exception& e) {
    write_message(e.what(), error, error_size);
    return -1;
  }
}

// The benchmark's oracle check (bench/oracle_check.hpp) of O over `max_rows` sampled rows.
// Returns 1 when it passes, 0 when it fails (the first element out of bound in `failure`).
int attnbench_c_check(std::size_t n, std::size_t d, int causal, const float* q, const float* k,
                      const float* v, const float* o, std::size_t max_rows, double* worst_ratio,
                      char* failure, std::size_t failure_size) {
  attnbench::Options options;
  options.causal = causal != 0;
  const auto check = attnbench::bench::check_against_oracle(
      head(n, d), options, {q, k, v, const_cast<float*>(o)}, max_rows);
  *worst_ratio = check.worst_ratio;
  write_message(check.failure, failure, failure_size);
  return check.passed ? 1 : 0;
}

}  // extern "C"
