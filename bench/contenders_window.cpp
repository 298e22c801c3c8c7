// attnbench_bench --contenders: the contenders' window, apart from the kernels' matrix
// (attention_bench.cpp), which shares its inputs (bench_inputs.hpp).
#include "contenders_window.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <attnbench/attnbench.hpp>
#include "bench_inputs.hpp"
#include "contender.hpp"
#include "oracle_check.hpp"
#include "window_support.hpp"

namespace attnbench::bench {
namespace {

const std::map<std::size_t, double>* g_peak_flops = nullptr;  // register_contenders' arguments

// The contenders' window: every contender (contender.hpp) at the contender preset's points.
// Run with --benchmark_enable_random_interleaving=true (scripts/study.sh does), so that the
// repetitions of all contenders alternate in one window and their ratios are not the drift of
// the machine between them.
std::vector<std::unique_ptr<attnbench::bench::Contender>> g_contenders;

void run_contender(benchmark::State& state, attnbench::bench::Contender* contender,
                   attnbench::bench::ContenderPoint p, std::string skip, double predicted_call) {
  auto skip_all = [&state](const std::string& message) {
    state.SkipWithError(message.c_str());
    for (auto _ : state) {
    }
  };
  if (!skip.empty()) return skip_all(skip);
  const std::string name = attnbench::bench::point_name(contender->describe().name, p);
  const attnbench::Shape& shape = p.shape;
  const std::vector<float>& q = random_tensor(shape.q_elements(), 0);
  const std::vector<float>& k = random_tensor(shape.kv_elements(), 1);
  const std::vector<float>& v = random_tensor(shape.kv_elements(), 2);
  // The point the contenders were last prepared for, the output buffer, and each point's oracle
  // check (made once, on the first call of the point, before any timed call).
  static std::string prepared;
  static std::vector<float> o;
  static std::map<std::string, attnbench::bench::OracleCheck> checks;
  attnbench::Options options;
  options.causal = p.causal;
  try {
    if (prepared != name) {
      prepared.clear();
      o.assign(shape.q_elements(), -12345.0f);  // poison: the check sees any element not written
      const attnbench::Tensors fresh{q.data(), k.data(), v.data(), o.data()};
      contender->prepare(p, fresh);
      if (!checks.count(name)) {
        contender->run();  // also the warm-up: one-time set-up, page faults
        checks[name] = attnbench::bench::check_against_oracle(shape, options, fresh, 16);
      } else if (predicted_call < 0.5) {
        contender->run();  // warm-up of a short call; a long one reuses memory touched before
      }
      prepared = name;
    }
  } catch (const std::exception& e) {
    prepared.clear();
    return skip_all(std::string("failed: ") + e.what());
  }
  const attnbench::bench::OracleCheck& check = checks[name];
  if (!check.passed) return skip_all("failed: oracle check: " + check.failure);
  for (auto _ : state) {
    contender->run();
    benchmark::DoNotOptimize(o.data());
    benchmark::ClobberMemory();
  }
  using benchmark::Counter;
  const double flops = 4.0 * attnbench::scored_pairs(shape, p.causal) * double(shape.head_dim);
  const double io_bytes = 4.0 * double(2 * shape.q_elements() + 2 * shape.kv_elements());
  const bool fused = contender->describe().fused;
  state.counters["GFLOP/s"] = Counter(flops / 1e9, Counter::kIsIterationInvariantRate);
  state.counters["pct_peak"] =
      Counter(100.0 * flops / g_peak_flops->at(p.threads), Counter::kIsIterationInvariantRate);
  state.counters["scratch_bytes"] = Counter(double(contender->scratch_bytes()));
  state.counters["score_matrix_bytes"] = Counter(double(attnbench::naive_score_bytes(shape)));
  state.counters["bytes_moved"] =
      Counter(fused ? io_bytes : io_bytes + 4 * 4.0 * attnbench::scored_pairs(shape, p.causal));
  state.counters["flops_per_call"] = Counter(flops);
  state.counters["oracle_error_ratio"] = Counter(check.worst_ratio);
}

// GFLOP/s of a contender at n = 512, d = 64, one thread: the median of three calls after a
// warm-up, the basis of the predictions (as calibrate() for the matrix).
double calibrate(attnbench::bench::Contender& c) {
  const attnbench::bench::ContenderPoint p{{1, 1, 1, 512, 512, 64}, false, 1};
  std::vector<float> q(p.shape.q_elements(), 0.5f), o(p.shape.q_elements());
  c.prepare(p, {q.data(), q.data(), q.data(), o.data()});
  c.run();
  double seconds[3];
  for (double& s : seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    c.run();
    s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  std::sort(std::begin(seconds), std::end(seconds));
  return 4.0 * 512 * 512 * 64 / seconds[1] / 1e9;
}

}  // namespace

void register_contenders(const std::string& preset_name, std::size_t all_threads,
                         const std::map<std::size_t, double>& peak_flops,
                         std::map<std::string, double>& predicted) {
  g_peak_flops = &peak_flops;
  const auto preset = attnbench::bench::contender_preset(preset_name, all_threads);
  g_contenders = attnbench::bench::contenders();
  for (const auto& c : g_contenders) {
    const attnbench::bench::Description& d = c->describe();
    benchmark::AddCustomContext("contender " + d.name, d.json());
  }
  for (const auto& c : g_contenders) {
    const std::string missing = c->unsupported(preset->points.front());
    const bool absent = missing.rfind("missing: ", 0) == 0;
    const double rate = absent ? 0 : calibrate(*c);
    if (!absent) c->release();
    for (const attnbench::bench::ContenderPoint& p : preset->points) {
      const std::string name = attnbench::bench::point_name(c->describe().name, p);
      const double flops =
          4.0 * attnbench::scored_pairs(p.shape, p.causal) * double(p.shape.head_dim);
      // Predicted seconds of one call, assuming the calibrated rate and linear thread scaling.
      const double call = absent ? 0 : flops / (rate * 1e9 * double(p.threads));
      std::string skip = c->unsupported(p);
      if (skip.empty() && call > preset->budget_seconds) {
        char why[160];
        std::snprintf(why, sizeof why,
                      "skipped: predicted %.1f s per call exceeds the %s preset's %.2f s budget",
                      call, preset_name.c_str(), preset->budget_seconds);
        skip = why;
      } else if (skip.empty() && !c->describe().fused &&
                 attnbench::naive_score_bytes(p.shape) > attnbench::default_memory_budget()) {
        skip = "skipped: score matrix over the naive memory budget (half of RAM)";
      }
      auto* b = benchmark::RegisterBenchmark(name.c_str(), run_contender, c.get(), p, skip, call);
      b->UseRealTime()->Unit(benchmark::kMillisecond)->Repetitions(preset->repetitions);
      b->ReportAggregatesOnly(true);
      b->ComputeStatistics("min", fastest);  // the fastest repetition, beside the median
      // One call per repetition when a call outlasts the minimum time (Google Benchmark refuses
      // both an iteration count and a minimum time on one benchmark).
      if (call > preset->min_time) {
        b->Iterations(1);
      } else {
        b->MinTime(preset->min_time);
      }
      const double per_rep = skip.empty() ? std::max(call, preset->min_time) : 0;
      predicted[name] =
          skip.empty() ? (per_rep + (call < 0.5 ? call : 0)) * preset->repetitions : 0;
    }
  }
}

}  // namespace attnbench::bench
