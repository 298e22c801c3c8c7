// The machine's own ceilings, measured: fp32 FMA peak and STREAM-triad memory bandwidth, each on
// one thread and on several. Every GFLOP/s figure of the study is read against them.
#pragma once

#include <cstddef>
#include <string>

namespace attnbench::bench {

struct FmaPeak {
  double gflops;    // fp32 FLOP/s (an FMA counts 2) / 1e9, best of the repetitions
  std::string isa;  // the widest vector ISA that reached it ("avx512f", "avx2+fma", "sse")
};

// Every thread runs independent FMA chains on registers only: no memory traffic.
FmaPeak measure_fma_peak(std::size_t threads);

// STREAM triad a = b + s c over arrays far larger than the last-level cache; bytes counted as
// STREAM does (3 x 4 bytes per element), best of the repetitions, GB/s = 1e9 bytes/s.
double measure_triad_bandwidth(std::size_t threads);

}  // namespace attnbench::bench
