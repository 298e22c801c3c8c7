// attnbench: scaled dot-product attention on the CPU, O = softmax(Q K^T * scale) V: its options,
// tensors and entry points.
//
// Layout: Q and O are [batch][q_heads][q_len][head_dim], K and V are
// [batch][kv_heads][kv_len][head_dim], contiguous row-major float32. Grouped-query attention:
// query head h reads key/value head h / (q_heads / kv_heads).
#pragma once

#include <cstddef>
#include <optional>

#include "attnbench/registry.hpp"
#include "attnbench/types.hpp"
#include "attnbench/workspace.hpp"

namespace attnbench {

class KvCache;

struct Options {
  // Causal mask aligned to the bottom-right: query i sees keys j <= i + (kv_len - q_len).
  bool causal = false;
  // Multiplies every score; unset means 1 / sqrt(head_dim). 0 is allowed (uniform weights).
  std::optional<float> scale;
  // Largest naive score matrix (bytes) a call may materialise; 0 means half of physical RAM.
  std::size_t memory_budget_bytes = 0;
  // Worker threads for attention(); 0 means every core, 1 runs inline on the caller's thread.
  std::size_t threads = 1;
  // How the call stores K and V in its packed copy (Kernel::stores says which types a kernel
  // takes). With a 16-bit type, a finite K or V value the type cannot hold is an Error, not a
  // silent infinity. A call on a KvCache uses the cache's type (this must then be f32 or the
  // same). The backward pass takes f32 only.
  KvType kv_type = KvType::f32;
};

struct Tensors {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  float* o = nullptr;
  // Optional, [batch][q_heads][q_len]: each query row's log-sum-exp of its scaled scores,
  // LSE = m + log(l) with m the row max and l = sum_j exp(s_j - m), what the backward recomputes
  // the weights from (P = exp(s - LSE)). -inf for a zero row (no visible key, or every score
  // -inf); NaN where the row is NaN.
  float* lse = nullptr;
  // Optional: K and V already packed in a persistent cache (then k and v are null, and the shape's
  // batch, kv_heads, head_dim and kv_len are the cache's), so the call packs nothing.
  const KvCache* kv_cache = nullptr;
};

// The backward pass's tensors beyond the forward's (Q, K, V, O and LSE as the forward left
// them): the output's gradient dO (O's shape) in, and the gradients dQ (Q's shape), dK and dV
// (K's and V's shape) out. Under grouped-query attention a key/value head's dK and dV sum the
// contributions of every query head that reads it.
struct Gradients {
  const float* d_o = nullptr;
  float* dq = nullptr;
  float* dk = nullptr;
  float* dv = nullptr;
};

// The causal mask, defined once for kernels, oracle, tests and benchmark: query row `row` attends
// to keys [0, visible_keys(...)): all kv_len of them, or under the bottom-right mask
// min(kv_len, max(0, row + 1 + kv_len - q_len)).
constexpr std::size_t visible_keys(const Shape& shape, bool causal, std::size_t row) {
  if (!causal) return shape.kv_len;
  // No overflow: validated sizes are far below 2^63.
  const std::size_t seen = row + 1 + shape.kv_len;
  // One expression: written as two returns, GCC 12 spills the scalar tiled kernel's pointers to
  // the stack inside its inner loops, where this function is inlined.
  return seen <= shape.q_len
             ? 0
             : (seen - shape.q_len < shape.kv_len ? seen - shape.q_len : shape.kv_len);
}

// Query-key pairs a call scores over every (batch, query head): q_len x kv_len, or under the
// causal mask only the visible ones. Attention costs 4 x head_dim FLOPs per pair (a multiply-add
// in each of the two products).
constexpr double scored_pairs(const Shape& shape, bool causal) {
  double pairs = 0;
  for (std::size_t i = 0; i < shape.q_len; ++i) pairs += double(visible_keys(shape, causal, i));
  return pairs * double(shape.batch * shape.q_heads);
}

// Where one (batch, query head) lives in the tensors, grouped-query attention included: the
// element offset of its Q and O rows, and the index and element offset of the key/value head it
// reads.
struct HeadOffsets {
  std::size_t q;        // into Q and O
  std::size_t kv_head;  // batch * kv_heads + the key/value head
  std::size_t kv;       // into K and V
};
constexpr HeadOffsets head_offsets(const Shape& shape, std::size_t batch, std::size_t q_head) {
  const std::size_t group = shape.q_heads / shape.kv_heads;  // query heads per key/value head
  const std::size_t kv_head = batch * shape.kv_heads + q_head / group;
  return {(batch * shape.q_heads + q_head) * shape.q_len * shape.head_dim, kv_head,
          kv_head * shape.kv_len * shape.head_dim};
}

// Checks the shape's sizes (non-zero, heads divisible, byte counts within 64 bits) and the
// options; throws Error.
void validate(const Shape& shape, const Options& options);
// Checks everything about a call without allocating: the kernel runs on this CPU, the shape and
// options, non-null and non-overlapping tensors, the naive memory budget; throws Error.
void validate(const Kernel& kernel, const Shape& shape, const Options& options,
              const Tensors& tensors);

// Computes O with `kernel` over every (batch, query head). Validates first (throws Error) and
// allocates only after validation passes. `ws` supplies the scratch of the calling thread; its
// peak_bytes() afterwards is the scratch the call needed (summed over worker threads, packed K
// and V included). Returns the kernel that ran (resolve(kernel)).
const Kernel& attention(const Kernel& kernel, const Shape& shape, const Options& options,
                        const Tensors& tensors, Workspace& ws);

// The backward pass: dQ, dK and dV of the loss whose gradient with respect to O is dO, for the
// forward call with the same kernel, shape and options that left `forward.o` and `forward.lse`
// (both required). Same masking and zero rows as the forward (a zero row's gradients are zero).
// The result is the same, bit for bit, for every thread count. Validates first (throws Error:
// also a kernel without a backward, a null or overlapping gradient), allocates only after
// validation passes; `ws` as for attention(). Returns the kernel that ran.
const Kernel& attention_backward(const Kernel& kernel, const Shape& shape, const Options& options,
                                 const Tensors& forward, const Gradients& gradients, Workspace& ws);
// Checks everything about a backward call without allocating; throws Error.
void validate_backward(const Kernel& kernel, const Shape& shape, const Options& options,
                       const Tensors& forward, const Gradients& gradients);

// The scale a call uses: options.scale, or 1 / sqrt(head_dim) when it is unset.
float effective_scale(const Shape& shape, const Options& options);
// The worker threads a call runs on: options.threads, or every core the process may use when 0.
std::size_t worker_threads(const Options& options);
// Bytes of one head's full query-by-key score matrix in float32, as a naive kernel materialises it.
std::size_t naive_score_bytes(const Shape& shape);
// Half of this machine's physical memory: the default naive memory budget.
std::size_t default_memory_budget();

}  // namespace attnbench
