// attnbench_bench --constants: the machine constants measured again (constants_window.hpp).
#include "constants_window.hpp"

#include <benchmark/benchmark.h>

#include <functional>
#include <string>
#include <vector>

#include "machine_constants.hpp"
#include "window_support.hpp"

namespace attnbench::bench {
namespace {

constexpr double kReadingSeconds = 35.0;  // about what one reading takes on 2 cores

void run_constants(benchmark::State& state, const std::string& name, std::size_t all_threads,
                   const std::function<void(const std::string&, double)>& ran) {
  try {
    std::vector<MachineConstant> constants;
    for (auto _ : state) constants = measure_machine_constants(all_threads);
    for (const MachineConstant& c : constants) state.counters[c.key] = c.value;
  } catch (const std::exception& e) {
    skip_all(state, std::string("failed: ") + e.what());
  }
  if (ran) ran(name, kReadingSeconds);
}

}  // namespace

void register_constants(std::size_t all_threads, int repetitions,
                        std::map<std::string, double>& predicted,
                        std::function<void(const std::string&, double)> ran) {
  const std::string name = "constants/threads:" + std::to_string(all_threads);
  auto* b = benchmark::RegisterBenchmark(name.c_str(), run_constants, name, all_threads, ran);
  b->Iterations(1)->Repetitions(repetitions)->UseRealTime()->Unit(benchmark::kSecond);
  b->ReportAggregatesOnly(
      false);  // every reading, whatever the run's flag: the model takes the fastest
  predicted[name] = kReadingSeconds * repetitions;
}

}  // namespace attnbench::bench
