// The benchmark's decode window (attnbench_bench --decode): attention as inference engines run
// it, against a persistent KvCache in each storage type, next to the machine's measured triad
// bandwidth. Its families, registered with Google Benchmark:
//   decode/<kernel>/layout:<head|llama>/rows:R/kv:N/type:T/threads:t
//       R query rows per query head against N cached tokens; counters kv_bytes (K and V bytes
//       one call reads), GB/s, pct_triad (of the triad at t threads), call_us, token_us.
//   generate/<kernel>/layout:llama/start:N/tokens:G/type:T/threads:t
//       the decode loop: append one token to a cache of N, attend, repeat G times; counters
//       token_us (median step), first_us and last_us (the first and last step), append_us.
//   prefill/<kernel>/n:N/d:128/type:T/threads:t
//       fill an empty cache with N tokens and run causal attention of N rows over it: GFLOP/s,
//       pct_peak, pack_ms.
//   types/<kernel>/layout:<head|llama>/rows:1/kv:N/threads:t
//       the storage types' decode called by turns in rounds (each type's own cache, allocated and
//       filled anew for each repetition; q8_0 and q4_0 again with the query quantised), the ratios
//       taken within a round: speedup_<variant> (median over rounds of the f32 call's time over
//       the variant's), us_<variant> and gbs_<variant> (median call), rounds; the point's time is
//       the median f32 call. The llama layout at its decode lengths; both layouts beyond the L3
//       this CPU reports (standard and full presets).
//   types/<kernel>/prefill:N/d:128/threads:t
//       the prefill above in f32, f16 and bf16 by turns, as the decode types points: speedup_f16,
//       speedup_bf16, us_<type>, gflops_<type>, rounds.
//   triad/threads:t
//       the STREAM triad (ceilings.hpp) as a point of the window, GB/s: interleaved with the
//       others, the bandwidth their share of the triad is read against (the report does).
// "head" is one query head over one key/value head; "llama" a Llama-style layer, 32 query heads
// over 8 key/value heads; d = 128 in both.
#pragma once

#include <cstddef>
#include <map>
#include <string>

namespace attnbench::bench {

// Registers the window's points for `preset_name` ("quick" or "full") with `all_threads` cores.
// `triad_gbs` and `peak_flops` (per thread count) must outlive the run; `predicted` gets each
// point's predicted seconds, for the progress line.
void register_decode(const std::string& preset_name, std::size_t all_threads,
                     const std::map<std::size_t, double>& triad_gbs,
                     const std::map<std::size_t, double>& peak_flops,
                     std::map<std::string, double>& predicted);

}  // namespace attnbench::bench
