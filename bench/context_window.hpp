// The benchmark's long-context window (attnbench_bench --context): how a sliding window buys long
// context. Each point times one forward call of the tiled SIMD kernel on one causal head of n
// query rows and n keys, either under a sliding window of w keys (each row sees at most the w keys
// ending at its own: the work grows as n w, linear in n) or under the full causal mask (n^2 / 2
// pairs, quadratic), its repetitions interleaved at random with every other point's (the study
// passes --benchmark_enable_random_interleaving), so that the ratios between lengths and between
// the two masks share one window of minutes.
//   context/<kernel>/n:N/d:D/w:<W|full>[/cap:C|/mask:bool]/threads:T
//       counters us_per_row (the call's time over its n rows), GFLOP/s (4 d FLOPs per visible
//       pair: the pairs the window or the mask leaves), pct_peak (of the measured FMA peak for T
//       threads), pairs (visible query-key pairs), scratch_bytes (the Workspace's peak: packed K
//       and V included), kv_bytes (the float32 K and V the call reads), window (w; 0 for full),
//       softcap (C; 0 for none), mask_bytes (the mask tensor's; 0 for none), scan_ms (the time one
//       thread takes to scan the tensor for the band it keeps keys in; 0 for none). At one length
//       the full causal head is also timed soft-capped (Gemma 2's C = 50): what the cap's tanh per
//       score costs; and the window given as a boolean mask tensor instead (mask:bool: the n x n
//       tensor of the same visible pairs, causal on, no window option), which the kernels read and
//       narrow their key blocks from: what a window costs as a tensor.
// The oracle check of the benchmark (oracle_check.hpp) runs on every point's kernel and mask first,
// on a few rows; a point that fails it is recorded as "failed: oracle check: ...".
#pragma once

#include <cstddef>
#include <map>
#include <string>

namespace attnbench::bench {

// Registers the window's points for `preset_name` ("quick", "standard" or "full") on 1 thread and
// `all_threads` (when more than one). `peak_flops` (per thread count) must outlive the run;
// `predicted` gets each point's predicted seconds, for the progress line.
void register_context(const std::string& preset_name, std::size_t all_threads,
                      const std::map<std::size_t, double>& peak_flops,
                      std::map<std::string, double>& predicted);

}  // namespace attnbench::bench
