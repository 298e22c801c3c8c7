// attnbench_bench --scaling: 1 thread against all, in rounds of calls (scaling_window.hpp says why
// and what each point reports).
#include "scaling_window.hpp"

#include <benchmark/benchmark.h>

#include <pthread.h>
#include <sched.h>

#include <chrono>
#include <string>
#include <vector>

#include <attnbench/attnbench.hpp>
#include "bench_inputs.hpp"
#include "ceilings.hpp"
#include "window_support.hpp"

namespace attnbench::bench {
namespace {

struct ScalingPreset {
  std::vector<std::size_t> forward_lens, forward_dims, backward_lens, backward_dims;
  bool every_isa;      // also the avx2 kernel by name where a wider ISA dispatches
  double seconds;      // rounds per repetition: at least this long ...
  std::size_t rounds;  // ... and at least this many
  int repetitions;
};

ScalingPreset scaling_preset(const std::string& name) {
  if (name == "full") {
    return {.forward_lens = {1024, 2048, 4096, 8192},
            .forward_dims = {64, 128, 256},
            .backward_lens = {1024, 2048, 4096},
            .backward_dims = {64, 128},
            .every_isa = true,
            .seconds = 1.0,
            .rounds = 9,
            .repetitions = 3};
  }
  // The backward's thread-scaling target's lengths (n = 1024 and 4096) at both head dims.
  if (name == "standard") {
    return {.forward_lens = {1024, 4096},
            .forward_dims = {64, 128},
            .backward_lens = {1024, 4096},
            .backward_dims = {64, 128},
            .every_isa = false,
            .seconds = 0.3,
            .rounds = 5,
            .repetitions = 3};
  }
  return {.forward_lens = {1024},
          .forward_dims = {64},
          .backward_lens = {1024},
          .backward_dims = {64},
          .every_isa = false,
          .seconds = 0.2,
          .rounds = 5,
          .repetitions = 2};
}

const std::map<std::size_t, double>* g_peak = nullptr;

// The reading of the host's cores (cores_now): about 0.5 ms of FMA chains a run on a 4-5 GHz
// core, 3 ms in all at T = 2. It runs before and after each repetition's rounds, not within them:
// beside the calls it moved the speedup it watches (n = 1024, d = 64: 1.71-1.85x,
// against 1.91-1.94x without it).
constexpr long kCoresSteps = 400'000;

// The calling thread's CPU affinity: pinned to one CPU for a 1-thread call, given back its whole
// set for an all-thread call (oneTBB's workers are other threads, which it leaves alone).
class Affinity {
 public:
  Affinity() {
    CPU_ZERO(&all_);
    if (pthread_getaffinity_np(pthread_self(), sizeof all_, &all_) != 0) return;
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &all_)) cpus_.push_back(c);
    }
  }
  ~Affinity() { unpin(); }
  // The CPUs 1-thread calls are pinned to in turn: the first `threads` the thread may run on, or
  // none (pinning unavailable: every 1-thread call runs where the OS puts it).
  std::vector<int> cpus(std::size_t threads) const {
    if (cpus_.size() < threads) return {};
    return {cpus_.begin(), cpus_.begin() + static_cast<std::ptrdiff_t>(threads)};
  }
  bool pin(int cpu) const {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
  }
  void unpin() const { pthread_setaffinity_np(pthread_self(), sizeof all_, &all_); }

 private:
  cpu_set_t all_;
  std::vector<int> cpus_;
};

void run_scaling(benchmark::State& state, const Kernel* kernel, std::size_t n, std::size_t d,
                 bool backward, std::size_t threads, double seconds, std::size_t min_rounds) {
  try {
    const Shape shape{1, 1, 1, n, n, d};
    const std::vector<float>& q = random_tensor(shape.q_elements(), 30);
    const std::vector<float>& k = random_tensor(shape.kv_elements(), 31);
    const std::vector<float>& v = random_tensor(shape.kv_elements(), 32);
    const std::vector<float>& d_o = random_tensor(shape.q_elements(), 33);
    std::vector<float> o(shape.q_elements()), lse(n), dq(o.size()), dk(k.size()), dv(v.size());
    const Tensors t{.q = q.data(), .k = k.data(), .v = v.data(), .o = o.data(), .lse = lse.data()};
    const Gradients g{d_o.data(), dq.data(), dk.data(), dv.data()};
    Options one, all;
    one.threads = 1;
    all.threads = threads;
    Workspace ws_one, ws_all;  // each kept warm for its thread count
    using clock = std::chrono::steady_clock;
    auto call = [&](const Options& options, Workspace& ws) {
      const auto a = clock::now();
      if (backward) {
        attention_backward(*kernel, shape, options, t, g, ws);
      } else {
        attention(*kernel, shape, options, t, ws);
      }
      benchmark::DoNotOptimize(o.data());
      benchmark::DoNotOptimize(dq.data());
      return std::chrono::duration<double>(clock::now() - a).count();
    };
    attention(*kernel, shape, one, t, ws_one);  // O and LSE for the backward; warm-up
    call(one, ws_one);
    call(all, ws_all);
    // A round: the 1-thread call once on each of the first `threads` CPUs (pinned), and the
    // all-thread call, whose place in the round moves from last to first and back.
    Affinity affinity;
    std::vector<int> cpus = affinity.cpus(threads);
    bool pinned = !cpus.empty();
    for (int cpu : cpus) pinned = pinned && affinity.pin(cpu);
    affinity.unpin();
    if (!pinned) cpus.assign(1, -1);
    auto one_call = [&](int cpu) {
      if (cpu >= 0) affinity.pin(cpu);
      const double s = call(one, ws_one);
      affinity.unpin();
      return s;
    };
    std::vector<double> t_one, t_all, ratio, ratio_fastest;
    double cores = 0;  // the lower of the readings before and after the rounds
    for (auto _ : state) {
      if (pinned) cores = cores_now(cpus, kCoresSteps);
      t_one.clear();
      t_all.clear();
      ratio.clear();
      ratio_fastest.clear();
      double spent = 0;
      for (std::size_t round = 0; round < min_rounds || spent < seconds; ++round) {
        double all_s = 0, one_speed = 0, one_min = 1e300;
        const bool all_first = round % 2 == 1;
        if (all_first) all_s = call(all, ws_all);
        for (int cpu : cpus) {
          const double s = one_call(cpu);
          t_one.push_back(s);
          one_speed += 1.0 / s;
          one_min = std::min(one_min, s);
          spent += s;
        }
        if (!all_first) all_s = call(all, ws_all);
        t_all.push_back(all_s);
        // The cores' mean speed, not their mean time: T cores that each ran the whole call at its
        // own speed, perfectly shared, make exactly T.
        ratio.push_back(1.0 / all_s / (one_speed / double(cpus.size())));
        ratio_fastest.push_back(one_min / all_s);
        spent += all_s;
      }
      if (pinned) cores = std::min(cores, cores_now(cpus, kCoresSteps));
      state.SetIterationTime(median(t_all));
    }
    const double flops =
        (backward ? 2.5 : 1.0) * 4.0 * scored_pairs(shape, false) * double(shape.head_dim);
    const double speedup = median(ratio);
    state.counters["speedup"] = speedup;
    state.counters["efficiency"] = speedup / double(threads);
    state.counters["ms_1"] = 1e3 * median(t_one);
    state.counters["ms_T"] = 1e3 * median(t_all);
    state.counters["gflops_1"] = flops / median(t_one) / 1e9;
    state.counters["gflops_T"] = flops / median(t_all) / 1e9;
    state.counters["pct_peak_1"] = 100.0 * flops / median(t_one) / g_peak->at(1);
    state.counters["speedup_fastest"] = median(ratio_fastest);
    state.counters["rounds"] = double(ratio.size());
    state.counters["pinned"] = pinned ? 1.0 : 0.0;
    if (pinned) state.counters["cores"] = cores;
  } catch (const std::exception& e) {
    skip_all(state, std::string("failed: ") + e.what());
  }
}

}  // namespace

void register_scaling(const std::string& preset_name, std::size_t all_threads, int repetitions,
                      const std::map<std::size_t, double>& peak_flops,
                      std::map<std::string, double>& predicted) {
  g_peak = &peak_flops;
  if (all_threads < 2) return;  // nothing to scale to
  ScalingPreset preset = scaling_preset(preset_name);
  if (repetitions > 0) preset.repetitions = repetitions;
  std::vector<const Kernel*> kernels{&resolve(*find_kernel("tiled/simd"))};
  const Kernel* avx2 = find_kernel("tiled/simd/avx2");
  if (preset.every_isa && avx2->available() && kernels[0] != avx2) kernels.push_back(avx2);
  for (const Kernel* kernel : kernels) {
    for (bool backward : {false, true}) {
      const auto& lens = backward ? preset.backward_lens : preset.forward_lens;
      const auto& dims = backward ? preset.backward_dims : preset.forward_dims;
      for (std::size_t d : dims) {
        for (std::size_t n : lens) {
          const std::string name = "scaling/" + std::string(kernel->name) +
                                   "/n:" + std::to_string(n) + "/d:" + std::to_string(d) +
                                   (backward ? "/pass:backward" : "/pass:forward") +
                                   "/threads:" + std::to_string(all_threads);
          auto* b = benchmark::RegisterBenchmark(name.c_str(), run_scaling, kernel, n, d, backward,
                                                 all_threads, preset.seconds, preset.rounds);
          b->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
          b->Repetitions(preset.repetitions)->ReportAggregatesOnly(true);
          // A round at 50 GFLOP/s a thread: one 1-thread call per core and one all-thread call.
          const double call = (backward ? 2.5 : 1.0) * 4.0 * double(n) * double(n) * double(d) /
                              50e9 * (double(all_threads) + 1.0 / double(all_threads));
          predicted[name] =
              std::max(preset.seconds, call * double(preset.rounds)) * preset.repetitions;
        }
      }
    }
  }
}

}  // namespace attnbench::bench
