// `attnbench ring`: ring attention over MPI (ring/), run under mpirun; compiled into the CLI when
// CMake finds MPI (ATTNBENCH_RING).
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <optional>
#include <string>

namespace attnbench::cli {

struct RingArgs {
  // .npy inputs and outputs: Q, K, V in; O out; with --do, the backward too (dQ, dK, dV out)
  std::string q, k, v, out, d_o, dq, dk, dv;
  // or --bench: random inputs of this shape, timed
  bool bench = false;
  std::size_t n = 16384, heads = 1, kv_heads = 1, head_dim = 128, repeats = 5;
  bool backward = false;
  std::string json;
  // both
  std::string kernel;
  std::size_t threads = 1;
  bool causal = false;
  std::optional<float> scale, softcap;
};

CLI::App* add_ring_command(CLI::App& app, RingArgs& args);
// Runs the parsed command: initialises MPI, runs, finalises. Returns the exit code (2 on bad input
// on any rank, its message printed once, by rank 0).
int ring(const RingArgs& args, int& argc, char**& argv);

}  // namespace attnbench::cli
