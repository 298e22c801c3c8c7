// attnbench_bench: the benchmark matrix, Google Benchmark over every registry kernel x sequence
// length x head dim x threads x causal, next to the machine's measured ceilings.
//
//   attnbench_bench [--preset=quick|full]
//                   [--contenders | --decode | --scaling | --phases | --constants | --context]
//                   [google benchmark flags]
//
// --contenders runs the contenders' window instead (contenders_window.hpp), --decode the decode
// window (decode_window.hpp), --scaling the thread-scaling window (scaling_window.hpp), --phases
// the tiled kernels' phases timed alone (phases_window.hpp), --constants the cost model's machine
// constants measured again (constants_window.hpp), --context sliding windows against the full
// causal mask over long heads (context_window.hpp).
//
// Names read `<kernel>/n:<n>/d:<d>/threads:<t>/causal:<0|1>` (q_len = kv_len = n, one head) for
// the forward pass; a backward point appends `/pass:backward` (attention_backward alone, on the
// O and LSE its kernel's forward left) and a training step `/pass:forward+backward` (the forward
// with LSE, then the backward).
// Counters per point: GFLOP/s (FLOPs = 4 x scored query-key pairs x d for the forward; 2.5 times
// that for the backward and 3.5 times for forward+backward, as FlashAttention's benchmarks count
// them), pct_peak (of the measured FMA peak for that thread count), scratch_bytes (the Workspace's
// measured peak, packed K/V included), score_matrix_bytes (n x n x 4, what a naive kernel
// materialises), rss_peak_bytes (the process's resident high-water mark during the point) and
// bytes_moved (the compulsory memory traffic model used by the report's roofline); a backward
// point also oracle_error_ratio, of the check its kernel passed before any timing; a forward
// point the cost model's counts, `count_<field>` of forward_counts.hpp. A point
// predicted to exceed the preset's time budget, or over the naive memory budget, is recorded in
// the JSON as an error with its reason; one whose kernel fails the backward's oracle check, as
// "failed: oracle check: ...". With its repetitions interleaved, the matrix also takes readings
// of the cost model's machine constants among its points (`constants/threads:<all>`,
// constants_window.hpp; preset.constants_readings of them).
#include <benchmark/benchmark.h>
#include <oneapi/tbb/info.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <attnbench/attnbench.hpp>
#include "bench_inputs.hpp"
#include "build_info.hpp"
#include "ceilings.hpp"
#include "constants_window.hpp"
#include "contender.hpp"
#include "contenders_window.hpp"
#include "context_window.hpp"
#include "cost_counters.hpp"
#include "decode_window.hpp"
#include "kernels/kernel_interface.hpp"
#include "matrix_points.hpp"
#include "oracle_check.hpp"
#include "phases_window.hpp"
#include "point_states.hpp"
#include "progress_reporter.hpp"
#include "run_context.hpp"
#include "scaling_window.hpp"
#include "window_support.hpp"

namespace {

using attnbench::Backend;
using attnbench::Kernel;
using attnbench::Strategy;
using attnbench::bench::bytes_moved;
using attnbench::bench::flop_factor;
using attnbench::bench::flops_of;
using attnbench::bench::forward_flops;
using attnbench::bench::Pass;
using attnbench::bench::Point;
using attnbench::bench::PointState;
using attnbench::bench::Preset;
using attnbench::bench::preset_named;
using attnbench::bench::random_tensor;
using attnbench::bench::register_contenders;

// Measured fp32 FMA peak in FLOP/s per thread count, filled before any benchmark runs.
std::map<std::size_t, double> g_peak_flops;
std::map<std::size_t, double> g_triad_gbs;  // GB/s per thread count, for the decode window

// The process's resident-set high-water mark (VmHWM), and its reset (Linux clear_refs 5).
std::size_t rss_high_water() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoul(line.substr(6)) * 1024;
  }
  return 0;
}
void reset_rss_high_water() { std::ofstream("/proc/self/clear_refs") << "5"; }

// The inputs of a point's shape (dO only for the passes that read it).
struct Inputs {
  const std::vector<float>& q;
  const std::vector<float>& k;
  const std::vector<float>& v;
  const std::vector<float>& d_o;
};

// One timed call of the point's pass. A forward point calls attention() as it always has, without
// LSE; a backward point calls attention_backward() alone, on the O and LSE its warm-up's forward
// left; forward+backward calls both, the forward writing LSE as training would.
void call_pass(const Point& p, const attnbench::Options& options, const Inputs& in,
               PointState& st) {
  const attnbench::Tensors forward{in.q.data(), in.k.data(), in.v.data(), st.o.data(),
                                   p.pass == Pass::forward ? nullptr : st.lse.data()};
  const attnbench::Gradients gradients{in.d_o.data(), st.dq.data(), st.dk.data(), st.dv.data()};
  if (p.pass != Pass::backward) attnbench::attention(*p.kernel, p.shape, options, forward, *st.ws);
  if (p.pass != Pass::forward) {
    attnbench::attention_backward(*p.kernel, p.shape, options, forward, gradients, *st.ws);
  }
}

// Each backward point's oracle check, by (kernel, head dim, causal, threads): made once, before
// the first timed call of any point it covers, on a small shape whose lengths are no multiple of
// any block (testing/backward.hpp's criterion), q_len x kv_len of:
constexpr std::size_t kBackwardCheckRows = 97, kBackwardCheckKeys = 203;

const attnbench::bench::OracleCheck& backward_check(const Point& p,
                                                    const attnbench::Options& options) {
  static std::map<std::tuple<const Kernel*, std::size_t, bool, std::size_t>,
                  attnbench::bench::OracleCheck>
      checks;
  const auto key = std::make_tuple(p.kernel, p.shape.head_dim, p.causal, p.threads);
  auto it = checks.find(key);
  if (it == checks.end()) {
    const attnbench::Shape small{1, 1, 1, kBackwardCheckRows, kBackwardCheckKeys, p.shape.head_dim};
    it = checks
             .emplace(key,
                      attnbench::bench::check_backward_against_oracle(*p.kernel, small, options))
             .first;
  }
  return it->second;
}

// The progress line when it counts calls (repetitions interleaved), and what it counts a call as.
attnbench::bench::ProgressReporter* g_per_call_progress = nullptr;
double g_min_time = 0;  // --benchmark_min_time: a shorter run is the iteration search's, not kept
struct PlannedPoint {
  double repetition_s;  // predicted seconds of one repetition
  double warm_up_s;     // of the untimed first call (and a backward point's forward)
  bool one_call;        // one call per repetition (no iteration search)
};
std::map<std::string, PlannedPoint> g_planned;

void run_point(benchmark::State& state, Point p, std::string skip_reason) {
  auto skip_all = [&state](const std::string& message) {
    state.SkipWithError(message.c_str());
    for (auto _ : state) {
    }
  };
  if (!skip_reason.empty()) return skip_all("skipped: " + skip_reason);
  const attnbench::Shape& shape = p.shape;
  const bool backward = p.pass != Pass::forward;
  const std::vector<float> none;
  const Inputs in{random_tensor(shape.q_elements(), 0), random_tensor(shape.kv_elements(), 1),
                  random_tensor(shape.kv_elements(), 2),
                  backward ? random_tensor(shape.q_elements(), 3) : none};
  attnbench::Options options;
  options.causal = p.causal;
  options.threads = p.threads;
  const attnbench::bench::OracleCheck* check = backward ? &backward_check(p, options) : nullptr;
  if (check && !check->passed) return skip_all("failed: oracle check: " + check->failure);

  static attnbench::bench::PointStates states(attnbench::default_memory_budget() / 4);
  const std::string name = p.name();
  PointState* kept = states.find(name);
  const bool first_call = kept == nullptr;
  if (first_call) {  // what it will hold: its outputs, packed K and V, a naive kernel's scores
    const std::size_t q = shape.q_elements(), kv = shape.kv_elements();
    const std::size_t floats = q + 2 * kv + (backward ? 2 * q + 2 * kv : 0);
    const std::size_t scores = p.kernel->strategy == Strategy::naive
                                   ? (backward ? 2 : 1) * attnbench::naive_score_bytes(shape)
                                   : 0;
    kept = &states.make(name, floats * sizeof(float) + scores);
  }
  PointState& st = *kept;
  reset_rss_high_water();
  if (first_call) {
    st.o.assign(shape.q_elements(), 0.0f);
    if (backward) {
      st.lse.assign(shape.q_elements() / shape.head_dim, 0.0f);
      for (std::vector<float>* g : {&st.dq, &st.dk, &st.dv}) {
        g->assign(g == &st.dq ? shape.q_elements() : shape.kv_elements(), 0.0f);
      }
    }
    try {
      if (backward) {  // O and LSE for the backward, then the backward warm
        attnbench::attention(*p.kernel, shape, options,
                             {in.q.data(), in.k.data(), in.v.data(), st.o.data(), st.lse.data()},
                             *st.ws);
        st.forward_scratch = st.ws->peak_bytes();
        call_pass({p.kernel, shape, p.threads, p.causal, Pass::backward}, options, in, st);
        st.backward_scratch = st.ws->peak_bytes();
      } else {
        call_pass(p, options, in, st);
        st.forward_scratch = st.ws->peak_bytes();
      }
    } catch (const attnbench::Error& e) {  // over the naive memory budget
      states.forget(name);
      return skip_all(std::string("skipped: ") + e.what());
    }
  }
  const auto loop_start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    call_pass(p, options, in, st);
    benchmark::DoNotOptimize(st.o.data());
    benchmark::DoNotOptimize(st.dq.data());
    benchmark::ClobberMemory();
  }
  if (g_per_call_progress) {
    // Planned work done: a repetition once Google Benchmark keeps its run (one call, or a run of
    // at least the minimum time: the iteration search's shorter runs come first), and the warm-up
    // at the point's first call. A state made again after eviction is work the plan did not
    // predict: it only slows the rate the ETA extrapolates.
    static std::set<std::string> warmed;
    const PlannedPoint& plan = g_planned.at(name);
    const double loop_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
    const bool kept_run = plan.one_call || loop_s >= g_min_time;
    const bool first_ever = warmed.insert(name).second;
    g_per_call_progress->ran(
        name, (kept_run ? plan.repetition_s : 0.0) + (first_ever ? plan.warm_up_s : 0.0));
  }
  using benchmark::Counter;
  const double flops = flops_of(p);
  // Scratch: the last call's workspace peak (each entry point resets it); a training step's is
  // the larger of its two passes'.
  const std::size_t scratch = p.pass == Pass::forward_backward
                                  ? std::max(st.forward_scratch, st.backward_scratch)
                                  : st.ws->peak_bytes();
  state.counters["GFLOP/s"] = Counter(flops / 1e9, Counter::kIsIterationInvariantRate);
  state.counters["pct_peak"] =
      Counter(100.0 * flops / g_peak_flops[p.threads], Counter::kIsIterationInvariantRate);
  state.counters["scratch_bytes"] = Counter(double(scratch));
  state.counters["score_matrix_bytes"] =
      Counter(double(attnbench::naive_score_bytes(shape)));  // one head
  // The resident high-water mark, less the other points' kept states (resident throughout).
  const std::size_t others = states.others_bytes(&st), rss = rss_high_water();
  state.counters["rss_peak_bytes"] = Counter(double(rss > others ? rss - others : 0));
  state.counters["bytes_moved"] = Counter(bytes_moved(p));
  state.counters["flops_per_call"] = Counter(flops);
  if (check) state.counters["oracle_error_ratio"] = Counter(check->worst_ratio);
  if (p.pass == Pass::forward)
    attnbench::bench::add_cost_counters(state, *p.kernel, shape, options);
}

// Every benchmark's predicted seconds (from a calibration call per kernel), for skipping points
// over the budget and for the progress line's ETA.
std::map<std::string, double> g_predicted;
// The names Google Benchmark gives the matrix's runs ("<point>/iterations:1/repeats:3/real_time"),
// which its --benchmark_filter matches, so that the progress total counts what the filter keeps.
std::map<std::string, std::string> g_run_names;

// GFLOP/s of `kernel`'s forward or backward pass at n = 512, d = 64, one thread, the median of
// three calls after a warm-up: the basis of the predictions. (One call alone moved the budget's
// verdict on some points from run to run.)
double calibrate(const Kernel& kernel, Pass pass) {
  const attnbench::Shape shape{1, 1, 1, 512, 512, 64};
  std::vector<float> q(shape.q_elements(), 0.5f), o(shape.q_elements()), lse(shape.q_len);
  std::vector<float> dq(shape.q_elements()), dk(shape.kv_elements()), dv(shape.kv_elements());
  attnbench::Workspace ws;
  attnbench::Options options;
  options.threads = 1;
  const attnbench::Tensors t{q.data(), q.data(), q.data(), o.data(),
                             pass == Pass::backward ? lse.data() : nullptr};
  auto call = [&] {
    if (pass == Pass::backward) {
      attnbench::attention_backward(kernel, shape, options, t,
                                    {q.data(), dq.data(), dk.data(), dv.data()}, ws);
    } else {
      attnbench::attention(kernel, shape, options, t, ws);
    }
  };
  if (pass == Pass::backward) attnbench::attention(kernel, shape, options, t, ws);
  call();
  double seconds[3];
  for (double& s : seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  std::sort(std::begin(seconds), std::end(seconds));
  return flop_factor(pass) * forward_flops(shape, false) / seconds[1] / 1e9;
}

// The matrix window: every registry kernel over the preset's points.
void register_matrix(const Preset& preset, const std::string& preset_name,
                     std::size_t all_threads) {
  // The points: every concrete available kernel (a dispatching entry appears as the kernel it
  // resolves to) over the matrix, the tiled-only lengths, and causal points; then the shapes
  // people run, for the dispatched SIMD kernels: decoding (one query, many keys) and grouped-query
  // attention against as many full heads.
  std::vector<Point> points;
  auto add = [&](const Kernel& k, attnbench::Shape shape, bool causal) {
    points.push_back({&k, shape, 1, causal});
    if (all_threads > 1) points.push_back({&k, shape, all_threads, causal});
  };
  for (const Kernel& k : attnbench::registry()) {
    if (k.dispatches || !k.available()) continue;
    std::vector<std::pair<std::size_t, std::size_t>> nd;
    for (std::size_t d : preset.dims) {
      for (std::size_t n : preset.lengths) nd.emplace_back(n, d);
    }
    if (k.strategy == Strategy::tiled) {
      for (std::size_t d : preset.tiled_dims) {
        for (std::size_t n : preset.tiled_lengths) nd.emplace_back(n, d);
      }
    }
    const bool causal_kernel = k.backend == Backend::simd || k.backend == Backend::openblas;
    for (auto [n, d] : nd) {
      add(k, {1, 1, 1, n, n, d}, false);
      if (preset.causal && d == 128 && causal_kernel) add(k, {1, 1, 1, n, n, d}, true);
    }
  }
  for (const char* name : {"tiled/simd", "naive/simd"}) {
    const Kernel& k = attnbench::resolve(*attnbench::find_kernel(name));
    if (!k.available()) continue;
    add(k, {1, 1, 1, 1, preset.decode_keys, 128}, false);
    for (std::size_t kv_heads : {preset.gqa_heads, std::size_t{2}}) {
      add(k, {1, preset.gqa_heads, kv_heads, preset.gqa_len, preset.gqa_len, 128}, false);
    }
  }
  // The backward and the training step, for every concrete kernel with a backward pass, each
  // right after its forward twin (same kernel, shape and threads): the report divides their times,
  // and on a shared machine two points measured seconds apart drift less than two measured the
  // whole matrix apart. Those without a twin go last.
  std::vector<std::size_t> thread_counts{1};
  if (all_threads > 1) thread_counts.push_back(all_threads);
  std::vector<Point> backward;
  for (const Kernel& k : attnbench::registry()) {
    if (k.dispatches || !k.available() || !k.has_backward()) continue;
    for (std::size_t d : preset.backward_dims) {
      for (std::size_t n : preset.backward_lengths) {
        for (std::size_t t : thread_counts) {
          for (Pass pass : {Pass::backward, Pass::forward_backward}) {
            backward.push_back({&k, {1, 1, 1, n, n, d}, t, false, pass});
          }
        }
      }
    }
  }
  std::vector<Point> ordered;
  for (const Point& p : points) {
    ordered.push_back(p);
    for (auto it = backward.begin(); it != backward.end();) {
      const bool twin = it->kernel == p.kernel && it->threads == p.threads && !p.causal &&
                        it->shape.q_heads == p.shape.q_heads &&
                        it->shape.kv_heads == p.shape.kv_heads &&
                        it->shape.q_len == p.shape.q_len && it->shape.kv_len == p.shape.kv_len &&
                        it->shape.head_dim == p.shape.head_dim;
      if (twin) {
        ordered.push_back(*it);
        it = backward.erase(it);
      } else {
        ++it;
      }
    }
  }
  ordered.insert(ordered.end(), backward.begin(), backward.end());
  points = std::move(ordered);

  std::map<std::pair<const Kernel*, Pass>, double> rate;  // calibrated GFLOP/s per pass
  for (const Point& p : points) {
    for (Pass pass : {Pass::forward, Pass::backward}) {
      if (pass == Pass::backward && p.pass == Pass::forward) continue;
      if (!rate.count({p.kernel, pass})) rate[{p.kernel, pass}] = calibrate(*p.kernel, pass);
    }
  }
  const double min_time = preset.min_time;
  for (const Point& p : points) {
    const std::string name = p.name();
    // Predicted seconds of one call, assuming the calibrated rates and linear thread scaling; and
    // of the untimed forward that gives a backward point its O and LSE.
    auto seconds = [&](Pass pass) {
      return flop_factor(pass) * forward_flops(p.shape, p.causal) /
             (rate[{p.kernel, pass}] * 1e9 * double(p.threads));
    };
    const double call = p.pass == Pass::forward ? seconds(Pass::forward)
                        : p.pass == Pass::backward
                            ? seconds(Pass::backward)
                            : seconds(Pass::forward) + seconds(Pass::backward);
    const double setup = p.pass == Pass::backward ? seconds(Pass::forward) : 0.0;
    // A naive forward holds the score matrix, its backward P and dS.
    const std::size_t naive_bytes =
        (p.pass == Pass::forward ? 1 : 2) * attnbench::naive_score_bytes(p.shape);
    const bool tiled_only_length =
        std::find(preset.tiled_lengths.begin(), preset.tiled_lengths.end(), p.shape.q_len) !=
        preset.tiled_lengths.end();
    // (every SIMD ISA but SSE4.2's: a further ISA is wide without a line here)
    const bool wide_simd =
        p.kernel->backend == Backend::simd && p.kernel->isa != attnbench::Isa::sse4_2;
    const bool plain = p.kernel->backend != Backend::openblas && !wide_simd;
    const double budget = wide_simd && tiled_only_length ? preset.tiled_budget_seconds
                          : plain ? std::min(preset.budget_seconds, preset.plain_budget_seconds)
                                  : preset.budget_seconds;
    std::string skip;
    if (call > budget) {
      char why[160];
      std::snprintf(why, sizeof why,
                    "predicted %.1f s per call exceeds the %s preset's %.2f s budget", call,
                    preset_name.c_str(), budget);
      skip = why;
    } else if (p.kernel->strategy == Strategy::naive &&
               naive_bytes > attnbench::default_memory_budget()) {
      skip = p.pass == Pass::forward ? "score matrix over the naive memory budget (half of RAM)"
                                     : "P and dS over the naive memory budget (half of RAM)";
    }
    auto* b = benchmark::RegisterBenchmark(name.c_str(), run_point, p, skip);
    b->UseRealTime()->Unit(benchmark::kMillisecond)->Repetitions(preset.repetitions);
    b->ReportAggregatesOnly(true);
    // The fastest repetition beside Google Benchmark's mean, median and CV: the report's verdicts
    // compare minimums (noise only adds time to a compute-bound call).
    b->ComputeStatistics("min", attnbench::bench::fastest);
    // A long call runs one iteration per repetition; shorter ones run for --benchmark_min_time.
    if (call > min_time) b->Iterations(1);
    const double per_rep = skip.empty() ? std::max(call, min_time) : 0;
    const double warm_up = skip.empty() ? call + setup : 0;
    g_predicted[name] = per_rep * preset.repetitions + warm_up;
    g_planned[name] = {per_rep, warm_up, call > min_time};
    g_run_names[name] = name + (call > min_time ? "/iterations:1" : "") +
                        "/repeats:" + std::to_string(preset.repetitions) + "/real_time";
  }
}

}  // namespace

// Google Benchmark's own flags as its Initialize parsed them (command line, or the BENCHMARK_*
// environment variables): defined in libbenchmark 1.7.1, not declared by its public header.
namespace benchmark {
extern bool FLAGS_benchmark_list_tests;
extern bool FLAGS_benchmark_enable_random_interleaving;
}  // namespace benchmark

int main(int argc, char** argv) {
  std::string preset_name = "quick";
  bool contenders_window = false, decode_window = false, scaling_window = false;
  bool phases_window = false, constants_window = false, context_window = false;
  int repetitions = 0;
  double min_time = 0;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--preset=", 9) == 0) {
      preset_name = argv[i] + 9;
    } else if (std::strcmp(argv[i], "--contenders") == 0) {
      contenders_window = true;
    } else if (std::strcmp(argv[i], "--decode") == 0) {
      decode_window = true;
    } else if (std::strcmp(argv[i], "--scaling") == 0) {
      scaling_window = true;
    } else if (std::strcmp(argv[i], "--phases") == 0) {
      phases_window = true;
    } else if (std::strcmp(argv[i], "--constants") == 0) {
      constants_window = true;
    } else if (std::strcmp(argv[i], "--context") == 0) {
      context_window = true;
    } else if (std::strncmp(argv[i], "--benchmark_repetitions=", 24) == 0) {
      // The matrix and the scaling window set their points' own count: this overrides it.
      repetitions = std::atoi(argv[i] + 24);
      args.push_back(argv[i]);
    } else if (std::strncmp(argv[i], "--benchmark_min_time=", 21) == 0) {
      min_time = std::atof(argv[i] + 21);  // and the preset's plan (one-call points, the ETA)
      args.push_back(argv[i]);
    } else {
      args.push_back(argv[i]);
    }
  }
  Preset preset = preset_named(preset_name);
  if (repetitions > 0) preset.repetitions = repetitions;
  if (min_time > 0) preset.min_time = min_time;
  // The preset's defaults for Google Benchmark's own flags; flags given later override them.
  std::string min_time_flag = "--benchmark_min_time=" + std::to_string(preset.min_time);
  args.insert(args.begin() + 1, min_time_flag.data());
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 2;
  const bool interleaved = benchmark::FLAGS_benchmark_enable_random_interleaving;
  const bool listing = benchmark::FLAGS_benchmark_list_tests;  // names only: nothing is measured
  const std::size_t all_threads = static_cast<std::size_t>(tbb::info::default_concurrency());
  attnbench::bench::add_run_context(
      preset_name, all_threads,
      contenders_window  ? "contenders"
      : decode_window    ? "decode"
      : scaling_window   ? "scaling"
      : phases_window    ? "phases"
      : constants_window ? "constants"
      : context_window   ? "context"
                         : "matrix",
      std::to_string(kBackwardCheckRows) + "x" + std::to_string(kBackwardCheckKeys), g_peak_flops,
      g_triad_gbs, !listing);

  if (contenders_window) {
    register_contenders(preset_name, all_threads, g_peak_flops, g_predicted);
  } else if (scaling_window) {
    attnbench::bench::register_scaling(preset_name, all_threads, repetitions, g_peak_flops,
                                       g_predicted);
  } else if (phases_window) {
    attnbench::bench::register_phases(preset_name, g_predicted);
  } else if (constants_window) {
    attnbench::bench::register_constants(all_threads, 1, g_predicted);
  } else if (context_window) {
    attnbench::bench::register_context(preset_name, all_threads, g_peak_flops, g_predicted);
  } else if (decode_window) {
    attnbench::bench::register_decode(preset_name, all_threads, g_triad_gbs, g_peak_flops,
                                      g_predicted);
  } else {
    register_matrix(preset, preset_name, all_threads);
    // Readings of the machine constants among the points, when they are spread among them.
    if (interleaved) {
      attnbench::bench::register_constants(all_threads, preset.constants_readings, g_predicted,
                                           [](const std::string& name, double seconds) {
                                             if (g_per_call_progress)
                                               g_per_call_progress->ran(name, seconds);
                                           });
    }
  }
  // Points the filter drops do not count towards the progress total.
  const std::string filter = benchmark::GetBenchmarkFilter();
  if (!filter.empty() && filter != "." && filter != "all") {
    const std::regex keep(filter);
    for (auto it = g_predicted.begin(); it != g_predicted.end();) {
      const auto run = g_run_names.find(it->first);
      if (std::regex_search(run == g_run_names.end() ? it->first : run->second, keep)) {
        ++it;
      } else {
        it = g_predicted.erase(it);
      }
    }
  }
  double predicted_total = 0;  // summed after the filter: no "-0 s" left by subtracting
  for (const auto& [name, t] : g_predicted) predicted_total += t;
  std::fprintf(stderr, "attnbench_bench: preset %s, %zu points, predicted about %.0f s\n",
               preset_name.c_str(), g_predicted.size(), predicted_total);
  attnbench::bench::ProgressReporter progress(g_predicted, preset_name);
  g_min_time = preset.min_time;
  const bool matrix = !contenders_window && !decode_window && !scaling_window && !phases_window &&
                      !constants_window && !context_window;
  benchmark::AddCustomContext("repetitions_interleaved", interleaved ? "true" : "false");
  if (matrix && interleaved) g_per_call_progress = &progress;
  benchmark::RunSpecifiedBenchmarks(&progress);
  benchmark::Shutdown();
  return 0;
}
