// attnbench_bench --constants: the machine constants measured again (constants_window.hpp).
#include "constants_window.hpp"

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "machine_constants.hpp"
#include "window_support.hpp"

namespace attnbench::bench {
namespace {

void run_constants(benchmark::State& state, std::size_t all_threads) {
  try {
    std::vector<MachineConstant> constants;
    for (auto _ : state) constants = measure_machine_constants(all_threads);
    for (const MachineConstant& c : constants) state.counters[c.key] = c.value;
  } catch (const std::exception& e) {
    skip_all(state, std::string("failed: ") + e.what());
  }
}

}  // namespace

void register_constants(std::size_t all_threads, std::map<std::string, double>& predicted) {
  const std::string name = "constants/threads:" + std::to_string(all_threads);
  auto* b = benchmark::RegisterBenchmark(name.c_str(), run_constants, all_threads);
  b->Iterations(1)->Repetitions(1)->UseRealTime()->Unit(benchmark::kSecond);
  predicted[name] = 40.0;  // about what the matrix window's measurement takes on 2 cores
}

}  // namespace attnbench::bench
