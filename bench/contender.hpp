// Contenders: what the study measures attention against, each the way its users run it. A
// contender prepares once per point (primitives, buffers, masks), then runs the timed call; it
// owns its threads (oneTBB for attnbench, OpenMP for oneDNN) and describes itself for the JSON
// context. The library's kernels are contenders through one adapter (kernel_contender). Roles
// ("attnbench", "baseline", "peer") come from the description, never from names in the report.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <attnbench/attnbench.hpp>

namespace attnbench::bench {

// One point of the contenders' comparison: a shape, the causal flag and the thread count.
struct ContenderPoint {
  Shape shape;
  bool causal = false;
  std::size_t threads = 1;
};

struct Description {
  std::string name;       // benchmark name prefix, e.g. "tiled/simd/avx512f", "onednn/primitives"
  std::string role;       // "attnbench" (ours), "baseline" (ours, the NumPy user's steps), "peer"
  std::string library;    // "attnbench", "oneDNN", "NumPy", "PyTorch"
  std::string version;    // the library's version string
  std::string threading;  // the runtime that owns its threads and how the count is set
  bool fused = false;     // false: materialises the n x n score matrix
  std::string how;        // what it calls, in a few words (exp implementation, primitives)

  // The description as one JSON object, for the benchmark context ("contender <name>").
  std::string json() const;
};

class Contender {
 public:
  virtual ~Contender() = default;
  virtual const Description& describe() const = 0;
  // Empty when the contender can run `point` here; otherwise the reason, starting "missing: "
  // (library absent) or "unsupported: " (e.g. a mask it cannot express).
  virtual std::string unsupported(const ContenderPoint& point) const = 0;
  // Everything outside the timed call, for this point and these tensors (which stay valid and
  // unchanged until the next prepare): primitives, scratch, masks. Releases the previous point's.
  virtual void prepare(const ContenderPoint& point, const Tensors& io) = 0;
  // The timed call: O from Q, K and V of the prepared point.
  virtual void run() = 0;
  // Bytes of scratch the prepared point holds (score matrix, workspace), 0 if unknown.
  virtual std::size_t scratch_bytes() const = 0;
  // Frees what prepare() allocated.
  virtual void release() = 0;
};

// The points every contender runs at in one preset's comparison window, with that window's
// repetitions, minimum time per repetition and longest predicted call. The Python runner
// (scripts/contenders.py) reads the same list through the C helper (capi.cpp).
struct ContenderPreset {
  std::vector<ContenderPoint> points;
  int repetitions;
  double min_time;
  double budget_seconds;
  // The Python window's further passes (scripts/contenders.py): a training step (forward, then
  // backward) at these n, at each head dim of `points`, not causal and causal; and one-row decode
  // of a Llama-style layer (32 query heads, 8 key/value heads, d = 128) over these cache lengths;
  // and the same layer's causal prefill (every query row of a prompt of these lengths).
  std::vector<std::size_t> training_lengths;
  std::vector<std::size_t> decode_lengths;
  std::vector<std::size_t> prefill_lengths;
};
// "quick", "standard" or "full"; nullopt for another name. Threads 1 and `all_threads` at every
// point.
std::optional<ContenderPreset> contender_preset(const std::string& name, std::size_t all_threads);

// The benchmark name of a contender at a point: `<name>/n:<n>/d:<d>/threads:<t>/causal:<0|1>`.
std::string point_name(const std::string& contender, const ContenderPoint& point);

// A registry kernel as a contender (a dispatching entry runs what it resolves to). Its role:
// "baseline" for the OpenBLAS backend, "attnbench" for the others (by the kernel's fields).
std::unique_ptr<Contender> kernel_contender(const Kernel& kernel);
// That role, also written into every run's context as `role <kernel>` for the report.
const char* kernel_role(const Kernel& kernel);
// oneDNN's matmul, softmax and matmul primitives; a "missing" contender when the build found no
// oneDNN (contender_onednn_missing.cpp).
std::unique_ptr<Contender> onednn_contender();

// The comparison's contenders in the order the report lists them: tiled/simd (as it resolves),
// tiled/simd/avx2 (the study's target ISA, when it is not what tiled/simd resolves to),
// naive/openblas, then the peers.
std::vector<std::unique_ptr<Contender>> contenders();

}  // namespace attnbench::bench
