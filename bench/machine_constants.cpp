// The cost model's machine constants (machine_constants.hpp).
#include "machine_constants.hpp"

#include <immintrin.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <attnbench/attnbench.hpp>
#include "bench_inputs.hpp"
#include "ceilings.hpp"
#include "forward_counts.hpp"
#include "kernels/common.hpp"
#include "kernels/kernel_interface.hpp"
#include "large_blocks.hpp"  // allocate_large_block
#include "packed_head.hpp"
#include "task_runner.hpp"
#include "window_support.hpp"

namespace attnbench::bench {
namespace {

using Clock = std::chrono::steady_clock;
// Results kept from the optimiser; written by several threads at once, so atomic (relaxed).
std::atomic<float> sink;
void keep(float x) { sink.store(x, std::memory_order_relaxed); }

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Best rate of `trials` timed rounds; a round repeats `once` (which returns the work it did)
// until `min_seconds` have passed, so that a short sweep is not timed alone.
template <class Once>
double best_rate(int trials, double min_seconds, Once once) {
  once();  // warm: pages touched, clocks up
  double best = 0;
  for (int t = 0; t < trials; ++t) {
    double work = 0;
    const auto t0 = Clock::now();
    double seconds;
    do {
      work += once();
    } while ((seconds = seconds_since(t0)) < min_seconds);
    best = std::max(best, work / seconds);
  }
  return best;
}

// Sums `n` floats (n a multiple of 64) with 4 independent accumulators of the widest vectors:
// loads, no stores, as the kernels' streaming of packed K and V.
__attribute__((target("avx512f"))) float read_sweep_avx512f(const float* p, std::size_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (std::size_t i = 0; i < n; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
    a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  return lanes[0];
}

__attribute__((target("avx2"))) float read_sweep_avx2(const float* p, std::size_t n) {
  __m256 a[8];
  for (__m256& x : a) x = _mm256_setzero_ps();
  for (std::size_t i = 0; i < n; i += 64) {
    for (int k = 0; k < 8; ++k) a[k] = _mm256_add_ps(a[k], _mm256_load_ps(p + i + 8 * k));
  }
  for (int k = 1; k < 8; ++k) a[0] = _mm256_add_ps(a[0], a[k]);  // every load feeds the result
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, a[0]);
  return lanes[0];
}

// Without AVX2 (no machine this study targets): plain loops, 8 independent sums.
float read_sweep_plain(const float* p, std::size_t n) {
  float a[8] = {};
  for (std::size_t i = 0; i < n; i += 8) {
    for (int k = 0; k < 8; ++k) a[k] += p[i + k];
  }
  float sum = 0;
  for (float x : a) sum += x;
  return sum;
}

float read_sweep(const float* p, std::size_t n) {
  if (__builtin_cpu_supports("avx512f")) return read_sweep_avx512f(p, n);
  if (__builtin_cpu_supports("avx2")) return read_sweep_avx2(p, n);
  return read_sweep_plain(p, n);
}

// GB/s of a read-only sweep over `bytes` (rounded down to whole 256-byte steps per thread), on
// `threads` threads each sweeping a slice of its own, in 2 MiB pages as the kernels' large blocks.
double read_bandwidth(std::size_t bytes, std::size_t threads) {
  const std::size_t n = std::max<std::size_t>(bytes / sizeof(float) / 64 / threads, 1) * 64;
  std::size_t allocated = n * threads * sizeof(float);
  std::unique_ptr<float, decltype(&std::free)> data(
      static_cast<float*>(driver::allocate_large_block(allocated)), &std::free);
  if (!data) return 0.0;
  std::fill(data.get(), data.get() + n * threads, 1.0f);
  // A sweep from a cache takes microseconds: repeat it for 20 ms. One from DRAM is long enough.
  const double min_seconds = allocated >= (std::size_t{256} << 20) ? 0.0 : 0.02;
  double best = 0;
  for (int trial = 0; trial < 3; ++trial) {
    const double rate = rate_on_threads(threads, [&](std::size_t thread) {
      const float* slice = data.get() + thread * n;
      double swept = 0;
      const auto t0 = Clock::now();
      do {
        keep(read_sweep(slice, n));
        swept += double(n * sizeof(float));
      } while (seconds_since(t0) < min_seconds);
      return swept;
    });
    best = std::max(best, rate / 1e9);
  }
  return best;
}

// Seconds of thread time one empty task of a parallel loop costs on a `threads`-thread arena.
double task_seconds(std::size_t threads) {
  tbb::task_arena arena(static_cast<int>(threads));
  constexpr std::size_t kTasks = 20000;
  std::vector<double> samples;
  for (int trial = 0; trial < 5; ++trial) {
    const auto t0 = Clock::now();
    arena.execute([&] {
      tbb::parallel_for(
          tbb::blocked_range<std::size_t>(0, kTasks, 1),
          [](const tbb::blocked_range<std::size_t>& r) { keep(float(r.begin())); },
          tbb::simple_partitioner());
    });
    samples.push_back(seconds_since(t0) * double(threads) / double(kTasks));
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

// Seconds to start a call on `threads` threads as the driver does (a driver::TaskRunner on its
// kept arena) and run one loop of `threads` empty tasks on it, the median of many calls.
double call_start_seconds(std::size_t threads) {
  Workspace ws;
  std::vector<double> samples;
  for (int call = 0; call < 201; ++call) {
    const auto t0 = Clock::now();
    driver::TaskRunner tasks(threads, ws);
    tasks.run(threads, [](std::size_t i, Workspace&) { keep(float(i)); });
    samples.push_back(seconds_since(t0));
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

// The tiled forward's phases alone (SimdTable::phases) on one block: the Br query rows and Bc keys
// its blocking gives head dim d, K and V packed (in L2, as the kernel keeps a key block). FLOP/s of
// the two products (the score and the blend variants, timed in turn), and seconds per score of the
// softmax's sweeps. With `threads` > 1, every thread runs the same on a block of its own at once,
// and the rates are per thread: what a core gets while the others compute too (their caches,
// clocks and the host's other tenants shared), the price of a compute task on a t-thread call.
struct PhaseRates {
  double products_flops;
  double softmax_seconds_per_score;
};

PhaseRates measure_phases(const kernels::KernelCode& code, const kernels::TiledPhases& phases,
                          std::size_t d, std::size_t threads) {
  const kernels::ForwardBlocking b = code.forward.blocking(d);
  const std::size_t rows = b.query_block, keys = b.key_block;
  const std::vector<float>& q = random_tensor(rows * d, 50);
  const std::vector<float>& k = random_tensor(keys * d, 51);
  const std::vector<float>& v = random_tensor(keys * d, 52);
  std::vector<std::unique_ptr<PackedHead>> problems;
  std::vector<Workspace> ws(threads);
  for (std::size_t t = 0; t < threads; ++t) {
    problems.push_back(
        std::make_unique<PackedHead>(code, q.data(), k.data(), v.data(), rows, keys, d));
  }
  auto seconds_per_call = [&](kernels::ComputeRows phase) {
    auto once = [&](std::size_t t) {
      Workspace::Scope scope(ws[t]);
      phase(problems[t]->head(), kernels::RowRange{0, rows}, ws[t]);
      keep(problems[t]->output()[0]);
    };
    // Calls per thread for ~50 ms, sized from one warm call; the best of 3 rounds, every thread
    // count alike (one thread included), so the constants of 1 and t threads compare.
    once(0);
    const auto t0 = Clock::now();
    once(0);
    const int calls = std::max(1, int(0.05 / std::max(seconds_since(t0), 1e-7)));
    double best = 0;
    for (int trial = 0; trial < 3; ++trial) {
      best = std::max(best, rate_on_threads(threads, [&](std::size_t t) {
                        for (int c = 0; c < calls; ++c) once(t);
                        return double(calls);
                      }));
    }
    return double(threads) / best;
  };
  const double products = seconds_per_call(phases.score) + seconds_per_call(phases.blend);
  const double fmas = double(rows) * double(keys) * double(d + b.padded_dim);
  return {2.0 * fmas / products, seconds_per_call(phases.softmax) / (double(rows) * double(keys))};
}

// Bytes per second of the tiled kernel's own packing of K and V (what a call without a KvCache
// does first) at d = 128 over a head of `keys` keys, packed again and again as a benchmark's calls
// do: read K and V, write the packed layout, in the cost counts' bytes (forward_counts.hpp's
// pack_bytes). Returns {bytes per call, bytes per second}.
std::pair<double, double> measure_packing(const kernels::KernelCode& code, std::size_t keys) {
  constexpr std::size_t d = 128;
  // Not random_tensor's: its cache would keep up to 2 x 64 L2s resident through every point.
  const std::vector<float> q(d, 0.5f), k(keys * d, 0.25f), v(keys * d, -0.25f);
  PackedHead head(code, q.data(), k.data(), v.data(), 1, keys, d);
  const double bytes = pack_bytes(head.code().packing, {1, 1, 1, 1, keys, d});
  return {bytes, best_rate(3, 0.05, [&] {
            head.pack();
            return bytes;
          })};
}

}  // namespace

std::vector<MachineConstant> measure_machine_constants(std::size_t all_threads) {
  std::vector<MachineConstant> out;
  const std::size_t l1 = cache_bytes(1, std::size_t{32} << 10);
  const std::size_t l2 = cache_bytes(2, std::size_t{512} << 10);
  const std::size_t l3 = cache_bytes(3, std::size_t{32} << 20);

  // The exps: softmax arguments, x - max in [-20, 0], over 8 KiB in, 8 KiB out (L1).
  constexpr std::size_t kExps = 2048;
  std::vector<float> x(kExps), y(kExps);
  for (std::size_t i = 0; i < kExps; ++i) x[i] = -20.0f * float(i) / float(kExps);
  std::vector<std::size_t> thread_counts{1};
  if (all_threads > 1) thread_counts.push_back(all_threads);
  // Per ISA of the tiled kernels (the float32 ones and the bf16-products ones): packing, and the
  // products and softmax alone per d and threads.
  auto measure_tiled = [&](const std::string& isa, const kernels::KernelCode& code,
                           const kernels::TiledPhases& phases) {
    // Packing beyond the L2, its rate by the bytes a call reads and writes: heads of K and V
    // from 4 to 64 L2s.
    for (std::size_t kv_bytes = 4 * l2; kv_bytes <= (kSanitizedBuild ? 4 : 64) * l2;
         kv_bytes *= 4) {
      const auto [bytes, rate] = measure_packing(code, kv_bytes / (2 * 128 * sizeof(float)));
      out.push_back(
          {"pack_bytes_per_s_" + isa + "_set_" + std::to_string(std::size_t(bytes)), rate, "B/s"});
    }
    const std::vector<std::size_t> dims =
        kSanitizedBuild ? std::vector<std::size_t>{64} : std::vector<std::size_t>{32, 64, 128, 256};
    for (std::size_t d : dims) {
      for (std::size_t threads : thread_counts) {
        const PhaseRates rates = measure_phases(code, phases, d, threads);
        const std::string suffix = "_" + isa + "_d" + std::to_string(d) +
                                   (threads == 1 ? "" : "_threads_" + std::to_string(threads));
        out.push_back({"products_flops" + suffix, rates.products_flops, "FLOP/s"});
        out.push_back({"softmax_s_per_score" + suffix, rates.softmax_seconds_per_score, "s"});
      }
    }
  };
  auto available = [](Products products, Isa isa) {
    for (const Kernel& k : registry()) {
      if (k.backend == Backend::simd && k.products == products && k.isa == isa && k.available())
        return true;
    }
    return false;
  };
  for (const kernels::SimdTable* table : kernels::simd_tables()) {
    if (!available(Products::f32, table->isa)) continue;
    const std::string isa(to_string(table->isa));
    const double rate = best_rate(3, 0.05, [&] {
      table->exp(x.data(), y.data(), kExps);
      keep(y[kExps / 2]);
      return double(kExps);
    });
    out.push_back({"exp_per_s_" + isa, rate, "exp/s"});
    measure_tiled(isa, table->tiled[static_cast<std::size_t>(KvType::f32)], table->phases);
  }
  for (const kernels::Bf16Table* table : kernels::bf16_tables()) {
    if (available(Products::bf16, table->isa))
      measure_tiled(std::string(to_string(table->isa)), table->tiled, table->phases);
  }
  const double scalar_exp = best_rate(3, 0.05, [&] {
    for (std::size_t i = 0; i < kExps; ++i) y[i] = kernels::scalar_exp(x[i]);
    keep(y[kExps / 2]);
    return double(kExps);
  });
  out.push_back({"exp_per_s_scalar", scalar_exp, "exp/s"});

  for (const FmaPeak& p : measure_fma_peaks(1, true)) {
    out.push_back({"fma_flops_" + p.isa, p.gflops * 1e9, "FLOP/s"});
  }

  const std::size_t memory = memory_bytes();
  const std::size_t dram =
      kSanitizedBuild ? 8 * l2 : std::min(std::max(2 * l3, std::size_t{1} << 30), memory / 8);
  const std::pair<const char*, std::size_t> levels[] = {
      {"l1", l1 / 2}, {"l2", l2 / 2}, {"l3", l3 / 4}, {"dram", dram}};
  for (auto [level, bytes] : levels) {
    out.push_back({std::string("read_gbs_") + level, read_bandwidth(bytes, 1), "GB/s"});
    out.push_back({std::string("read_set_bytes_") + level, double(bytes), "bytes"});
  }
  // The curve between L2 and DRAM, where the level a working set is read from is the machine's
  // (an L3 shared with other tenants, or a guest's reported L3 larger than what it gets), not the
  // reported sizes': sets from twice the L2 doubling up to the DRAM sweep's.
  // The same curve on all threads (the set split among them): whether a level's bandwidth adds up
  // per core (a private cache, an L3 slice per core) or is shared (DRAM), measured, not assumed.
  const std::string all = "_threads_" + std::to_string(all_threads);
  for (std::size_t bytes = 2 * l2; bytes < dram; bytes *= 2) {
    out.push_back({"read_gbs_set_" + std::to_string(bytes), read_bandwidth(bytes, 1), "GB/s"});
    if (all_threads > 1) {
      out.push_back({"read_gbs" + all + "_set_" + std::to_string(bytes),
                     read_bandwidth(bytes, all_threads), "GB/s"});
    }
  }
  if (all_threads > 1) {
    out.push_back({"read_gbs_dram" + all, read_bandwidth(dram, all_threads), "GB/s"});
  }
  out.push_back({"task_s" + all, task_seconds(all_threads), "s"});
  out.push_back({"call_start_s" + all, call_start_seconds(all_threads), "s"});
  return out;
}

}  // namespace attnbench::bench
