// attnbench_time: a plain timing loop over registry kernels, for quick measurements before and
// beside the Google Benchmark suite. Per point: warm-up calls for at least 0.2 s, then `--reps`
// timed calls on the same buffers, each between two short probes of the peak (fma_rate_now);
// prints the median, min and max, GFLOP/s from the median with FLOPs = 4 x (scored query-key
// pairs) x d (2 for Q K^T, 2 for P V), and each call's share of the faster probe beside it: the
// median share and the best.
//   attnbench_time [--kernel REGEX] [--n 256,1024] [--d 64,128] [--threads 1] [--reps 5] [--causal]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <regex>
#include <vector>

#include <attnbench/attnbench.hpp>
#include "ceilings.hpp"

int main(int argc, char** argv) {
  CLI::App app{"time registry kernels: median of repeated calls on reused buffers"};
  std::string pattern = ".*";
  std::vector<std::size_t> lengths{256, 1024}, dims{64, 128};
  std::size_t threads = 1, reps = 5;
  bool causal = false;
  app.add_option("--kernel", pattern, "regex over kernel names");
  app.add_option("--n", lengths, "sequence lengths (q_len = kv_len)")->delimiter(',');
  app.add_option("--d", dims, "head dims")->delimiter(',');
  app.add_option("--threads", threads, "worker threads (0 = every core)");
  app.add_option("--reps", reps, "timed repetitions per point")->check(CLI::Range(1, 1000));
  app.add_flag("--causal", causal, "causal mask");
  CLI11_PARSE(app, argc, argv);
  const std::regex wanted(pattern);

  attnbench::Options run_options;
  run_options.threads = threads;
  run_options.causal = causal;
  const std::size_t workers = attnbench::worker_threads(run_options);
  const attnbench::bench::FmaPeak peak = attnbench::bench::measure_fma_peak(workers);
  std::printf("# measured fp32 FMA peak on %zu thread(s): %.1f GFLOP/s (%s)\n", workers,
              peak.gflops, peak.isa.c_str());
  const attnbench::bench::FmaPeak bf16_peak = attnbench::bench::measure_bf16_peak(workers);
  if (bf16_peak.gflops > 0) {
    std::printf(
        "# measured bf16 product peak on %zu thread(s): %.1f GFLOP/s (%s); a bf16 "
        "kernel's %%peak is of its probes\n",
        workers, bf16_peak.gflops, bf16_peak.isa.c_str());
  }
  const attnbench::bench::FmaPeak amx_peak = attnbench::bench::measure_amx_peak(workers);
  if (amx_peak.gflops > 0) {
    std::printf(
        "# measured AMX bf16 tile peak on %zu thread(s): %.1f GFLOP/s; an AMX kernel's "
        "%%peak is of its probes\n",
        workers, amx_peak.gflops);
  }
  std::printf("%-22s %6s %4s %3s %10s %10s %10s %8s %6s %6s %12s\n", "kernel", "n", "d", "thr",
              "median_ms", "min_ms", "max_ms", "GFLOP/s", "%peak", "best%", "scratch_B");
  // About 0.5 ms of the peak's chains on each side of a call (320 FLOPs a step on AVX-512).
  constexpr long kProbeSteps = 300'000;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  for (std::size_t d : dims) {
    for (std::size_t n : lengths) {
      const attnbench::Shape shape{1, 1, 1, n, n, d};
      std::vector<float> q(shape.q_elements()), k(shape.kv_elements()), v(shape.kv_elements()),
          o(shape.q_elements());
      for (auto* t : {&q, &k, &v}) std::generate(t->begin(), t->end(), [&] { return normal(rng); });
      const attnbench::Options& options = run_options;
      for (const attnbench::Kernel& kernel : attnbench::registry()) {
        if (!kernel.available() || !std::regex_search(std::string(kernel.name), wanted)) continue;
        attnbench::Workspace ws;
        using attnbench::bench::Probe;
        const Probe probe = kernel.isa == attnbench::Isa::amxbf16          ? Probe::amx
                            : kernel.products == attnbench::Products::bf16 ? Probe::bf16
                                                                           : Probe::fma;
        const double flops = 4.0 * attnbench::scored_pairs(shape, causal) * double(d);
        std::vector<double> ms, shares;
        auto call = [&] {
          const auto start = std::chrono::steady_clock::now();
          attnbench::attention(kernel, shape, options, {q.data(), k.data(), v.data(), o.data()},
                               ws);
          return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
        };
        try {
          // NOTE: warm-up for 0.2 s, not one call: a process's first multithreaded calls can run
          // on the calling thread alone until oneTBB's worker joins the arena (26-82 ms in 4 of 12
          // process starts on the Zen 5 guest; docs/kernels.md, "Threads").
          for (double warm = 0; warm < 200.0;) warm += call();
          for (std::size_t r = 0; r < reps; ++r) {
            const double before = attnbench::bench::fma_rate_now(workers, kProbeSteps, probe);
            ms.push_back(call());
            const double after = attnbench::bench::fma_rate_now(workers, kProbeSteps, probe);
            // noise only slows a probe: the faster one is the nearer reading of the peak
            shares.push_back(flops / (ms.back() * 1e6) / std::max(before, after));
          }
        } catch (const attnbench::Error& e) {
          std::printf("%-22s %6zu %4zu skipped: %s\n", std::string(kernel.name).c_str(), n, d,
                      e.what());
          continue;
        }
        std::sort(ms.begin(), ms.end());
        std::sort(shares.begin(), shares.end());
        const double median = ms[ms.size() / 2];
        std::printf("%-22s %6zu %4zu %3zu %10.3f %10.3f %10.3f %8.2f %6.1f %6.1f %12zu\n",
                    std::string(kernel.name).c_str(), n, d, attnbench::worker_threads(options),
                    median, ms.front(), ms.back(), flops / (median * 1e6),
                    100 * shares[shares.size() / 2], 100 * shares.back(), ws.peak_bytes());
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
