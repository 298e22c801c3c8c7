// libattnbench_capi.so: the few C entry points the Python runner (scripts/contenders.py) loads
// with ctypes, so that it times attnbench's kernels in its own rounds, on its own arrays, with
// the same clock as NumPy and PyTorch, and checks every contender with the benchmark's oracle
// check. One head: Q, K, V and O are contiguous [n][d] float32 arrays.
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "attnbench_commit.hpp"  // generated at every build (cmake/git_commit.cmake)
#include "contender.hpp"
#include "oracle_check.hpp"

namespace {

void write_message(const std::string& message, char* out, std::size_t size) {
  if (out == nullptr || size == 0) return;
  std::strncpy(out, message.c_str(), size - 1);
  out[size - 1] = '\0';
}

attnbench::Shape head(std::size_t n, std::size_t d) { return {1, 1, 1, n, n, d}; }

// The kernel called `name` (throws for an unknown one) and a workspace of its own, kept between
// calls as the benchmark keeps one per point.
const attnbench::Kernel& kernel_named(const char* name) {
  const attnbench::Kernel* found = attnbench::find_kernel(name);
  if (found == nullptr) throw std::invalid_argument(std::string("unknown kernel ") + name);
  return *found;
}
attnbench::Workspace& workspace_of(const char* kernel) {
  static std::map<std::string, std::unique_ptr<attnbench::Workspace>> workspaces;
  auto& ws = workspaces[kernel];
  if (!ws) ws = std::make_unique<attnbench::Workspace>();
  return *ws;
}

// Runs `call`; 0, or -1 with the exception's message in `error`.
template <class Call>
int guarded(Call&& call, char* error, std::size_t error_size) {
  try {
    call();
    return 0;
  } catch (const std::exception& e) {
    write_message(e.what(), error, error_size);
    return -1;
  }
}

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

// The contender preset's training-step lengths (`pass` 0), decode cache lengths (`pass` 1) or
// prefill lengths (`pass` 2): up to `max` written to `out`; returns their number, or -1 for an
// unknown preset.
int attnbench_c_preset_pass(const char* name, int pass, std::size_t* out, std::size_t max) {
  const auto preset = attnbench::bench::contender_preset(name, 1);
  if (!preset) return -1;
  const auto& list = pass == 0   ? preset->training_lengths
                     : pass == 1 ? preset->decode_lengths
                                 : preset->prefill_lengths;
  std::size_t i = 0;
  for (; i < list.size() && i < max; ++i) out[i] = list[i];
  return static_cast<int>(i);
}

// The library's version (<attnbench/version.hpp>), for the runner's context.
const char* attnbench_c_version() { return attnbench::kVersion; }

// The commit this helper was built from and whether tracked files differed from it ("true",
// "false" or "unknown"), as every attnbench_bench window records them (cmake/git_commit.cmake).
const char* attnbench_c_git_commit() { return attnbench::build::kGitCommit; }
const char* attnbench_c_git_dirty() { return attnbench::build::kGitDirty; }

// The kernel registry entry `kernel` resolves to here ("tiled/simd" -> "tiled/simd/avx512f"), or
// null for an unknown name.
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
  return guarded(
      [&] {
        attnbench::Options options;
        options.causal = causal != 0;
        options.threads = threads;
        attnbench::attention(kernel_named(kernel), head(n, d), options, {q, k, v, o},
                             workspace_of(kernel));
      },
      error, error_size);
}

// Grouped-query attention over one batch: Q and O [q_heads][n][d], K and V [kv_heads][n][d] (each
// K/V head serving q_heads / kv_heads query heads), causal or not, on `threads` threads. 0, or -1.
int attnbench_c_attention_gqa(const char* kernel, std::size_t q_heads, std::size_t kv_heads,
                              std::size_t n, std::size_t d, std::size_t threads, int causal,
                              const float* q, const float* k, const float* v, float* o, char* error,
                              std::size_t error_size) {
  return guarded(
      [&] {
        attnbench::Options options;
        options.causal = causal != 0;
        options.threads = threads;
        attnbench::attention(kernel_named(kernel), {1, q_heads, kv_heads, n, n, d}, options,
                             {q, k, v, o}, workspace_of(kernel));
      },
      error, error_size);
}

// A training step of one head: the forward (O and its LSE) and then the backward for the output
// gradient dO (dQ, dK, dV), with registry kernel `kernel` on `threads` threads. 0, or -1 with the
// message.
int attnbench_c_training_step(const char* kernel, std::size_t n, std::size_t d, std::size_t threads,
                              int causal, const float* q, const float* k, const float* v,
                              const float* d_o, float* o, float* lse, float* dq, float* dk,
                              float* dv, char* error, std::size_t error_size) {
  return guarded(
      [&] {
        attnbench::Options options;
        options.causal = causal != 0;
        options.threads = threads;
        const attnbench::Kernel& ran = kernel_named(kernel);
        attnbench::Workspace& ws = workspace_of(kernel);
        const attnbench::Tensors forward{q, k, v, o, lse};
        attnbench::attention(ran, head(n, d), options, forward, ws);
        attnbench::attention_backward(ran, head(n, d), options, forward, {d_o, dq, dk, dv}, ws);
      },
      error, error_size);
}

// A KvCache of registry kernel `kernel` for one layer of `kv_heads` heads of `d`, storing K/V as
// `kv_type` ("f32", "q8_0", ...: KvType's names), holding `kv_len` keys and values appended from k
// and v ([kv_heads][kv_len][d] float32, packed on `threads` threads): what a decode loop attends
// through. The cache, or null with the message.
void* attnbench_c_cache_new(const char* kernel, const char* kv_type, std::size_t kv_heads,
                            std::size_t kv_len, std::size_t d, const float* k, const float* v,
                            std::size_t threads, char* error, std::size_t error_size) {
  attnbench::KvCache* cache = nullptr;
  guarded(
      [&] {
        const auto type = attnbench::kv_type_from_string(kv_type);
        if (!type)
          throw std::invalid_argument(std::string("kv_type: unknown type '") + kv_type + "'");
        auto made = std::make_unique<attnbench::KvCache>(kernel_named(kernel), 1, kv_heads, d,
                                                         kv_len, *type);
        made->append(k, v, kv_len, threads);
        cache = made.release();
      },
      error, error_size);
  return cache;
}

void attnbench_c_cache_free(void* cache) { delete static_cast<attnbench::KvCache*>(cache); }

// O ([q_heads][q_len][d]) of Q ([q_heads][q_len][d]) through `cache` (grouped-query attention when
// q_heads exceeds its kv_heads), causal aligned bottom-right, on `threads` threads; the query
// rounded to q8_0 for Q K^T when `quantise_query` (Options::quantise_query). 0, or -1.
int attnbench_c_cache_attention(void* cache, std::size_t q_heads, std::size_t q_len, int causal,
                                int quantise_query, const float* q, float* o, std::size_t threads,
                                char* error, std::size_t error_size) {
  return guarded(
      [&] {
        const auto& c = *static_cast<const attnbench::KvCache*>(cache);
        attnbench::Options options;
        options.causal = causal != 0;
        options.quantise_query = quantise_query != 0;
        options.threads = threads;
        const attnbench::Shape shape{1, q_heads, c.kv_heads(), q_len, c.length(), c.head_dim()};
        attnbench::Tensors tensors{q, nullptr, nullptr, o};
        tensors.kv_cache = &c;
        attnbench::attention(c.kernel(), shape, options, tensors,
                             workspace_of(c.kernel().name.data()));
      },
      error, error_size);
}

// The benchmark's oracle check (bench/oracle_check.hpp) of O over `max_rows` sampled rows.
// Returns 1 when it passes, 0 when it fails (the first element out of bound in `failure`).
// The same check on a grouped-query problem (one batch): Q and O [q_heads][q_len][d], K and V
// [kv_heads][kv_len][d], causal aligned bottom-right.
int attnbench_c_check_gqa(std::size_t q_heads, std::size_t kv_heads, std::size_t q_len,
                          std::size_t kv_len, std::size_t d, int causal, const float* q,
                          const float* k, const float* v, const float* o, std::size_t max_rows,
                          double* worst_ratio, char* failure, std::size_t failure_size) {
  attnbench::Options options;
  options.causal = causal != 0;
  const auto check =
      attnbench::bench::check_against_oracle({1, q_heads, kv_heads, q_len, kv_len, d}, options,
                                             {q, k, v, const_cast<float*>(o)}, max_rows);
  *worst_ratio = check.worst_ratio;
  write_message(check.failure, failure, failure_size);
  return check.passed ? 1 : 0;
}

// The check of a bf16 implementation's O (Products::bf16) of one head: 1 passes, 0 fails.
int attnbench_c_check_bf16(std::size_t n, std::size_t d, int causal, const float* q, const float* k,
                           const float* v, const float* o, std::size_t max_rows,
                           double* worst_ratio, char* failure, std::size_t failure_size) {
  attnbench::Options options;
  options.causal = causal != 0;
  const auto check = attnbench::bench::check_against_oracle({1, 1, 1, n, n, d}, options,
                                                            {q, k, v, const_cast<float*>(o)},
                                                            max_rows, attnbench::Products::bf16);
  *worst_ratio = check.worst_ratio;
  write_message(check.failure, failure, failure_size);
  return check.passed ? 1 : 0;
}

int attnbench_c_check(std::size_t n, std::size_t d, int causal, const float* q, const float* k,
                      const float* v, const float* o, std::size_t max_rows, double* worst_ratio,
                      char* failure, std::size_t failure_size) {
  return attnbench_c_check_gqa(1, 1, n, n, d, causal, q, k, v, o, max_rows, worst_ratio, failure,
                               failure_size);
}

// A contender's gradients of one head (dQ, dK, dV for dO) against the backward oracle, every
// element (bench/oracle_check.hpp): 1 when they pass, 0 with the first failure.
int attnbench_c_check_gradients(std::size_t n, std::size_t d, int causal, const float* q,
                                const float* k, const float* v, const float* d_o, const float* dq,
                                const float* dk, const float* dv, double* worst_ratio,
                                char* failure, std::size_t failure_size) {
  attnbench::Options options;
  options.causal = causal != 0;
  const auto check = attnbench::bench::check_gradients_against_oracle(
      head(n, d), options, {q, k, v, nullptr}, d_o,
      {nullptr, const_cast<float*>(dq), const_cast<float*>(dk), const_cast<float*>(dv)});
  *worst_ratio = check.worst_ratio;
  write_message(check.failure, failure, failure_size);
  return check.passed ? 1 : 0;
}

}  // extern "C"
