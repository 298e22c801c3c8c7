// Machine ceilings: FMA peak from register-only FMA chains, bandwidth from a STREAM triad.
#include "ceilings.hpp"

#include <attnbench/registry.hpp>

#include "kernels/amx_tiles.hpp"

#include <immintrin.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace attnbench::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Independent accumulator chains per thread. Zen 3 has 2 FMA pipes with a 4-cycle latency, so 8
// chains keep both busy; 10 leave slack, and with the two constant operands fit AVX2's 16
// registers without spilling.
constexpr int kChains = 10;
constexpr long kIterations = kSanitizedBuild ? 1'000'000 : 20'000'000;
volatile float sink;

__attribute__((target("avx2,fma"))) double fma_chains_avx2(long iterations) {
  __m256 acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm256_set1_ps(1.0f + 0.01f * k);
  const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
  for (long i = 0; i < iterations; ++i) {
    for (int k = 0; k < kChains; ++k) acc[k] = _mm256_fmadd_ps(acc[k], x, y);
  }
  float sum = 0, lanes[8];
  for (int k = 0; k < kChains; ++k) {
    _mm256_storeu_ps(lanes, acc[k]);
    sum += lanes[0];
  }
  sink = sum;                                     // keeps the chains live
  return 2.0 * 8 * kChains * double(iterations);  // FLOPs: an FMA is 2 per lane
}

__attribute__((target("avx512f"))) double fma_chains_avx512f(long iterations) {
  __m512 acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm512_set1_ps(1.0f + 0.01f * k);
  const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
  for (long i = 0; i < iterations; ++i) {
    for (int k = 0; k < kChains; ++k) acc[k] = _mm512_fmadd_ps(acc[k], x, y);
  }
  float sum = 0;
  for (int k = 0; k < kChains; ++k) sum += _mm512_reduce_add_ps(acc[k]);
  sink = sum;
  return 2.0 * 16 * kChains * double(iterations);
}

// vdpbf16ps: per lane two bfloat16 products added to a float32 accumulator, 4 FLOPs a lane.
// Its latency is not the FMA's on every core (and both may be 2 per cycle): 16 chains.
constexpr int kBf16Chains = 16;
__attribute__((target("avx512f,avx512bw,avx512bf16"))) double bf16_chains_avx512(long iterations) {
  __m512 acc[kBf16Chains];
  for (int k = 0; k < kBf16Chains; ++k) acc[k] = _mm512_set1_ps(1.0f + 0.01f * k);
  const __m512bh x = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.999f), _mm512_set1_ps(1e-3f));
  const __m512bh y = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-7f), _mm512_set1_ps(-1e-7f));
  for (long i = 0; i < iterations; ++i) {
    for (int k = 0; k < kBf16Chains; ++k) acc[k] = _mm512_dpbf16_ps(acc[k], x, y);
  }
  float sum = 0;
  for (int k = 0; k < kBf16Chains; ++k) sum += _mm512_reduce_add_ps(acc[k]);
  sink = sum;
  return 4.0 * 16 * kBf16Chains * double(iterations);
}

// TDPBF16PS: a 16 x 16 tile of float32 sums += a 16 x 32 bfloat16 tile times a 32 x 16 one,
// 16,384 FLOPs; four independent sums (tiles 4 to 7) from two A and two B tiles, loaded once.
// The tile state is the process's after cpu_supports(Isa::amxbf16) asked Linux for it.
__attribute__((target("amx-tile,amx-bf16"))) double amx_chains(long iterations) {
  const kernels::AmxTileConfig config(8);
  alignas(64) std::uint16_t values[16 * 32];
  for (std::size_t i = 0; i < 16 * 32; ++i) values[i] = i % 2 ? 0x3A83 : 0xBA83;  // +-1e-3
  _tile_loadconfig(&config);
  _tile_loadd(0, values, 64);
  _tile_loadd(1, values, 64);
  _tile_loadd(2, values, 64);
  _tile_loadd(3, values, 64);
  _tile_zero(4);
  _tile_zero(5);
  _tile_zero(6);
  _tile_zero(7);
  for (long i = 0; i < iterations; ++i) {
    _tile_dpbf16ps(4, 0, 2);
    _tile_dpbf16ps(5, 0, 3);
    _tile_dpbf16ps(6, 1, 2);
    _tile_dpbf16ps(7, 1, 3);
  }
  alignas(64) float sums[16 * 16];
  _tile_stored(4, sums, 64);
  _tile_release();
  sink = sums[0];
  return 4.0 * 2 * 16 * 16 * 32 * double(iterations);
}

// The scalar kernels' arithmetic: a multiply and an add per step (they are built for baseline
// x86-64, without FMA), kChains independent chains, compiled as they are without vectorisation
// (which would fold the chains into vector operations).
__attribute__((optimize("no-tree-vectorize", "no-tree-slp-vectorize"))) double fma_chains_scalar(
    long iterations) {
  float acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = 1.0f + 0.01f * k;
  const float x = 0.999999f, y = 1e-7f;
  for (long i = 0; i < iterations; ++i) {
    for (int k = 0; k < kChains; ++k) acc[k] = acc[k] * x + y;
  }
  float sum = 0;
  for (int k = 0; k < kChains; ++k) sum += acc[k];
  sink = sum;
  return 2.0 * kChains * double(iterations);
}

}  // namespace

// Runs `work` on `threads` threads released together; returns the sum of their results divided
// by the time until the last one finished. Each thread first runs `work` once untimed and waits
// for the others: new threads may start on one core until the scheduler spreads them, and a timed
// round of a few tens of milliseconds would count that wait. (One study run here measured a
// two-thread peak 12 % under the usual 233 GFLOP/s, so its kernels read above 100 % of it.)
double rate_on_threads(std::size_t threads, const std::function<double(std::size_t)>& work,
                       const std::vector<int>& cpus) {
  std::vector<double> result(threads);
  std::vector<Clock::time_point> end(threads);
  Clock::time_point begin;  // set once every thread has warmed up, just before their release
  std::barrier start(static_cast<std::ptrdiff_t>(threads),
                     [&]() noexcept { begin = Clock::now(); });
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      if (t < cpus.size()) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpus[t], &one);
        pthread_setaffinity_np(pthread_self(), sizeof one, &one);
      }
      work(t);
      start.arrive_and_wait();
      result[t] = work(t);
      end[t] = Clock::now();
    });
  }
  for (auto& th : pool) th.join();
  double total = 0;
  for (double r : result) total += r;
  const double seconds =
      std::chrono::duration<double>(*std::max_element(end.begin(), end.end()) - begin).count();
  return total / seconds;
}

std::vector<FmaPeak> measure_fma_peaks(std::size_t threads, bool with_scalar) {
  std::vector<FmaPeak> peaks;
  struct Variant {
    const char* isa;
    bool usable;
    double (*chains)(long);
  };
  const Variant variants[] = {
      {"scalar", true, fma_chains_scalar},
      {"avx2+fma", __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"),
       fma_chains_avx2},
      {"avx512f", bool(__builtin_cpu_supports("avx512f")), fma_chains_avx512f}};
  for (const Variant& v : variants) {
    if (!v.usable || (!with_scalar && v.chains == fma_chains_scalar)) continue;
    v.chains(kIterations / 20);  // warm up: clocks ramp, pages of code load
    FmaPeak best{0.0, v.isa};
    for (int rep = 0; rep < 3; ++rep) {
      const double flops =
          rate_on_threads(threads, [&](std::size_t) { return v.chains(kIterations); });
      best.gflops = std::max(best.gflops, flops / 1e9);
    }
    peaks.push_back(best);
  }
  return peaks;
}

double cores_now(const std::vector<int>& cpus, long steps) {
  double (*chains)(long) = fma_chains_scalar;
  if (__builtin_cpu_supports("avx512f")) {
    chains = fma_chains_avx512f;
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    chains = fma_chains_avx2;
  }
  auto work = [&](std::size_t) { return chains(steps); };
  double alone = 0;
  for (int cpu : cpus) alone += rate_on_threads(1, work, {cpu}) / double(cpus.size());
  return rate_on_threads(cpus.size(), work, cpus) / alone;
}

double fma_rate_now(std::size_t threads, long steps, Probe probe) {
  double (*chains)(long) = fma_chains_scalar;
  if (probe == Probe::amx) {
    if (!cpu_supports(Isa::amxbf16)) return 0.0;
    chains = amx_chains;
    steps /= 16;
  } else if (probe == Probe::bf16) {
    if (!__builtin_cpu_supports("avx512bf16") || !__builtin_cpu_supports("avx512bw")) return 0.0;
    chains = bf16_chains_avx512;
  } else if (__builtin_cpu_supports("avx512f")) {
    chains = fma_chains_avx512f;
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    chains = fma_chains_avx2;
  }
  if (threads > 1)
    return rate_on_threads(threads, [&](std::size_t) { return chains(steps); }) / 1e9;
  const auto begin = Clock::now();
  const double flops = chains(steps);
  return flops / std::chrono::duration<double>(Clock::now() - begin).count() / 1e9;
}

FmaPeak measure_fma_peak(std::size_t threads) {
  FmaPeak best{0.0, "none"};
  for (const FmaPeak& p : measure_fma_peaks(threads, false)) {
    if (p.gflops > best.gflops) best = p;
  }
  return best;
}

namespace {

// The best of 3 rounds of `chains(iterations)` on every thread, after a warm-up of a tenth.
FmaPeak best_of_rounds(std::size_t threads, double (*chains)(long), long iterations,
                       std::string isa) {
  chains(iterations / 10);
  FmaPeak best{0.0, std::move(isa)};
  for (int rep = 0; rep < 3; ++rep) {
    const double flops = rate_on_threads(threads, [&](std::size_t) { return chains(iterations); });
    best.gflops = std::max(best.gflops, flops / 1e9);
  }
  return best;
}

}  // namespace

FmaPeak measure_bf16_peak(std::size_t threads) {
  if (!__builtin_cpu_supports("avx512bf16") || !__builtin_cpu_supports("avx512bw")) {
    return {0.0, "none"};
  }
  return best_of_rounds(threads, bf16_chains_avx512, kIterations / 2, "avx512bf16");
}

FmaPeak measure_amx_peak(std::size_t threads) {
  if (!cpu_supports(Isa::amxbf16)) return {0.0, "none"};
  return best_of_rounds(threads, amx_chains, kIterations / 40, "amxbf16");
}

double measure_triad_bandwidth(std::size_t threads) {
  // 3 arrays of 32 Mi floats (384 MiB): twelve times a 32 MiB L3.
  constexpr std::size_t n = std::size_t{1} << (kSanitizedBuild ? 20 : 25);
  std::unique_ptr<float[]> a(new float[n]), b(new float[n]), c(new float[n]);
  tbb::task_arena arena(static_cast<int>(threads));
  auto triad = [&](float s) {
    arena.execute([&] {
      tbb::parallel_for(
          tbb::blocked_range<std::size_t>(0, n, n / threads / 4),
          [&](const tbb::blocked_range<std::size_t>& r) {
            for (std::size_t i = r.begin(); i < r.end(); ++i) a[i] = b[i] + s * c[i];
          },
          tbb::static_partitioner());
    });
  };
  arena.execute([&] {  // first touch by the threads that will use the pages
    tbb::parallel_for(
        tbb::blocked_range<std::size_t>(0, n, n / threads / 4),
        [&](const tbb::blocked_range<std::size_t>& r) {
          for (std::size_t i = r.begin(); i < r.end(); ++i) a[i] = b[i] = c[i] = 1.0f;
        },
        tbb::static_partitioner());
  });
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = Clock::now();
    triad(0.5f + 0.1f * float(rep));
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, 3.0 * sizeof(float) * double(n) / seconds / 1e9);
  }
  return best;
}

}  // namespace attnbench::bench
