// What the benchmark matrix measures: its presets (lengths, head dims, budgets, repetitions), a
// point (kernel, shape, threads, causal, pass) with its name, and the FLOPs and compulsory bytes
// the report divides a point's time by.
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <attnbench/attnbench.hpp>
#include "kernels/kernel_interface.hpp"

namespace attnbench::bench {

struct Preset {
  std::vector<std::size_t> lengths;        // every kernel
  std::vector<std::size_t> tiled_lengths;  // tiled kernels only: the memory curve stays flat
  std::vector<std::size_t> dims;
  std::vector<std::size_t> tiled_dims;  // head dims of the tiled-only lengths
  bool causal;                          // also causal points (d = 128, SIMD and baseline)
  double budget_seconds;                // longest predicted single call of a point
  int repetitions;
  double min_time;                 // seconds per repetition of a short point
  std::size_t decode_keys;         // keys of the one-query decoding point (d = 128)
  std::size_t gqa_heads, gqa_len;  // GQA points: this many query heads over 2 and over
                                   // as many key/value heads, q_len = kv_len = gqa_len
  // Backward and forward+backward points, every kernel with a backward pass (not causal): at
  // lengths the forward also has, so the report can divide one time by the other.
  std::vector<std::size_t> backward_lengths;
  std::vector<std::size_t> backward_dims;
  // The per-call budget of the AVX2 and AVX-512 tiled kernels at the tiled-only lengths, whose
  // calls are long because the curve they draw must reach far (is throughput flat in n?).
  double tiled_budget_seconds;
  // The per-call budget of the plain kernels (scalar, auto-vectorised, SSE4.2): their curves
  // stop at a shorter n, where their calls would take most of the study's time.
  double plain_budget_seconds;
  // Readings of the cost model's machine constants (constants_window.hpp) the matrix takes among
  // its points when their repetitions are interleaved: samples of the same minutes the points saw.
  int constants_readings;
};

// The presets, by name: quick (CI, a few minutes on 2 cores), standard (the study: every window and
// every report section in about 20 minutes on 2 cores), full (the long curves, a workstation's
// hour). Each window has its own points per preset (decode_window.cpp, scaling_window.cpp, ...);
// this function is the one that rejects an unknown name, before any window registers.
inline Preset preset_named(const std::string& name) {
  if (name == "quick") {
    return {.lengths = {128, 512, 2048},
            .tiled_lengths = {8192},
            .dims = {64, 128},
            .tiled_dims = {64},
            .causal = true,
            .budget_seconds = 0.5,
            .repetitions = 3,
            .min_time = 0.05,
            .decode_keys = 8192,
            .gqa_heads = 8,
            .gqa_len = 512,
            .backward_lengths = {128, 512, 2048},
            .backward_dims = {64, 128},
            .tiled_budget_seconds = 0.5,
            .plain_budget_seconds = 0.5,
            .constants_readings = 1};
  }
  // The report's targets at their own points: tiled/simd curves to n = 16384 at d = 64 and 128
  // (flat in n from 2048 on?), the backward's at n = 1024 and 4096, every kernel to n = 4096 where
  // its calls stay short; the plain kernels (scalar, autovec, SSE4.2) stop early (small budget).
  if (name == "standard") {
    return {.lengths = {128, 256, 512, 1024, 2048, 4096},
            .tiled_lengths = {8192, 16384},
            .dims = {64, 128},
            .tiled_dims = {64, 128},
            .causal = true,
            .budget_seconds = 1.0,
            .repetitions = 3,
            .min_time = 0.05,
            .decode_keys = 16384,
            .gqa_heads = 8,
            .gqa_len = 1024,
            .backward_lengths = {512, 1024, 2048, 4096},
            .backward_dims = {64, 128},
            .tiled_budget_seconds = 4.0,
            .plain_budget_seconds = 0.15,
            .constants_readings = 2};
  }
  if (name == "full") {
    return {.lengths = {128, 256, 512, 1024, 2048, 4096, 8192, 16384},
            .tiled_lengths = {32768, 65536},
            .dims = {32, 64, 128, 256},
            .tiled_dims = {64, 128},
            .causal = true,
            .budget_seconds = 6.0,
            .repetitions = 3,
            .min_time = 0.1,
            .decode_keys = 32768,
            .gqa_heads = 8,
            .gqa_len = 2048,
            .backward_lengths = {1024, 2048, 4096, 8192, 16384},
            .backward_dims = {64, 128},
            .tiled_budget_seconds = 45.0,
            .plain_budget_seconds = 2.0,
            .constants_readings = 3};
  }
  std::fprintf(stderr, "attnbench_bench: --preset=%s: unknown preset (quick, standard or full)\n",
               name.c_str());
  std::exit(2);
}

// What a point times: attention(), attention_backward(), or both in a row (a training step).
enum class Pass { forward, backward, forward_backward };

// FLOPs of a pass as multiples of the forward's 4 x pairs x d, FlashAttention's convention: the
// backward makes five matrix products of the forward's size (S = Q K^T again, dP = dO V^T,
// dV = P^T dO, dQ = dS K, dK = dS^T Q) against the forward's two, 2.5 times the work.
inline double flop_factor(Pass pass) {
  switch (pass) {
    case Pass::forward: return 1.0;
    case Pass::backward: return 2.5;
    case Pass::forward_backward: return 3.5;
  }
  return 1.0;
}

struct Point {
  const Kernel* kernel;
  attnbench::Shape shape;
  std::size_t threads;
  bool causal;
  Pass pass = Pass::forward;

  // The matrix points are one square head: `n:`; other shapes spell out every size.
  std::string name() const {
    const attnbench::Shape& s = shape;
    std::string size = s.q_len == s.kv_len && s.q_heads == 1 && s.kv_heads == 1
                           ? "/n:" + std::to_string(s.q_len)
                           : "/q:" + std::to_string(s.q_len) + "/kv:" + std::to_string(s.kv_len);
    size += "/d:" + std::to_string(s.head_dim);
    if (s.q_heads != 1 || s.kv_heads != 1) {
      size += "/heads:" + std::to_string(s.q_heads) + "/kv_heads:" + std::to_string(s.kv_heads);
    }
    // A forward point's name is what it has always been, so older JSON parses the same.
    const char* suffix = pass == Pass::backward           ? "/pass:backward"
                         : pass == Pass::forward_backward ? "/pass:forward+backward"
                                                          : "";
    return std::string(kernel->name) + size + "/threads:" + std::to_string(threads) +
           "/causal:" + std::to_string(int(causal)) + suffix;
  }
};

inline double forward_flops(const attnbench::Shape& shape, bool causal) {
  return 4.0 * attnbench::scored_pairs(shape, causal) * double(shape.head_dim);
}

inline double flops_of(const Point& p) {
  return flop_factor(p.pass) * forward_flops(p.shape, p.causal);
}

// Compulsory memory traffic of one call, the roofline's x axis. Forward: Q, K, V read and O
// written once; a naive kernel also writes its score matrix, reads and rewrites it to normalise,
// and reads it again to blend (4 sweeps of the scored pairs). Backward: Q, K, V, O, dO and LSE
// read, dQ, dK and dV written once; a naive kernel also writes P and dS and reads each back for
// dV and dK (4 sweeps). Forward+backward: both.
inline double bytes_moved(const Point& p) {
  const double q = double(p.shape.q_elements()), kv = double(p.shape.kv_elements());
  const double rows = q / double(p.shape.head_dim);
  const double sweeps = p.kernel->strategy == Strategy::naive
                            ? 4 * 4.0 * attnbench::scored_pairs(p.shape, p.causal)
                            : 0.0;
  const double forward = 4.0 * (2 * q + 2 * kv) + sweeps;
  const double backward = 4.0 * (4 * q + 4 * kv + rows) + sweeps;
  switch (p.pass) {
    case Pass::forward: return forward;
    case Pass::backward: return backward;
    case Pass::forward_backward:
      return forward + 4.0 * rows + backward;  // the forward also writes LSE
  }
  return forward;
}

}  // namespace attnbench::bench
