// attnbench: scaled dot-product attention on the CPU, O = softmax(Q K^T * scale) V: its options,
// tensors and entry points.
//
// Layout: Q and O are [batch][q_heads][q_len][head_dim], K and V are
// [batch][kv_heads][kv_len][head_dim], contiguous row-major float32. Grouped-query attention:
// query head h reads key/value head h / (q_heads / kv_heads).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "attnbench/registry.hpp"
#include "attnbench/types.hpp"
#include "attnbench/workspace.hpp"

namespace attnbench {

class KvCache;

// Where a row's diagonal key sits when q_len != kv_len: the key the causal mask and a window end
// at. Alike when q_len == kv_len.
enum class Alignment : std::uint8_t {
  // Row i's diagonal key is i + kv_len - q_len: the last query row sees the last key, as in
  // FlashAttention >= 2.1 and a KV cache's new rows. The default.
  bottom_right,
  // Row i's diagonal key is key i, as PyTorch's is_causal.
  top_left,
};
std::string_view to_string(Alignment alignment);  // "bottom_right", "top_left"
// The Alignment called `name`, or nullopt.
std::optional<Alignment> alignment_from_string(std::string_view name);

// A mask tensor, as PyTorch's attn_mask: boolean (`keep`: a byte per (row, key), nonzero where the
// key takes part) or additive (`bias`: a float32 per (row, key), added to the score after scaling,
// soft-capping and ALiBi; -inf removes the key). One of the two, or neither (no mask). It
// broadcasts over [batch][q_heads][q_len][kv_len] by NumPy's rules: `sizes` holds its four
// sizes, each the full size or 1 (a padding mask: [batch, 1, 1, kv_len]); its key size is kv_len.
// Contiguous, row-major. It applies within the keys the causal mask and window leave (KeyMask),
// and a row it leaves no key is a zero row.
struct MaskTensor {
  const std::uint8_t* keep = nullptr;
  const float* bias = nullptr;
  std::array<std::size_t, 4> sizes{};

  bool empty() const { return keep == nullptr && bias == nullptr; }
  // Elements between one (batch, query head, row) and the next, 0 where the size is 1 (broadcast).
  std::array<std::size_t, 3> strides() const {
    const std::size_t row = sizes[3], head = sizes[2] * row, batch = sizes[1] * head;
    return {sizes[0] == 1 ? 0 : batch, sizes[1] == 1 ? 0 : head, sizes[2] == 1 ? 0 : row};
  }
};

struct Options {
  // Causal mask: a row sees no key after its diagonal key (`alignment` says which that is).
  bool causal = false;
  Alignment alignment = Alignment::bottom_right;
  // Sliding window (local attention, as Mistral and Gemma): a row sees at most window_left keys
  // ending at its diagonal key (that key and the window_left - 1 before it). Unset: every key
  // before. At least 1.
  std::optional<std::size_t> window_left;
  // Non-causal local attention: the keys after its diagonal key a row sees too. Unset: all of
  // them. Not with `causal` (which means 0).
  std::optional<std::size_t> window_right;
  // Multiplies every score; unset means 1 / sqrt(head_dim). 0 is allowed (uniform weights).
  std::optional<float> scale;
  // Logit soft-capping (Gemma 2): every scaled score s becomes softcap * tanh(s / softcap), so
  // that none exceeds softcap in magnitude. Unset: none. Finite and above 0.
  std::optional<float> softcap;
  // ALiBi (Press et al., 2022; BLOOM, MPT): one slope per query head; head h adds
  // -alibi_slopes[h] * |j - d(i)| to the (soft-capped) score of row i and key j, d(i) the row's
  // diagonal key (`alignment`), as FlashAttention's alibi_slopes. Empty: none. Finite.
  std::vector<float> alibi_slopes;
  // A boolean or additive mask tensor (MaskTensor), read where a row sees a key. None by default.
  MaskTensor mask;
  // Largest naive score matrix (bytes) a call may materialise; 0 means half of physical RAM.
  std::size_t memory_budget_bytes = 0;
  // Worker threads for attention(); 0 means every core, 1 runs inline on the caller's thread.
  std::size_t threads = 1;
  // How the call stores K and V in its packed copy (Kernel::stores says which types a kernel
  // takes). With a 16-bit type, a finite K or V value the type cannot hold is an Error, not a
  // silent infinity. A call on a KvCache uses the cache's type (this must then be f32 or the
  // same). The backward pass takes f32 only.
  KvType kv_type = KvType::f32;
  // With K stored quantised (q8_0 or q4_0: kv_type, or the cache's type): the query rows are
  // quantised to q8_0 too (ggml's blocks of 32, as llama.cpp quantises them for its q8_0 and q4_0
  // dot products), and Q K^T is computed on those values: the call's result is attention on the
  // rounded Q. Where the CPU has AVX-512 VNNI the SIMD kernels' decode then forms Q K^T with
  // integer dot products (vpdpbusd); elsewhere the same values go through float32 FMAs. Q must
  // then be finite. Off by default: Q stays float32.
  bool quantise_query = false;
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

// The forward's tensors in bfloat16, for callers that hold their data so (ml_dtypes, PyTorch and
// oneDNN do): each element a bfloat16 bit pattern, the upper 16 bits of a float32. attention()
// widens Q, K and V to float32 copies (exactly: every bfloat16 is a float32), runs the float32
// call on them, and writes O as bfloat16 (rounded to nearest, ties to even; NaN stays NaN) to `o`,
// or as float32 to `o_f32`: exactly one of the two. The result is the float32 call's on the
// widened values, bit for bit; the copies are scratch of the call (Workspace::peak_bytes). The
// tensors' own checks (null, overlap, which output) come before any allocation; what the float32
// call checks (the kernel's K/V types, a cache, the naive budget) comes after the copies, still
// before O is written.
struct Bf16Tensors {
  const std::uint16_t* q = nullptr;
  const std::uint16_t* k = nullptr;  // null with kv_cache, as Tensors
  const std::uint16_t* v = nullptr;
  std::uint16_t* o = nullptr;
  float* o_f32 = nullptr;
  float* lse = nullptr;  // as Tensors::lse, float32
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

// Keys [begin, end) of one head.
struct KeySpan {
  std::size_t begin = 0;
  std::size_t end = 0;
  constexpr std::size_t size() const { return end - begin; }
  constexpr bool empty() const { return end <= begin; }
};

// Which keys each query row of one head sees, from the options (causal mask, alignment, window),
// defined once for kernels, oracle, tests and benchmark: row i sees keys [begin, end) with, d(i)
// its diagonal key (i + kv_len - q_len bottom-right, i top-left),
//   end = d(i) + 1 (causal), d(i) + 1 + window_right, or kv_len, at most kv_len;
//   begin = d(i) + 1 - window_left, or 0;
// clamped to [0, kv_len], empty when begin >= end (a zero row). begin and end never decrease
// from one row to the next, so the rows that see a key are consecutive too.
class KeyMask {
 public:
  constexpr KeyMask() = default;  // every row sees every key of an empty head
  constexpr KeyMask(std::size_t q_len, std::size_t kv_len, const Options& options)
      : kv_len_(std::int64_t(kv_len)),
        diagonal0_(options.alignment == Alignment::top_left
                       ? 0
                       : std::int64_t(kv_len) - std::int64_t(q_len)),
        left_(options.window_left ? bounded(*options.window_left) : kUnbounded),
        right_(options.causal         ? 0
               : options.window_right ? bounded(*options.window_right)
                                      : kUnbounded),
        q_len_(std::int64_t(q_len)) {}

  // The keys row i sees.
  constexpr KeySpan row(std::size_t i) const {
    // No overflow: validated sizes (and windows, clamped) are far below 2^62.
    const std::int64_t next = std::int64_t(i) + diagonal0_ + 1;  // one past the diagonal key
    const std::int64_t end = clamp(next + right_, 0, kv_len_);
    return {std::size_t(clamp(next - left_, 0, end)), std::size_t(end)};
  }
  // The keys any of rows [i, i + count) sees (count >= 1): from the first row's first to the
  // last row's last.
  constexpr KeySpan rows(std::size_t i, std::size_t count) const {
    return {row(i).begin, row(i + count - 1).end};
  }
  // The rows that see key j: [first, last).
  constexpr std::size_t first_row(std::size_t j) const {
    return std::size_t(clamp(std::int64_t(j) - right_ - diagonal0_, 0, q_len_));
  }
  constexpr std::size_t last_row(std::size_t j) const {
    return std::size_t(clamp(std::int64_t(j) + left_ - diagonal0_, 0, q_len_));
  }
  // Row i's diagonal key (negative, or past the keys, where the alignment puts it there).
  constexpr std::int64_t diagonal(std::size_t i) const { return std::int64_t(i) + diagonal0_; }
  // The first key row i's window reaches (0 without a window; kv_len if past the keys): its
  // begin before it is clamped to its end.
  constexpr std::size_t window_start(std::size_t i) const {
    return std::size_t(clamp(std::int64_t(i) + diagonal0_ + 1 - left_, 0, kv_len_));
  }
  // Whether a row may see fewer than every key (causal or windowed).
  constexpr bool limits() const { return left_ != kUnbounded || right_ != kUnbounded; }

 private:
  static constexpr std::int64_t kUnbounded = std::int64_t{1} << 62;
  // A window past 2^61 keys sees as much as none.
  static constexpr std::int64_t bounded(std::size_t w) {
    return w < (std::size_t{1} << 61) ? std::int64_t(w) : std::int64_t{1} << 61;
  }
  static constexpr std::int64_t clamp(std::int64_t x, std::int64_t lo, std::int64_t hi) {
    return x < lo ? lo : (x > hi ? hi : x);
  }
  std::int64_t kv_len_ = 0;
  std::int64_t diagonal0_ = 0;  // row 0's diagonal key
  std::int64_t left_ = kUnbounded;
  std::int64_t right_ = kUnbounded;
  std::int64_t q_len_ = 0;
};

// The keys query row `row` of a head of `shape` sees under `options`.
constexpr KeySpan visible_keys(const Shape& shape, const Options& options, std::size_t row) {
  return KeyMask(shape.q_len, shape.kv_len, options).row(row);
}

// Query-key pairs a call scores over every (batch, query head): q_len x kv_len, or under a mask
// or window only the visible ones. Attention costs 4 x head_dim FLOPs per pair (a multiply-add
// in each of the two products).
constexpr double scored_pairs(const Shape& shape, const Options& options) {
  const KeyMask mask(shape.q_len, shape.kv_len, options);
  double pairs = 0;
  for (std::size_t i = 0; i < shape.q_len; ++i) pairs += double(mask.row(i).size());
  return pairs * double(shape.batch * shape.q_heads);
}
constexpr double scored_pairs(const Shape& shape, bool causal) {
  Options options;
  options.causal = causal;
  return scored_pairs(shape, options);
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

// The same on bfloat16 tensors (Bf16Tensors), the output's field by which of o and o_f32 is set.
void validate(const Kernel& kernel, const Shape& shape, const Options& options,
              const Bf16Tensors& tensors);

// Computes O with `kernel` over every (batch, query head). Validates first (throws Error) and
// allocates only after validation passes. `ws` supplies the scratch of the calling thread; its
// peak_bytes() afterwards is the scratch the call needed (summed over worker threads, packed K
// and V included). Returns the kernel that ran (resolve(kernel)).
const Kernel& attention(const Kernel& kernel, const Shape& shape, const Options& options,
                        const Tensors& tensors, Workspace& ws);
// The same on bfloat16 tensors: see Bf16Tensors.
const Kernel& attention(const Kernel& kernel, const Shape& shape, const Options& options,
                        const Bf16Tensors& tensors, Workspace& ws);

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

// ALiBi's slopes for `heads` query heads as the paper (and BLOOM) define them: 2^(-8 (h + 1) / H)
// for H a power of two, else those of the largest power of two below H followed by every other
// slope of twice it.
std::vector<float> alibi_slopes(std::size_t heads);

// The scale a call uses: options.scale, or 1 / sqrt(head_dim) when it is unset.
float effective_scale(const Shape& shape, const Options& options);
// The worker threads a call runs on: options.threads, or every core the process may use when 0.
std::size_t worker_threads(const Options& options);
// Bytes of one head's full query-by-key score matrix in float32, as a naive kernel materialises it.
std::size_t naive_score_bytes(const Shape& shape);
// Half of this machine's physical memory: the default naive memory budget.
std::size_t default_memory_budget();

}  // namespace attnbench
