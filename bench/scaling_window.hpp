// The benchmark's scaling window (attnbench_bench --scaling): how much faster all cores run a call
// than one, measured so that the ratio survives a noisy host. Each point times rounds of calls of
// one kernel on one problem: the 1-thread call once on each core it is pinned to in turn, and the
// all-thread call, before them or after them by turns. The speedup is the median over rounds of
// the all-thread call's speed over the 1-thread calls' mean speed (so that T cores perfectly
// shared make T, whatever their own speeds): both sides of every ratio share a
// window of milliseconds, where repetitions interleaved at random share one of seconds, long
// enough for a neighbour on the host to move one side by 30%; and the 1-thread side is every
// core's, since this host's cores run at different speeds from moment to moment (a 1-thread call
// on the faster core alone charges that to the kernel: speedup_fastest, beside it). And each
// repetition reads, before its rounds and after them, how many cores' worth of FMA throughput T
// threads pinned one to a core get from the host (ceilings.hpp, cores_now): a host may give a
// guest's virtual CPUs one core's worth between them for a while, and T threads then run at one
// core's speed whatever the kernel (docs/benchmarks.md); the report reads no verdict then.
//   scaling/<kernel>/n:N/d:D/pass:<forward|backward>/threads:T
//       counters speedup, speedup_fastest (over the round's fastest 1-thread call), efficiency
//       (speedup / T), ms_1 and ms_T (median call times), gflops_1, gflops_T, pct_peak_1 (of the
//       1-thread FMA peak), rounds, pinned (0: pinning unavailable, 1-thread calls where the OS
//       puts them), cores (the lower of the two readings of the host's cores; only when pinned).
//       The backward point times attention_backward alone, on its forward's O and LSE.
// tiled/simd as dispatched, and its avx2 kernel by name where a wider ISA dispatches (full preset).
#pragma once

#include <cstddef>
#include <map>
#include <string>

namespace attnbench::bench {

// Registers the window's points for `preset_name` ("quick" or "full") with `all_threads` cores
// (none when there is one), `repetitions` each (0: the preset's). `peak_flops` (per thread count)
// must outlive the run; `predicted` gets each point's predicted seconds, for the progress line.
void register_scaling(const std::string& preset_name, std::size_t all_threads, int repetitions,
                      const std::map<std::size_t, double>& peak_flops,
                      std::map<std::string, double>& predicted);

}  // namespace attnbench::bench
