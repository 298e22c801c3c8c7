// attnbench_bench --phases: a tiled SIMD kernel's phases timed alone, in rounds
// (phases_window.hpp).
#include "phases_window.hpp"

#include <benchmark/benchmark.h>

#include <chrono>
#include <string>
#include <vector>

#include <attnbench/attnbench.hpp>
#include "bench_inputs.hpp"
#include "kernels/kernel_interface.hpp"
#include "packed_head.hpp"
#include "window_support.hpp"

namespace attnbench::bench {
namespace {

struct PhasesPreset {
  std::vector<std::size_t> lengths, dims;
  double seconds;      // rounds per repetition: at least this long ...
  std::size_t rounds;  // ... and at least this many
  int repetitions;
};

PhasesPreset phases_preset(const std::string& name) {
  if (name == "full") {
    return {.lengths = {1024, 4096},
            .dims = {64, 128, 256},
            .seconds = 1.0,
            .rounds = 7,
            .repetitions = 3};
  }
  if (name == "standard") {
    return {
        .lengths = {1024, 4096}, .dims = {64, 128}, .seconds = 0.3, .rounds = 5, .repetitions = 2};
  }
  return {.lengths = {2048}, .dims = {64, 128}, .seconds = 0.2, .rounds = 5, .repetitions = 2};
}

constexpr const char* kPhaseNames[] = {"all", "score", "softmax", "blend", "pack"};
constexpr std::size_t kPhaseCount = std::size(kPhaseNames);

// A tiled SIMD kernel's forward code and its phase variants: float32's SimdTable, or a
// bf16-products kernel's Bf16Table.
struct PhaseCode {
  const kernels::KernelCode* code = nullptr;
  kernels::TiledPhases phases{};
};
PhaseCode code_of(const Kernel& kernel) {
  if (kernel.products == attnbench::Products::bf16) {
    for (const kernels::Bf16Table* table : kernels::bf16_tables()) {
      if (table->isa == kernel.isa) return {&table->tiled, table->phases};
    }
    return {};
  }
  for (const kernels::SimdTable* table : kernels::simd_tables()) {
    if (table->isa == kernel.isa)
      return {&table->tiled[static_cast<std::size_t>(KvType::f32)], table->phases};
  }
  return {};
}

void run_phases(benchmark::State& state, const Kernel* kernel, std::size_t n, std::size_t d,
                double seconds, std::size_t min_rounds) {
  try {
    const PhaseCode code = code_of(*kernel);
    const Shape shape{1, 1, 1, n, n, d};
    PackedHead problem(*code.code, random_tensor(shape.q_elements(), 40).data(),
                       random_tensor(shape.kv_elements(), 41).data(),
                       random_tensor(shape.kv_elements(), 42).data(), n, n, d);
    Workspace ws;
    const kernels::ComputeRows rows[] = {problem.code().forward.rows, code.phases.score,
                                         code.phases.softmax, code.phases.blend};
    using clock = std::chrono::steady_clock;
    auto call = [&](std::size_t phase) {
      const auto a = clock::now();
      if (phase == kPhaseCount - 1) {
        problem.pack();
      } else {
        Workspace::Scope scope(ws);
        rows[phase](problem.head(), kernels::RowRange{0, n}, ws);
      }
      benchmark::DoNotOptimize(problem.output());
      return std::chrono::duration<double>(clock::now() - a).count();
    };
    for (std::size_t p = 0; p < kPhaseCount; ++p) call(p);  // warm
    std::vector<double> times[kPhaseCount], shares[kPhaseCount];
    for (auto _ : state) {
      for (auto& t : times) t.clear();
      for (auto& s : shares) s.clear();
      double spent = 0;
      for (std::size_t round = 0; round < min_rounds || spent < seconds; ++round) {
        double t[kPhaseCount];
        for (std::size_t i = 0; i < kPhaseCount; ++i) {
          const std::size_t p = (i + round) % kPhaseCount;  // each phase first in turn
          t[p] = call(p);
          spent += t[p];
        }
        for (std::size_t p = 0; p < kPhaseCount; ++p) {
          times[p].push_back(t[p]);
          shares[p].push_back(t[p] / t[0]);
        }
      }
      state.SetIterationTime(median(times[0]));
    }
    for (std::size_t p = 0; p < kPhaseCount; ++p) {
      state.counters[std::string("ms_") + kPhaseNames[p]] = 1e3 * median(times[p]);
      state.counters[std::string("share_") + kPhaseNames[p]] = median(shares[p]);
    }
    state.counters["rounds"] = double(times[0].size());
  } catch (const std::exception& e) {
    skip_all(state, std::string("failed: ") + e.what());
  }
}

}  // namespace

void register_phases(const std::string& preset_name, std::map<std::string, double>& predicted) {
  const PhasesPreset preset = phases_preset(preset_name);
  for (const Kernel& kernel : registry()) {
    if (kernel.dispatches || kernel.strategy != Strategy::tiled ||
        kernel.backend != Backend::simd || !kernel.available())
      continue;
    if (code_of(kernel).code == nullptr) continue;
    for (std::size_t d : preset.dims) {
      for (std::size_t n : preset.lengths) {
        const std::string name = "phases/" + std::string(kernel.name) + "/n:" + std::to_string(n) +
                                 "/d:" + std::to_string(d) + "/threads:1";
        auto* b = benchmark::RegisterBenchmark(name.c_str(), run_phases, &kernel, n, d,
                                               preset.seconds, preset.rounds);
        b->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
        b->Repetitions(preset.repetitions)->ReportAggregatesOnly(true);
        // A round at 50 GFLOP/s: the whole call, and its phases about as long again.
        const double call = 2.0 * 4.0 * double(n) * double(n) * double(d) / 50e9;
        predicted[name] =
            std::max(preset.seconds, call * double(preset.rounds)) * preset.repetitions;
      }
    }
  }
}

}  // namespace attnbench::bench
