// attnbench_bench --context: sliding windows against the full causal mask over long heads
// (context_window.hpp says what each point reports).
#include "context_window.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <attnbench/attnbench.hpp>
#include "bench_inputs.hpp"
#include "mask_band.hpp"
#include "oracle_check.hpp"
#include "window_support.hpp"

namespace attnbench::bench {
namespace {

struct ContextPreset {
  std::vector<std::size_t> lengths;  // windowed points
  std::size_t window;
  std::size_t full_up_to;  // full causal points at the lengths up to this
  std::size_t capped_at;   // and a soft-capped full causal point and the window as a tensor here
  std::size_t head_dim;
  int repetitions;
};

// The window: Mistral's 4096 keys, at d = 128, from n = 2w (where the window first hides half the
// causal pairs) to 32 w; full causal as far as its calls stay a few seconds.
ContextPreset context_preset(const std::string& name) {
  if (name == "full") {
    return {.lengths = {8192, 16384, 32768, 65536, 131072, 262144},
            .window = 4096,
            .full_up_to = 65536,
            .capped_at = 16384,
            .head_dim = 128,
            .repetitions = 3};
  }
  if (name == "standard") {
    return {.lengths = {8192, 16384, 32768, 65536, 131072},
            .window = 4096,
            .full_up_to = 32768,
            .capped_at = 16384,
            .head_dim = 128,
            .repetitions = 3};
  }
  return {.lengths = {2048, 4096, 8192},
          .window = 512,
          .full_up_to = 4096,
          .capped_at = 2048,
          .head_dim = 64,
          .repetitions = 2};
}

const std::map<std::size_t, double>* g_peak = nullptr;

// Rows of each point's oracle check (evenly spaced, the first and last among them).
constexpr std::size_t kCheckRows = 6;

// The window as a boolean mask tensor, [1, 1, n, n]: row i keeps keys (i - window, i].
std::vector<std::uint8_t> window_tensor(std::size_t n, std::size_t window) {
  std::vector<std::uint8_t> keep(n * n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t first = i + 1 > window ? i + 1 - window : 0;
    std::fill(keep.begin() + i * n + first, keep.begin() + i * n + i + 1, std::uint8_t{1});
  }
  return keep;
}

void run_context(benchmark::State& state, const Kernel* kernel, std::size_t n, std::size_t d,
                 std::size_t window, float softcap, bool as_tensor, std::size_t threads) {
  try {
    const Shape shape{1, 1, 1, n, n, d};
    const std::vector<float>& q = random_tensor(shape.q_elements(), 40);
    const std::vector<float>& k = random_tensor(shape.kv_elements(), 41);
    const std::vector<float>& v = random_tensor(shape.kv_elements(), 42);
    std::vector<float> o(shape.q_elements());
    const Tensors t{.q = q.data(), .k = k.data(), .v = v.data(), .o = o.data()};
    Options options;
    options.causal = true;
    options.threads = threads;
    if (softcap > 0.0f) options.softcap = softcap;
    std::vector<std::uint8_t> keep;
    if (as_tensor) {
      keep = window_tensor(n, window);
      options.mask = {keep.data(), nullptr, {1, 1, n, n}};
    } else if (window > 0) {
      options.window_left = window;
    }
    Workspace ws;
    attention(*kernel, shape, options, t, ws);  // warm-up, and the output the check reads
    const OracleCheck check = check_against_oracle(shape, options, t, kCheckRows);
    if (!check.passed) return skip_all(state, "failed: oracle check: " + check.failure);
    using clock = std::chrono::steady_clock;
    for (auto _ : state) {
      const auto a = clock::now();
      attention(*kernel, shape, options, t, ws);
      benchmark::DoNotOptimize(o.data());
      state.SetIterationTime(std::chrono::duration<double>(clock::now() - a).count());
    }
    Options visible = options;  // the pairs the window leaves, given as a tensor or not
    if (window > 0) visible.window_left = window;
    const double pairs = scored_pairs(shape, visible);
    const double flops = 4.0 * pairs * double(d);
    // (a rate inverted: seconds over n * 1e-6, microseconds a row)
    state.counters["us_per_row"] = benchmark::Counter(
        double(n) * 1e-6, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.counters["GFLOP/s"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsRate);
    state.counters["pct_peak"] =
        benchmark::Counter(100.0 * flops / g_peak->at(threads), benchmark::Counter::kIsRate);
    state.counters["pairs"] = pairs;
    state.counters["scratch_bytes"] = double(ws.peak_bytes());
    state.counters["kv_bytes"] = 2.0 * double(shape.kv_elements()) * sizeof(float);
    state.counters["window"] = double(window);
    state.counters["softcap"] = double(softcap);
    state.counters["mask_bytes"] = double(keep.size());
    // The mask tensor's scan for its band (src/mask_band.cpp) on one thread, the fastest of 3: the
    // part of the n x n read a call makes before it computes.
    double scan_s = 0;
    for (int r = 0; as_tensor && r < 3; ++r) {
      const auto a = clock::now();
      benchmark::DoNotOptimize(driver::kernel_key_mask(shape, options));
      const double s = std::chrono::duration<double>(clock::now() - a).count();
      scan_s = r == 0 ? s : std::min(scan_s, s);
    }
    state.counters["scan_ms"] = scan_s * 1e3;
  } catch (const std::exception& e) {
    skip_all(state, std::string("failed: ") + e.what());
  }
}

}  // namespace

void register_context(const std::string& preset_name, std::size_t all_threads,
                      const std::map<std::size_t, double>& peak_flops,
                      std::map<std::string, double>& predicted) {
  g_peak = &peak_flops;
  const ContextPreset preset = context_preset(preset_name);
  const Kernel* kernel = &resolve(*find_kernel("tiled/simd"));
  std::vector<std::size_t> thread_counts{1};
  if (all_threads > 1) thread_counts.push_back(all_threads);
  // Gemma 2's attention soft-cap
  constexpr float kSoftcap = 50.0f;
  struct Mask {
    std::size_t window;
    float softcap;
    bool as_tensor;
  };
  for (std::size_t threads : thread_counts) {
    for (std::size_t n : preset.lengths) {
      for (const Mask mask : {Mask{preset.window, 0.0f, false}, Mask{0, 0.0f, false},
                              Mask{0, kSoftcap, false}, Mask{preset.window, 0.0f, true}}) {
        const std::size_t window = mask.window;
        if (window == 0 && n > preset.full_up_to) continue;
        if ((mask.softcap > 0.0f || mask.as_tensor) && n != preset.capped_at) continue;
        const std::string name =
            "context/" + std::string(kernel->name) + "/n:" + std::to_string(n) +
            "/d:" + std::to_string(preset.head_dim) +
            "/w:" + (window ? std::to_string(window) : "full") +
            (mask.softcap > 0.0f ? "/cap:" + std::to_string(int(mask.softcap)) : "") +
            (mask.as_tensor ? "/mask:bool" : "") + "/threads:" + std::to_string(threads);
        auto* b =
            benchmark::RegisterBenchmark(name.c_str(), run_context, kernel, n, preset.head_dim,
                                         window, mask.softcap, mask.as_tensor, threads);
        b->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
        b->Repetitions(preset.repetitions)->ReportAggregatesOnly(true);
        b->ComputeStatistics("min", fastest);
        // The calls at 70% of the peak, plus the warm-up and the oracle check's rows.
        Options options;
        options.causal = true;
        if (window) options.window_left = window;
        const double flops = 4.0 * scored_pairs(Shape{1, 1, 1, n, n, preset.head_dim}, options) *
                             double(preset.head_dim);
        // (a listing measures no peak: then 50 GFLOP/s a thread)
        const auto peak = peak_flops.find(threads);
        const double rate = peak != peak_flops.end() ? 0.7 * peak->second : 50e9 * double(threads);
        predicted[name] = flops / rate * (preset.repetitions + 1);
      }
    }
  }
}

}  // namespace attnbench::bench
