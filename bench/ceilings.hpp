// The machine's own ceilings, measured: fp32 FMA peak and STREAM-triad memory bandwidth, each on
// one thread and on several. Every GFLOP/s figure of the study is read against them.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace attnbench::bench {

// A sanitizer build's timings mean nothing (every access checked): there the ceilings and the
// machine constants, measured at the start of every benchmark run, take short runs over a few L2s
// instead of many L3s, so that bench_test runs the benchmark's code under ASan in CI's time
// (docs/testing.md).
#ifdef ATTNBENCH_SANITIZED_BUILD
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif

struct FmaPeak {
  double gflops;    // fp32 FLOP/s (an FMA counts 2) / 1e9, best of the repetitions
  std::string isa;  // the widest vector ISA that reached it ("avx512f", "avx2+fma", "sse")
};

// Every thread runs independent FMA chains on registers only: no memory traffic. The best of the
// vector ISAs this CPU has.
FmaPeak measure_fma_peak(std::size_t threads);
// The same per ISA, each its best of the repetitions: "scalar" (a multiply and an add per step,
// as the scalar kernels compute; when `with_scalar`), then "avx2+fma" and "avx512f" where the CPU
// has them.
std::vector<FmaPeak> measure_fma_peaks(std::size_t threads, bool with_scalar);

// The bfloat16 product peak: register-only vdpbf16ps chains (AVX512_BF16), a product and its add
// 2 FLOPs, as a bf16-products kernel's FLOPs count; {0, "none"} where the CPU lacks the ISA.
FmaPeak measure_bf16_peak(std::size_t threads);
// The same on AMX tiles (TDPBF16PS, 16,384 FLOPs each): {0, "none"} where the CPU or the OS
// does not offer them.
FmaPeak measure_amx_peak(std::size_t threads);

// Runs work(thread) on `threads` threads released together (each warmed up by one untimed run
// first); returns the sum of their results over the seconds until the last one finished. With
// `cpus`, thread t runs pinned to cpus[t] (as many as threads).
double rate_on_threads(std::size_t threads, const std::function<double(std::size_t)>& work,
                       const std::vector<int>& cpus = {});

// How many cores' worth of FMA throughput the host gives threads pinned one to each of `cpus` at
// this moment: the widest ISA's register-only chains, `steps` steps a thread, all at once against
// each alone (the mean of their rates): T + 1 runs of `steps`, each after an untimed one, about
// 3 ms at T = 2 and 400000 steps; taken beside another measurement's rounds, not among them. A
// shared host may give a guest's virtual CPUs one core's worth between them for a while: the
// scaling window saw two threads run at one core's speed for half a minute, each alone at full
// speed (docs/benchmarks.md), and a thread-scaling ratio measured then says nothing of the
// kernel. The reading sees virtual CPUs sharing a core or time-sliced on one; a quota enforced
// in periods of ~100 ms it sees only when a reading falls into a throttled stretch.
double cores_now(const std::vector<int>& cpus, long steps);

// The peak's rate at this moment, for a share read beside one call (attnbench_time): the chains
// of measure_fma_peak's widest ISA, or of measure_bf16_peak's (Probe::bf16) or measure_amx_peak's
// (Probe::amx, a sixteenth of the steps), `steps` steps on each of
// `threads` threads (1: on the calling thread, no thread started), in GFLOP/s. About 1 ms at 600000
// steps on one AVX-512 core. A host shared with other guests moves a core's clock and share
// between seconds (a probe read 175-227 GFLOP/s within minutes on the Emerald Rapids guest), so a
// share of a peak read minutes before can be off by a fifth either way.
enum class Probe { fma, bf16, amx };
double fma_rate_now(std::size_t threads, long steps, Probe probe = Probe::fma);

// STREAM triad a = b + s c over arrays far larger than the last-level cache; bytes counted as
// STREAM does (3 x 4 bytes per element), best of the repetitions, GB/s = 1e9 bytes/s.
double measure_triad_bandwidth(std::size_t threads);

}  // namespace attnbench::bench
