// attnbench: the command line.
//   attnbench list                                  every registry kernel, and whether it runs here
//   attnbench run --q Q.npy --k K.npy --v V.npy --out O.npy [--kernel NAME] [--threads N]
//                 [--causal] [--scale S] [--memory-budget BYTES]
//   attnbench demo NAME|all [--json FILE]           the attention module's experiments (src/demo/)
// Any bad input: one line on stderr naming what and where, exit code 2, no output file.
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/info.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>

#include "attnbench.hpp"
#include "demo/demos.hpp"
#include "npy/npy.hpp"

namespace {

using attnbench::Shape;

constexpr int kBadInput = 2;

// A bad input found by the CLI itself (shapes that do not agree, unknown kernel).
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string shape_string(const std::vector<std::size_t>& dims) {
  std::string s = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + (dims.size() == 1 ? ",)" : ")");
}

// (len, dim), (heads, len, dim) or (batch, heads, len, dim) as {batch, heads, len, dim}.
std::array<std::size_t, 4> as_bhnd(const std::string& name, const std::vector<std::size_t>& dims) {
  if (dims.size() < 2 || dims.size() > 4) {
    throw UsageError(name + ": shape " + shape_string(dims) + " has " +
                     std::to_string(dims.size()) +
                     " dimensions; expected (n, d), (h, n, d) or (b, h, n, d)");
  }
  std::array<std::size_t, 4> bhnd{1, 1, 1, 1};
  std::copy(dims.begin(), dims.end(), bhnd.end() - dims.size());
  return bhnd;
}

Shape shape_of(const std::string& q_name, const attnbench::npy::Array& q, const std::string& k_name,
               const attnbench::npy::Array& k, const std::string& v_name,
               const attnbench::npy::Array& v) {
  if (k.shape != v.shape) {
    throw UsageError(v_name + ": shape " + shape_string(v.shape) + " differs from " + k_name +
                     " shape " + shape_string(k.shape) + "; K and V must have the same shape");
  }
  if (k.shape.size() != q.shape.size()) {
    throw UsageError(k_name + ": shape " + shape_string(k.shape) + " has " +
                     std::to_string(k.shape.size()) + " dimensions but " + q_name + " shape " +
                     shape_string(q.shape) + " has " + std::to_string(q.shape.size()));
  }
  const auto [qb, qh, qn, qd] = as_bhnd(q_name, q.shape);
  const auto [kb, kh, kn, kd] = as_bhnd(k_name, k.shape);
  auto mismatch = [&](const char* what, std::size_t kv_value, std::size_t q_value) {
    return UsageError(k_name + ": " + what + " " + std::to_string(kv_value) + " (shape " +
                      shape_string(k.shape) + ") does not match " + q_name + "'s " +
                      std::to_string(q_value) + " (shape " + shape_string(q.shape) + ")");
  };
  if (kd != qd) throw mismatch("head dim", kd, qd);
  if (kb != qb) throw mismatch("batch", kb, qb);
  if (qh % kh != 0) {
    throw UsageError(k_name + ": " + std::to_string(kh) + " key/value heads (shape " +
                     shape_string(k.shape) + ") do not divide " + q_name + "'s " +
                     std::to_string(qh) + " query heads");
  }
  return Shape{qb, qh, kh, qn, kn, qd};
}

int list_kernels() {
  for (const attnbench::Kernel& k : attnbench::registry()) {
    const attnbench::Kernel& runs = attnbench::resolve(k);
    std::string status = runs.available() ? "available" : "unavailable on this CPU";
    if (&runs != &k) status += " (runs " + std::string(runs.name) + ")";
    std::printf("%-24s %s\n", std::string(k.name).c_str(), status.c_str());
  }
  return 0;
}

struct RunArgs {
  std::string q, k, v, out, kernel;
  std::size_t threads = 0;
  bool causal = false;
  std::optional<float> scale;
  std::size_t memory_budget = 0;
};

int run(const RunArgs& args) {
  const attnbench::Kernel* kernel = &attnbench::default_kernel();
  if (!args.kernel.empty()) {
    kernel = attnbench::find_kernel(args.kernel);
    if (kernel == nullptr) {
      throw UsageError("--kernel " + args.kernel +
                       ": unknown kernel; `attnbench list` shows the kernels");
    }
  }
  const auto q = attnbench::npy::read(args.q);
  const auto k = attnbench::npy::read(args.k);
  const auto v = attnbench::npy::read(args.v);
  const Shape shape = shape_of(args.q, q, args.k, k, args.v, v);
  attnbench::Options options;
  options.causal = args.causal;
  options.scale = args.scale;
  options.threads = args.threads;
  options.memory_budget_bytes = args.memory_budget;

  // The CLI owns its process, so it may lift TBB's default cap of one thread per core when asked
  // for more (the library itself never changes process-wide TBB settings).
  const std::size_t threads = attnbench::worker_threads(options);
  tbb::global_control allow(tbb::global_control::max_allowed_parallelism,
                            std::max<std::size_t>(threads, tbb::info::default_concurrency()));

  std::vector<float> o(shape.q_elements());
  attnbench::Workspace ws;
  const auto start = std::chrono::steady_clock::now();
  kernel = &attnbench::attention(*kernel, shape, options,
                                 {q.data.data(), k.data.data(), v.data.data(), o.data()}, ws);
  const std::chrono::duration<double, std::milli> elapsed =
      std::chrono::steady_clock::now() - start;
  attnbench::npy::write(args.out, q.shape, o);

  std::printf(
      "kernel %s, threads %zu, shape b=%zu q_heads=%zu kv_heads=%zu q_len=%zu kv_len=%zu "
      "d=%zu%s, compute %.3f ms, scratch %zu bytes, wrote %s\n",
      std::string(kernel->name).c_str(), threads, shape.batch, shape.q_heads, shape.kv_heads,
      shape.q_len, shape.kv_len, shape.head_dim, args.causal ? " causal" : "", elapsed.count(),
      ws.peak_bytes(), args.out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"attnbench: scaled dot-product attention on the CPU, O = softmax(Q K^T * scale) V"};
  app.require_subcommand(1);
  CLI::App* list = app.add_subcommand("list", "print every kernel and whether this CPU runs it");

  RunArgs args;
  CLI::App* run_cmd = app.add_subcommand("run", "compute attention on .npy inputs");
  run_cmd->add_option("--q", args.q, "queries, float32 (n, d), (h, n, d) or (b, h, n, d)")
      ->required();
  run_cmd->add_option("--k", args.k, "keys, float32, same rank as Q; may have fewer heads")
      ->required();
  run_cmd->add_option("--v", args.v, "values, float32, the shape of K")->required();
  run_cmd->add_option("--out", args.out, "output .npy, the shape of Q")->required();
  run_cmd->add_option("--kernel", args.kernel,
                      "kernel name (default: the first available in `attnbench list`)");
  run_cmd->add_option("--threads", args.threads, "worker threads; 0 = every core")
      ->default_val(0)
      ->check(CLI::Range(0, 1024));
  run_cmd->add_flag("--causal", args.causal, "bottom-right causal mask");
  run_cmd->add_option("--scale", args.scale, "score scale (default 1/sqrt(d))");
  run_cmd->add_option("--memory-budget", args.memory_budget,
                      "largest naive score matrix in bytes (default: half of RAM)");

  std::string demo_name, demo_json;
  std::string demo_choices;  // from the demos' own list, so a new demo appears in --help
  for (std::string_view name : attnbench::demo::names()) demo_choices.append(name).append(", ");
  demo_choices.replace(demo_choices.size() - 2, 2, " or all");
  CLI::App* demo =
      app.add_subcommand("demo", "run one of the attention module's experiments, or all");
  demo->add_option("name", demo_name, demo_choices)->required();
  demo->add_option("--json", demo_json, "also write every demo's numbers to this JSON file");

  try {
    app.parse(argc, argv);
    if (list->parsed()) return list_kernels();
    if (demo->parsed()) return attnbench::demo::run(demo_name, demo_json, stdout);
    return run(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "attnbench: %s (see --help)\n", e.what());
    return kBadInput;
  } catch (const attnbench::npy::Error& e) {
    std::fprintf(stderr, "attnbench: %s\n", e.what());
    return kBadInput;
  } catch (const attnbench::Error& e) {
    std::fprintf(stderr, "attnbench: %s\n", e.what());
    return kBadInput;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "attnbench: %s\n", e.what());
    return kBadInput;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "attnbench: out of memory\n");
    return 1;
  }
}
