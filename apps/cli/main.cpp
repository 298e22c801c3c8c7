// attnbench: the command line.
//   attnbench list                                  every registry kernel, whether it has a
//                                                   backward pass, the K/V types it stores and
//                                                   whether it runs here
//   attnbench run --q Q.npy --k K.npy --v V.npy --out O.npy [--kernel NAME] [--threads N]
//                 [--causal] [--alignment bottom_right|top_left] [--window W]
//                 [--window-right W] [--scale S] [--softcap C] [--alibi] [--mask M.npy]
//                 [--memory-budget BYTES] [--kv-dtype f32|f16|bf16|q8_0|q4_0] [--quantise-query]
//                 [--out-dtype f32|bf16]
//   attnbench backward --q Q.npy --k K.npy --v V.npy --do dO.npy --dq dQ.npy --dk dK.npy
//                 --dv dV.npy [--kernel NAME] [--threads N] [--causal] [--alignment A]
//                 [--window W] [--window-right W] [--scale S] [--softcap C] [--alibi]
//                 [--mask M.npy] [--memory-budget BYTES]
//                 [--kv-dtype f32]
//                                                   the kernel's forward (O, LSE), then its
//                                                   backward
//   mpirun -np P attnbench ring --q Q.npy --k K.npy --v V.npy --out O.npy [--causal] [--threads N]
//                 [--do dO.npy --dq dQ.npy --dk dK.npy --dv dV.npy]   (built with MPI: ring/)
//   mpirun -np P attnbench ring --bench [--n N] [--head-dim D] [--causal] [--backward]
//   attnbench demo NAME|all [--json FILE] [--quick] the attention module's experiments (apps/demo/)
// Q and dO are float32 or bfloat16 .npy files (np.save of an ml_dtypes.bfloat16 array, descr
// '<V2'); K and V float32, float16 or bfloat16 (each read exactly into float32); a mask bool or
// float32, broadcasting to (batch, q_heads, q_len, kv_len) as NumPy's rules do. O is written
// float32, or bfloat16 ('<V2', rounded to nearest even) with --out-dtype bf16. Any bad input: one
// line on stderr naming what and where, exit code 2, no output file.
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/info.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <attnbench/attnbench.hpp>
#include "cli/version.hpp"
#include "demo/demos.hpp"
#include "npy/npy.hpp"
#ifdef ATTNBENCH_RING
#include "cli/ring_command.hpp"
#endif

namespace {

using attnbench::Shape;

constexpr int kBadInput = 2;

// A bad input found by the CLI itself (shapes that do not agree, unknown kernel).
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "2, 3, 4"
std::string joined(const std::vector<std::size_t>& values) {
  std::string s;
  for (std::size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s;
}

std::string shape_string(const std::vector<std::size_t>& dims) {
  return "(" + joined(dims) + (dims.size() == 1 ? ",)" : ")");
}

// "V.npy: shape (6, 8) differs from K.npy shape (5, 8); K and V must have the same shape".
void require_same_shape(const std::string& name, const attnbench::npy::Array& a,
                        const std::string& other_name, const attnbench::npy::Array& other,
                        const char* rule) {
  if (a.shape != other.shape) {
    throw UsageError(name + ": shape " + shape_string(a.shape) + " differs from " + other_name +
                     " shape " + shape_string(other.shape) + "; " + rule);
  }
}

using attnbench::kAllKvTypes;

// "f32,f16,bf16": the --kv-dtype values `kernel` takes (Kernel::stores), "-" for none.
std::string stored_types(const attnbench::Kernel& kernel) {
  std::string types;
  for (attnbench::KvType type : kAllKvTypes) {
    if (kernel.stores(type)) types.append(types.empty() ? "" : ",").append(to_string(type));
  }
  return types.empty() ? "-" : types;
}

int list_kernels() {
  std::printf("%-24s %-9s %-13s %s\n", "kernel", "backward", "kv-dtype", "status");
  for (const attnbench::Kernel& k : attnbench::registry()) {
    const attnbench::Kernel& runs = attnbench::resolve(k);
    std::string status = runs.available() ? "available" : "unavailable on this CPU";
    if (&runs != &k) status += " (runs " + std::string(runs.name) + ")";
    std::printf("%-24s %-9s %-13s %s\n", std::string(k.name).c_str(),
                k.has_backward() ? "yes" : "no", stored_types(k).c_str(), status.c_str());
  }
  return 0;
}

// What `run` and `backward` share: the inputs and the options of the attention call.
struct CallArgs {
  std::string q, k, v, kernel;
  std::size_t threads = 0;
  bool causal = false;
  std::string alignment = "bottom_right";
  std::optional<std::size_t> window_left, window_right;
  std::optional<float> scale, softcap;
  bool alibi = false;
  std::string mask;
  std::size_t memory_budget = 0;
  std::string kv_dtype = "f32";
};

// `kernel_help`: what --kernel defaults to for this command; `kv_dtype_help`: what --kv-dtype
// does in it.
void add_call_options(CLI::App* cmd, CallArgs& args, const char* kernel_help,
                      const char* kv_dtype_help) {
  cmd->add_option("--q", args.q, "queries, float32 or bfloat16 (n, d), (h, n, d) or (b, h, n, d)")
      ->required();
  cmd->add_option("--k", args.k,
                  "keys, float32, float16 or bfloat16, same rank as Q; may have fewer heads")
      ->required();
  cmd->add_option("--v", args.v, "values, float32, float16 or bfloat16, the shape of K")
      ->required();
  cmd->add_option("--kernel", args.kernel, kernel_help);
  cmd->add_option("--threads", args.threads, "worker threads; 0 = every core")
      ->default_val(0)
      ->check(CLI::Range(0, 1024));
  cmd->add_flag("--causal", args.causal, "causal mask: no key after a row's diagonal key");
  cmd->add_option("--alignment", args.alignment,
                  "where row i's diagonal key sits when q_len != kv_len: bottom_right (key i + "
                  "kv_len - q_len, FlashAttention's) or top_left (key i, PyTorch's is_causal)")
      ->default_val("bottom_right")
      ->check(CLI::IsMember({"bottom_right", "top_left"}));
  cmd->add_option("--window", args.window_left,
                  "sliding window: a row sees at most W keys, ending at its diagonal key")
      ->check(CLI::Range(std::size_t{1}, std::numeric_limits<std::size_t>::max()));
  cmd->add_option("--window-right", args.window_right,
                  "local attention without --causal: the keys after the diagonal a row sees too");
  cmd->add_option("--scale", args.scale, "score scale (default 1/sqrt(d))");
  cmd->add_option("--softcap", args.softcap,
                  "logit soft-capping: every scaled score s becomes C tanh(s / C) (Gemma 2)");
  cmd->add_flag(
      "--alibi", args.alibi,
      "ALiBi with the paper's slopes, one per query head: -slope |j - diagonal| per score");
  cmd->add_option("--mask", args.mask,
                  "mask tensor .npy, as PyTorch's attn_mask: bool (true: the key takes part) or "
                  "float32 (added to the score), broadcasting to (batch, q_heads, q_len, kv_len)");
  cmd->add_option("--memory-budget", args.memory_budget,
                  "largest naive score matrix in bytes (default: half of RAM; a naive backward "
                  "holds two, P and dS)");
  std::vector<std::string> types;
  for (attnbench::KvType type : kAllKvTypes) types.emplace_back(to_string(type));
  cmd->add_option("--kv-dtype", args.kv_dtype, kv_dtype_help)
      ->default_val("f32")
      ->check(CLI::IsMember(types));
}

attnbench::KvType kv_type_of(const CallArgs& args) {
  return attnbench::kv_type_from_string(args.kv_dtype).value();  // CLI::IsMember checked it
}

const attnbench::Kernel& kernel_named(const std::string& name) {
  if (name.empty()) return attnbench::default_kernel();
  const attnbench::Kernel* kernel = attnbench::find_kernel(name);
  if (kernel == nullptr) {
    throw UsageError("--kernel " + name + ": unknown kernel; `attnbench list` shows the kernels");
  }
  return *kernel;
}

// "[0, 3]": the C-order index of element `flat` of an array of shape `dims`.
std::string index_string(std::size_t flat, const std::vector<std::size_t>& dims) {
  std::vector<std::size_t> index(dims.size());
  for (std::size_t i = dims.size(); i-- > 0;) {
    index[i] = flat % dims[i];
    flat /= dims[i];
  }
  return "[" + joined(index) + "]";
}

// The library refuses a finite K or V value that `type` storage would make an infinity; this
// says so first, in the command's terms: the file, the element's index in it and its value.
void require_storable(const std::string& name, const attnbench::npy::Array& a,
                      attnbench::KvType type) {
  if (type == attnbench::KvType::f32) return;
  const bool quantised = attnbench::is_quantised(type);
  const auto bad = std::find_if(a.data.begin(), a.data.end(), [type, quantised](float x) {
    return attnbench::rounds_to_infinity(type, x) || (quantised && !std::isfinite(x));
  });
  if (bad == a.data.end()) return;
  const std::string at =
      name + ": element " + index_string(std::size_t(bad - a.data.begin()), a.shape) + " = ";
  const std::string kv_dtype = "--kv-dtype " + std::string(to_string(type));
  char value[32];
  std::snprintf(value, sizeof value, "%.9g", double(*bad));
  if (!std::isfinite(*bad)) {
    throw UsageError(at + value + ": " + kv_dtype +
                     " stores finite values only (a block of 32 shares one scale)");
  }
  // The largest finite value of each 16-bit type: 0x7bff as a half, 0x7f7f as a bfloat16; the
  // bound a quantised block's float16 scale sets.
  const float largest_value = type == attnbench::KvType::f16 ? attnbench::f16_to_float(0x7bff)
                              : type == attnbench::KvType::bf16
                                  ? attnbench::bf16_to_float(0x7f7f)
                                  : attnbench::kv_overflow_threshold(type);
  char largest[32];
  std::snprintf(largest, sizeof largest, "%.9g", double(largest_value));
  throw UsageError(at + value + " is finite, but " + kv_dtype + " would store it as an infinity (" +
                   (quantised ? std::string("|x| must stay below ")
                              : "the largest " + std::string(to_string(type)) + " is ") +
                   largest + "); scale K and V down, or use --kv-dtype " +
                   (type == attnbench::KvType::f16 ? "bf16 or f32" : "f32"));
}

// The inputs of a call, read and checked against each other, and its options.
struct Call {
  attnbench::npy::Array q, k, v;
  Shape shape;
  attnbench::Options options;
  // --mask's values, where options.mask points
  std::vector<std::uint8_t> keep;
  std::vector<float> bias;
};

// --mask: read, its shape broadcast against the call's (NumPy's rules, the key axis whole), into
// call.options.mask.
constexpr attnbench::npy::Accept kMask{.float32 = true, .boolean = true, .who = "the mask"};
void read_mask(const std::string& path, Call& call) {
  attnbench::npy::Array m = attnbench::npy::read(path, kMask);
  const Shape& s = call.shape;
  const std::vector<std::size_t> full = {s.batch, s.q_heads, s.q_len, s.kv_len};
  const std::string target = "(batch, q_heads, q_len, kv_len) = " + shape_string(full);
  if (m.shape.size() > 4) {
    throw UsageError("--mask " + path + ": shape " + shape_string(m.shape) + " has " +
                     std::to_string(m.shape.size()) + " axes; at most 4 broadcast to " + target);
  }
  std::array<std::size_t, 4> sizes{1, 1, 1, 1};
  std::copy(m.shape.begin(), m.shape.end(), sizes.end() - m.shape.size());
  for (std::size_t x = 0; x < 4; ++x) {
    if (sizes[x] != full[x] && (x == 3 || sizes[x] != 1)) {
      throw UsageError("--mask " + path + ": shape " + shape_string(m.shape) +
                       " does not broadcast to " + target +
                       (x == 3 ? ": its last axis must be kv_len" : ""));
    }
  }
  call.options.mask.sizes = sizes;
  if (m.dtype == attnbench::npy::Dtype::boolean) {
    call.keep.assign(m.data.begin(), m.data.end());  // 0 and 1
    call.options.mask.keep = call.keep.data();
  } else {
    call.bias = std::move(m.data);
    call.options.mask.bias = call.bias.data();
  }
}

// Q is float32 or bfloat16; K and V float32, float16 or bfloat16, which the reader widens exactly
// (so a 16-bit file gives the call the same floats as the float32 file of its values).
constexpr attnbench::npy::Accept kQueries{.bfloat16 = true, .who = "Q"};
constexpr attnbench::npy::Accept kKeysValues{.float16 = true, .bfloat16 = true, .who = "K and V"};

Call read_call(const CallArgs& args) {
  Call call{attnbench::npy::read(args.q, kQueries),
            attnbench::npy::read(args.k, kKeysValues),
            attnbench::npy::read(args.v, kKeysValues),
            Shape{},
            attnbench::Options{},
            {},
            {}};
  call.shape = attnbench::shape_from_dims(call.q.shape, call.k.shape, call.v.shape,
                                          {args.q, args.k, args.v});
  call.options.causal = args.causal;
  call.options.alignment = attnbench::alignment_from_string(args.alignment).value();  // checked
  call.options.window_left = args.window_left;
  call.options.window_right = args.window_right;
  call.options.scale = args.scale;
  call.options.softcap = args.softcap;
  if (args.alibi) call.options.alibi_slopes = attnbench::alibi_slopes(call.shape.q_heads);
  if (!args.mask.empty()) read_mask(args.mask, call);
  call.options.threads = args.threads;
  call.options.memory_budget_bytes = args.memory_budget;
  call.options.kv_type = kv_type_of(args);
  require_storable(args.k, call.k, call.options.kv_type);
  require_storable(args.v, call.v, call.options.kv_type);
  return call;
}

// The CLI owns its process, so it may lift TBB's default cap of one thread per core when asked
// for more (the library itself never changes process-wide TBB settings).
tbb::global_control allow_threads(std::size_t threads) {
  return tbb::global_control(tbb::global_control::max_allowed_parallelism,
                             std::max<std::size_t>(threads, tbb::info::default_concurrency()));
}

using Milliseconds = std::chrono::duration<double, std::milli>;

// Times one call of `f`.
template <class F>
Milliseconds timed(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::steady_clock::now() - start;
}

// "kernel K, threads T, shape b=... d=... [causal] [top_left] [window W] [window_right W]": the
// start of both commands' report line.
std::string describe(const attnbench::Kernel& kernel, std::size_t threads, const Shape& shape,
                     const attnbench::Options& options) {
  char text[256];
  std::snprintf(text, sizeof text,
                "kernel %s, threads %zu, shape b=%zu q_heads=%zu kv_heads=%zu q_len=%zu kv_len=%zu "
                "d=%zu%s",
                std::string(kernel.name).c_str(), threads, shape.batch, shape.q_heads,
                shape.kv_heads, shape.q_len, shape.kv_len, shape.head_dim,
                options.causal ? " causal" : "");
  std::string out = text;
  const bool aligned = options.causal || options.window_left || options.window_right;
  if (aligned && options.alignment == attnbench::Alignment::top_left) out += " top_left";
  if (options.window_left) out += " window " + std::to_string(*options.window_left);
  if (options.window_right) out += " window_right " + std::to_string(*options.window_right);
  if (!options.alibi_slopes.empty()) out += " alibi";
  if (options.mask.keep) out += " mask bool";
  if (options.mask.bias) out += " mask float32";
  if (options.softcap) {
    char cap[32];
    std::snprintf(cap, sizeof cap, " softcap %g", double(*options.softcap));
    out += cap;
  }
  return out;
}

struct RunArgs {
  CallArgs call;
  std::string out;
  std::string out_dtype = "f32";
  bool quantise_query = false;
};

int run(const RunArgs& args) {
  const attnbench::Kernel* kernel = &kernel_named(args.call.kernel);
  attnbench::KvType kv_type = kv_type_of(args.call);
  // A bf16-products kernel stores bf16 only, which the default --kv-dtype f32 then means.
  if (kernel->products == attnbench::Products::bf16 && kv_type == attnbench::KvType::f32) {
    kv_type = attnbench::KvType::bf16;
  }
  if (!kernel->stores(kv_type)) {
    const attnbench::Kernel& runs = attnbench::resolve(*kernel);
    throw UsageError("--kv-dtype " + args.call.kv_dtype + ": kernel " + std::string(kernel->name) +
                     (&runs != kernel ? " (runs " + std::string(runs.name) + ")" : "") +
                     " stores K and V as " + stored_types(*kernel) +
                     " only; `attnbench list` shows each kernel's K/V types (column kv-dtype)");
  }
  if (args.quantise_query && !attnbench::is_quantised(kv_type)) {
    throw UsageError("--quantise-query: needs --kv-dtype q8_0 or q4_0 (K stored quantised), not " +
                     args.call.kv_dtype);
  }
  Call call = read_call(args.call);
  call.options.quantise_query = args.quantise_query;
  const std::size_t threads = attnbench::worker_threads(call.options);
  const tbb::global_control allow = allow_threads(threads);

  std::vector<float> o(call.shape.q_elements());
  attnbench::Workspace ws;
  const Milliseconds elapsed = timed([&] {
    kernel = &attnbench::attention(
        *kernel, call.shape, call.options,
        {call.q.data.data(), call.k.data.data(), call.v.data.data(), o.data()}, ws);
  });
  attnbench::npy::write(
      args.out, call.q.shape, o,
      args.out_dtype == "bf16" ? attnbench::npy::Dtype::bfloat16 : attnbench::npy::Dtype::float32);

  std::printf("%s, K/V stored as %s, compute %.3f ms, scratch %zu bytes, wrote %s\n",
              describe(*kernel, threads, call.shape, call.options).c_str(),
              std::string(attnbench::to_string(kv_type)).c_str(), elapsed.count(), ws.peak_bytes(),
              args.out.c_str());
  return 0;
}

struct BackwardArgs {
  CallArgs call;
  std::string d_o, dq, dk, dv;
};

// --kernel, or by default the first available kernel of the registry that has a backward pass.
const attnbench::Kernel& backward_kernel_named(const std::string& name) {
  if (name.empty()) return attnbench::default_backward_kernel();
  const attnbench::Kernel& requested = kernel_named(name);
  if (!requested.has_backward()) {
    const attnbench::Kernel& runs = attnbench::resolve(requested);
    throw UsageError("--kernel " + name + ": " +
                     (&runs != &requested ? "runs " + std::string(runs.name) + ", which has"
                                          : std::string("has")) +
                     " no backward pass; `attnbench list` shows the kernels that do");
  }
  return requested;
}

int backward(const BackwardArgs& args) {
  if (kv_type_of(args.call) != attnbench::KvType::f32) {
    throw UsageError("--kv-dtype " + args.call.kv_dtype +
                     ": the backward pass stores K and V as f32 only (float16 .npy K and V are "
                     "read exactly; leave --kv-dtype out)");
  }
  const attnbench::Kernel& requested = backward_kernel_named(args.call.kernel);
  // Three gradients, three files: one named twice would be overwritten by the other.
  const std::pair<const char*, const std::string*> outputs[] = {
      {"--dq", &args.dq}, {"--dk", &args.dk}, {"--dv", &args.dv}};
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (std::filesystem::path(*outputs[i].second).lexically_normal() ==
          std::filesystem::path(*outputs[j].second).lexically_normal()) {
        throw UsageError(std::string(outputs[i].first) + " " + *outputs[i].second +
                         ": the same file as " + outputs[j].first +
                         "; each gradient needs its own file");
      }
    }
  }
  const Call call = read_call(args.call);
  const attnbench::npy::Array d_o = attnbench::npy::read(args.d_o, {.bfloat16 = true, .who = "dO"});
  require_same_shape(args.d_o, d_o, args.call.q, call.q, "dO must have the shape of Q (and O)");
  const std::size_t threads = attnbench::worker_threads(call.options);
  const tbb::global_control allow = allow_threads(threads);

  const Shape& shape = call.shape;
  std::vector<float> o(shape.q_elements()), lse(shape.q_elements() / shape.head_dim);
  std::vector<float> dq(shape.q_elements()), dk(shape.kv_elements()), dv(shape.kv_elements());
  const attnbench::Tensors forward{call.q.data.data(), call.k.data.data(), call.v.data.data(),
                                   o.data(), lse.data()};
  const attnbench::Gradients gradients{d_o.data.data(), dq.data(), dk.data(), dv.data()};
  // Both calls checked before either runs: a backward the budget refuses fails at once.
  attnbench::validate(requested, shape, call.options, forward);
  attnbench::validate_backward(requested, shape, call.options, forward, gradients);

  attnbench::Workspace ws;
  std::size_t forward_scratch = 0;
  const attnbench::Kernel* kernel = &requested;
  const Milliseconds forward_ms = timed([&] {
    attnbench::attention(requested, shape, call.options, forward, ws);
    forward_scratch = ws.peak_bytes();
  });
  const Milliseconds backward_ms = timed([&] {
    kernel = &attnbench::attention_backward(requested, shape, call.options, forward, gradients, ws);
  });
  const attnbench::npy::Output files[] = {
      {args.dq, call.q.shape, dq}, {args.dk, call.k.shape, dk}, {args.dv, call.v.shape, dv}};
  attnbench::npy::write_all(files);

  std::printf(
      "%s, forward %.3f ms (scratch %zu bytes), backward %.3f ms (scratch %zu bytes), wrote %s, "
      "%s, %s\n",
      describe(*kernel, threads, shape, call.options).c_str(), forward_ms.count(), forward_scratch,
      backward_ms.count(), ws.peak_bytes(), args.dq.c_str(), args.dk.c_str(), args.dv.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"attnbench: scaled dot-product attention on the CPU, O = softmax(Q K^T * scale) V"};
  app.set_version_flag("--version", attnbench::cli::version_line());
  app.require_subcommand(1);
  CLI::App* list = app.add_subcommand("list",
                                      "print every kernel, whether it has a backward pass, the K/V "
                                      "types it stores (--kv-dtype) and "
                                      "whether this CPU runs it");

  RunArgs run_args;
  CLI::App* run_cmd = app.add_subcommand("run", "compute attention on .npy inputs");
  add_call_options(run_cmd, run_args.call,
                   "kernel name (default: the first available in `attnbench list`)",
                   "how the kernel stores K and V (rounded once, to nearest even; the arithmetic "
                   "stays float32): f32, f16, bf16, q8_0 or q4_0, as `attnbench list` says it can");
  run_cmd->add_option("--out", run_args.out, "output .npy, the shape of Q")->required();
  run_cmd
      ->add_option(
          "--out-dtype", run_args.out_dtype,
          "O's type in --out: f32, or bf16 (rounded to nearest even, descr '<V2' as np.save "
          "writes ml_dtypes.bfloat16; np.load(...).view(ml_dtypes.bfloat16) reads it)")
      ->default_val("f32")
      ->check(CLI::IsMember({"f32", "bf16"}));
  run_cmd->add_flag("--quantise-query", run_args.quantise_query,
                    "with --kv-dtype q8_0 or q4_0: round Q to q8_0 too (ggml's way) and compute "
                    "Q K^T on it (integer dot products on AVX-512 VNNI)");

  BackwardArgs backward_args;
  CLI::App* backward_cmd = app.add_subcommand(
      "backward",
      "the gradients dQ, dK, dV of attention on .npy inputs given dO (the kernel's own forward "
      "first, for O and LSE)");
  add_call_options(backward_cmd, backward_args.call,
                   "kernel name (default: the first available in `attnbench list` with a backward)",
                   "f32 only: the backward pass stores K and V as float32");
  backward_cmd->add_option("--do", backward_args.d_o, "the output's gradient dO, the shape of Q")
      ->required();
  backward_cmd->add_option("--dq", backward_args.dq, "output .npy: dQ, the shape of Q")->required();
  backward_cmd->add_option("--dk", backward_args.dk, "output .npy: dK, the shape of K")->required();
  backward_cmd->add_option("--dv", backward_args.dv, "output .npy: dV, the shape of V")->required();

  std::string demo_name, demo_json;
  std::string demo_choices;  // from the demos' own list, so a new demo appears in --help
  for (std::string_view name : attnbench::demo::names()) demo_choices.append(name).append(", ");
  demo_choices.replace(demo_choices.size() - 2, 2, " or all");
  CLI::App* demo =
      app.add_subcommand("demo", "run one of the attention module's experiments, or all");
  demo->add_option("name", demo_name, demo_choices)->required();
  demo->add_option("--json", demo_json, "also write every demo's numbers to this JSON file");
  bool demo_quick = false;
  demo->add_flag("--quick", demo_quick,
                 "train the copy demo for a few steps only: checks the command, not its claims");

#ifdef ATTNBENCH_RING
  attnbench::cli::RingArgs ring_args;
  CLI::App* ring_cmd = attnbench::cli::add_ring_command(app, ring_args);
#endif

  try {
    app.parse(argc, argv);
#ifdef ATTNBENCH_RING
    if (ring_cmd->parsed()) return attnbench::cli::ring(ring_args, argc, argv);
#endif
    if (list->parsed()) return list_kernels();
    if (demo->parsed()) return attnbench::demo::run(demo_name, demo_json, stdout, demo_quick);
    if (backward_cmd->parsed()) return backward(backward_args);
    return run(run_args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
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
