// `attnbench ring` (ring_command.hpp): .npy inputs sliced per rank and the output gathered on rank
// 0, or --bench's timed random inputs, each step's compute and wait reported per rank.
#include "cli/ring_command.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <vector>

#include <attnbench/attnbench.hpp>
#include <attnbench/ring.hpp>
#include "npy/npy.hpp"

namespace attnbench::cli {
namespace {

int rank_here() {
  int r;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
std::size_t ranks_here() {
  int p;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  return std::size_t(p);
}

// Rank r's rows of a whole tensor (ring::local_rows, this communicator).
std::vector<float> local_rows(const std::vector<float>& all, std::size_t heads, std::size_t n,
                              std::size_t width, std::size_t r, bool causal) {
  return ring::local_rows(all.data(), heads, n, width, ranks_here(), r, causal);
}

// Every rank's rows, back in their places on rank 0 (empty elsewhere).
std::vector<float> gather_rows(const std::vector<float>& local, std::size_t heads, std::size_t n,
                               std::size_t width, bool causal) {
  const std::size_t p = ranks_here();
  std::vector<int> counts(p), offsets(p);
  for (std::size_t r = 0; r < p; ++r)
    counts[r] = int(heads * ring::local_len(n, p, r, causal) * width);
  for (std::size_t r = 1; r < p; ++r) offsets[r] = offsets[r - 1] + counts[r - 1];
  std::vector<float> all(rank_here() == 0 ? heads * n * width : 0), whole;
  MPI_Gatherv(local.data(), int(local.size()), MPI_FLOAT, all.data(), counts.data(), offsets.data(),
              MPI_FLOAT, 0, MPI_COMM_WORLD);
  if (rank_here() != 0) return whole;
  whole.resize(all.size());
  for (std::size_t r = 0; r < p; ++r)
    ring::place_rows(all.data() + offsets[r], heads, n, width, p, r, causal, whole.data());
  return whole;
}

const Kernel& pick_kernel(const RingArgs& args, bool backward) {
  if (args.kernel.empty()) {
    for (const Kernel& k : registry())
      if (k.available() && (!backward || k.has_backward())) return k;
  }
  const Kernel* k = find_kernel(args.kernel);
  if (k == nullptr) throw Error("--kernel", args.kernel, "no such kernel (see `attnbench list`)");
  return *k;
}

Options options_of(const RingArgs& args) {
  Options o;
  o.causal = args.causal;
  o.scale = args.scale;
  o.softcap = args.softcap;
  o.threads = args.threads;
  return o;
}

int run_files(const RingArgs& args) {
  const bool backward = !args.d_o.empty();
  npy::Array q, k, v, d_o;
  Shape shape;
  const Kernel* kernel = nullptr;
  ring::on_every_rank(MPI_COMM_WORLD, [&] {
    if (backward && (args.dq.empty() || args.dk.empty() || args.dv.empty()))
      throw Error("--do", args.d_o, "the backward also needs --dq, --dk and --dv");
    q = npy::read(args.q, {.who = "Q"});
    k = npy::read(args.k, {.who = "K"});
    v = npy::read(args.v, {.who = "V"});
    shape = shape_from_dims(q.shape, k.shape, v.shape, {"--q", "--k", "--v"});
    if (shape.q_len != shape.kv_len) {
      throw Error("--q", std::to_string(shape.q_len) + " rows",
                  "ring attention is self-attention: Q needs as many rows as K (" +
                      std::to_string(shape.kv_len) + ")");
    }
    if (backward) {
      d_o = npy::read(args.d_o, {.who = "dO"});
      if (d_o.shape != q.shape) throw Error("--do", args.d_o, "dO must have Q's shape");
    }
    kernel = &pick_kernel(args, backward);
  });
  const std::size_t n = shape.q_len, d = shape.head_dim, qh = shape.batch * shape.q_heads,
                    kvh = shape.batch * shape.kv_heads;
  const std::size_t r = std::size_t(rank_here());
  const bool causal = args.causal;
  std::vector<float> lq = local_rows(q.data, qh, n, d, r, causal),
                     lk = local_rows(k.data, kvh, n, d, r, causal),
                     lv = local_rows(v.data, kvh, n, d, r, causal), lo(lq.size()),
                     lse(lq.size() / d);
  const ring::RingShape rs{shape.batch, shape.q_heads, shape.kv_heads, n, d};
  Workspace ws;
  const Options options = options_of(args);
  const Tensors forward{lq.data(), lk.data(), lv.data(), lo.data(), lse.data()};
  const Kernel& ran = ring::ring_attention(MPI_COMM_WORLD, *kernel, rs, options, forward, ws);
  std::vector<float> o = gather_rows(lo, qh, n, d, causal);
  std::vector<float> dq, dk, dv;
  if (backward) {
    std::vector<float> g = local_rows(d_o.data, qh, n, d, r, causal), ldq(lq.size()),
                       ldk(lk.size()), ldv(lv.size());
    ring::ring_attention_backward(MPI_COMM_WORLD, *kernel, rs, options, forward,
                                  Gradients{g.data(), ldq.data(), ldk.data(), ldv.data()}, ws);
    dq = gather_rows(ldq, qh, n, d, causal);
    dk = gather_rows(ldk, kvh, n, d, causal);
    dv = gather_rows(ldv, kvh, n, d, causal);
  }
  // Rank 0 writes; its failure (an unwritable path) is every rank's exit code.
  ring::on_every_rank(MPI_COMM_WORLD, [&] {
    if (rank_here() != 0) return;
    npy::write(args.out, q.shape, o);
    if (backward) {
      const npy::Output files[] = {
          {args.dq, q.shape, dq}, {args.dk, k.shape, dk}, {args.dv, v.shape, dv}};
      npy::write_all(files);
    }
  });
  if (rank_here() == 0) {
    std::printf("ring: %zu ranks x %zu threads, %s, n %zu, d %zu%s: wrote %s%s\n", ranks_here(),
                args.threads, std::string(ran.name).c_str(), n, d, causal ? ", causal" : "",
                args.out.c_str(), backward ? " and the gradients" : "");
  }
  return 0;
}

// --bench: each repetition's time (the slowest rank's), each step's compute and wait (the slowest
// rank's), and each rank's compute summed over the steps; a line per repetition on rank 0, and the
// same in --json.
int run_bench(const RingArgs& args) {
  const std::size_t p = ranks_here(), r = std::size_t(rank_here());
  const Kernel* kernel = nullptr;
  ring::on_every_rank(MPI_COMM_WORLD, [&] {
    if (args.n == 0) throw Error("--n", "0", "the sequence needs at least one position");
    if (args.repeats == 0) throw Error("--repeats", "0", "at least one");
    kernel = &pick_kernel(args, args.backward);
  });
  const std::size_t n = args.n, d = args.head_dim, local = ring::local_len(n, p, r, args.causal);
  std::mt19937 rng(unsigned(1234 + r));
  std::normal_distribution<float> normal;
  auto random = [&](std::size_t count) {
    std::vector<float> x(count);
    for (float& e : x) e = normal(rng);
    return x;
  };
  std::vector<float> q = random(args.heads * local * d), k = random(args.kv_heads * local * d),
                     v = random(args.kv_heads * local * d), o(q.size()), lse(q.size() / d),
                     g = random(q.size()), dq(q.size()), dk(k.size()), dv(v.size());
  const ring::RingShape rs{1, args.heads, args.kv_heads, n, d};
  const Options options = options_of(args);
  const Tensors forward{q.data(), k.data(), v.data(), o.data(), lse.data()};
  Workspace ws;
  // A first forward warms up and says which kernel runs (a dispatching entry resolved).
  const Kernel& ran = ring::ring_attention(MPI_COMM_WORLD, *kernel, rs, options, forward, ws);
  const std::string pass = args.backward ? "backward" : "forward", name(ran.name);
  std::FILE* json = nullptr;
  if (r == 0 && !args.json.empty()) {
    json = std::fopen(args.json.c_str(), "w");
    if (json == nullptr) std::fprintf(stderr, "attnbench: cannot write %s\n", args.json.c_str());
  }
  if (json != nullptr) {
    std::fprintf(json,
                 "{\"ranks\": %zu, \"threads\": %zu, \"n\": %zu, \"d\": %zu, \"heads\": %zu, "
                 "\"kv_heads\": %zu, \"causal\": %s, \"pass\": \"%s\", \"kernel\": \"%s\", "
                 "\"repetitions\": [",
                 p, args.threads, n, d, args.heads, args.kv_heads, args.causal ? "true" : "false",
                 pass.c_str(), name.c_str());
  }
  auto list = [&](const std::vector<double>& x) {
    for (std::size_t s = 0; s < x.size(); ++s) std::fprintf(json, "%s%.9g", s ? ", " : "", x[s]);
  };
  for (std::size_t rep = 0; rep < args.repeats; ++rep) {
    ring::RingTimings t;
    MPI_Barrier(MPI_COMM_WORLD);
    if (args.backward) {
      ring::ring_attention_backward(MPI_COMM_WORLD, *kernel, rs, options, forward,
                                    Gradients{g.data(), dq.data(), dk.data(), dv.data()}, ws, &t);
    } else {
      ring::ring_attention(MPI_COMM_WORLD, *kernel, rs, options, forward, ws, &t);
    }
    double compute = 0;
    for (double c : t.compute) compute += c;
    double total = 0;
    MPI_Reduce(&t.total, &total, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    std::vector<double> rank_compute(p), step_compute(p), step_wait(p);
    MPI_Gather(&compute, 1, MPI_DOUBLE, rank_compute.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Reduce(t.compute.data(), step_compute.data(), int(p), MPI_DOUBLE, MPI_MAX, 0,
               MPI_COMM_WORLD);
    MPI_Reduce(t.wait.data(), step_wait.data(), int(p), MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (r != 0) continue;
    const double busiest = *std::max_element(rank_compute.begin(), rank_compute.end());
    const double idlest = *std::min_element(rank_compute.begin(), rank_compute.end());
    const double pairs = args.causal ? double(n) * double(n + 1) / 2 : double(n) * double(n);
    const double flops = 4.0 * double(d) * double(args.heads) * pairs * (args.backward ? 2.5 : 1.0);
    std::printf(
        "ring %s (%s): %zu ranks x %zu threads, n %zu, d %zu%s: %.2f ms (%.1f GFLOP/s), "
        "busiest/idlest rank %.3f; steps (compute/wait ms):",
        pass.c_str(), name.c_str(), p, args.threads, n, d, args.causal ? ", causal" : "",
        total * 1e3, flops / total * 1e-9, idlest > 0 ? busiest / idlest : 0.0);
    for (std::size_t s = 0; s < p; ++s)
      std::printf(" %.2f/%.2f", step_compute[s] * 1e3, step_wait[s] * 1e3);
    std::printf("\n");
    if (json != nullptr) {
      std::fprintf(json, "%s{\"seconds\": %.9g, \"flops\": %.9g, \"compute\": [", rep ? ", " : "",
                   total, flops);
      list(step_compute);
      std::fprintf(json, "], \"wait\": [");
      list(step_wait);
      std::fprintf(json, "], \"rank_compute\": [");
      list(rank_compute);
      std::fprintf(json, "]}");
    }
  }
  if (json != nullptr) {
    std::fprintf(json, "]}\n");
    std::fclose(json);
  }
  return 0;
}

}  // namespace

CLI::App* add_ring_command(CLI::App& app, RingArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "ring",
      "ring attention over MPI, under `mpirun -np P`: the sequence split over the ranks (causal: "
      "the zigzag layout), K and V passed around the ring (docs/ring.md)");
  cmd->add_option("--q", args.q, "queries, float32 (n, d), (h, n, d) or (b, h, n, d)");
  cmd->add_option("--k", args.k, "keys, float32, n rows as Q; may have fewer heads");
  cmd->add_option("--v", args.v, "values, float32, the shape of K");
  cmd->add_option("--out", args.out, "output .npy, the shape of Q (written by rank 0)");
  cmd->add_option("--do", args.d_o, "the output's gradient dO: also run the backward");
  cmd->add_option("--dq", args.dq, "output .npy: dQ (with --do)");
  cmd->add_option("--dk", args.dk, "output .npy: dK (with --do)");
  cmd->add_option("--dv", args.dv, "output .npy: dV (with --do)");
  cmd->add_flag("--bench", args.bench, "time random inputs instead (--n, --heads, --head-dim)");
  cmd->add_option("--n", args.n, "--bench: sequence length")->capture_default_str();
  cmd->add_option("--heads", args.heads, "--bench: query heads")->capture_default_str();
  cmd->add_option("--kv-heads", args.kv_heads, "--bench: key/value heads")->capture_default_str();
  cmd->add_option("--head-dim", args.head_dim, "--bench: head dim")->capture_default_str();
  cmd->add_option("--repeats", args.repeats, "--bench: timed repetitions")->capture_default_str();
  cmd->add_flag("--backward", args.backward, "--bench: time the backward");
  cmd->add_option("--json", args.json, "--bench: also write the timings to this JSON file");
  cmd->add_option("--kernel", args.kernel, "kernel name (default: the first available)");
  cmd->add_option("--threads", args.threads, "threads per rank")->capture_default_str();
  cmd->add_flag("--causal", args.causal, "causal mask");
  cmd->add_option("--scale", args.scale, "score scale (default 1/sqrt(d))");
  cmd->add_option("--softcap", args.softcap, "logit soft-cap");
  return cmd;
}

int ring(const RingArgs& args, int& argc, char**& argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  try {
    if (!args.bench && (args.q.empty() || args.k.empty() || args.v.empty() || args.out.empty())) {
      ring::on_every_rank(MPI_COMM_WORLD, [] {
        throw Error("--q/--k/--v/--out", "missing", "give the .npy inputs and output, or --bench");
      });
    }
    status = args.bench ? run_bench(args) : run_files(args);
  } catch (const std::exception& e) {  // every rank has the same error: rank 0 says it
    if (rank_here() == 0) std::fprintf(stderr, "attnbench: %s\n", e.what());
    status = 2;
  }
  MPI_Finalize();
  return status;
}

}  // namespace attnbench::cli
