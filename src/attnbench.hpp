// attnbench: scaled dot-product attention on the CPU, O = softmax(Q K^T * scale) V.
//
// The user's header: the problem description (Shape, Options, Tensors), the library's error type,
// the scratch Workspace, the causal mask, a read-only view of the registry of kernels, and the
// entry point attention(). What kernels see of a call lives apart, in kernels/kernel_interface.hpp.
//
// Layout: Q and O are [batch][q_heads][q_len][head_dim], K and V are
// [batch][kv_heads][kv_len][head_dim], contiguous row-major float32. Grouped-query attention:
// query head h reads key/value head h / (q_heads / kv_heads).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace attnbench {

// ---------------------------------------------------------------------------------------------
// Problem description
// ---------------------------------------------------------------------------------------------

struct Shape {
  std::size_t batch = 1;
  std::size_t q_heads = 1;
  std::size_t kv_heads = 1;
  std::size_t q_len = 0;
  std::size_t kv_len = 0;
  std::size_t head_dim = 0;

  std::size_t q_elements() const { return batch * q_heads * q_len * head_dim; }
  std::size_t kv_elements() const { return batch * kv_heads * kv_len * head_dim; }
};

// How K and V are stored where a kernel reads them (its packed copy, or a KvCache): float32, IEEE
// half (float16) or bfloat16. Inputs stay float32 (Q, K, V) and so do the outputs and every
// accumulation; a 16-bit type halves the bytes of K and V a call streams, at the price of rounding
// them once (to nearest, ties to even).
enum class KvType { f32, f16, bf16 };
inline constexpr std::size_t kKvTypes = 3;
std::string_view to_string(KvType type);
// The KvType called `name` ("f32", "f16", "bf16"), or nullopt.
std::optional<KvType> kv_type_from_string(std::string_view name);
// Bytes of one stored element: 4 or 2.
constexpr std::size_t kv_type_bytes(KvType type) { return type == KvType::f32 ? 4 : 2; }

// The scalar conversions every storage path agrees with bit for bit: float32 to float16 or
// bfloat16 rounds to nearest, ties to even (subnormal halves included); NaN stays NaN (quiet, the
// top payload bits kept), infinities stay infinite, and a finite float beyond the type's range
// becomes an infinity (see rounds_to_infinity). The way back is exact.
std::uint16_t float_to_f16(float x);
float f16_to_float(std::uint16_t h);
std::uint16_t float_to_bf16(float x);
float bf16_to_float(std::uint16_t b);
// x stored as `type` and read back: x itself for f32.
float round_to(KvType type, float x);
// Is x finite while its `type` rounding is an infinity (|x| >= 65520 for f16)?
bool rounds_to_infinity(KvType type, float x);

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

// The library's one error type: invalid shapes, options, pointers and budgets. The message names
// the field and the value, e.g. "shape.head_dim = 0: must be at least 1".
class Error : public std::invalid_argument {
 public:
  Error(std::string field, std::string value, const std::string& why);
  const std::string& field() const { return field_; }
  const std::string& value() const { return value_; }

 private:
  std::string field_;
  std::string value_;
};

// ---------------------------------------------------------------------------------------------
// Scratch memory
// ---------------------------------------------------------------------------------------------

namespace driver {
class TaskRunner;
}

// Every kernel takes its scratch memory from a Workspace, which records the peak number of bytes
// it handed out at once. Memory is kept between calls, so a benchmark loop pays for page faults
// once. Not thread-safe: a multithreaded call gives each worker thread a child workspace, and
// peak_bytes() adds their peaks to this one's.
class Workspace {
 public:
  static constexpr std::size_t kAlignment = 64;  // one cache line; also the widest vector (AVX-512)

  Workspace();
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  // `count` uninitialised elements, kAlignment-aligned, valid until the enclosing Scope ends.
  template <class T>
  T* take(std::size_t count) {
    return static_cast<T*>(take_bytes(count * sizeof(T)));
  }

  // Everything taken while a Scope lives is given back when it ends.
  class Scope {
   public:
    explicit Scope(Workspace& ws) : ws_(ws), mark_(ws.in_use_) {}
    ~Scope() { ws_.give_back_to(mark_); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Workspace& ws_;
    std::size_t mark_;
  };

  std::size_t peak_bytes() const;
  void reset_peak();

 private:
  friend class driver::TaskRunner;  // gives each worker thread a child workspace

  void* take_bytes(std::size_t bytes);
  void give_back_to(std::size_t mark) noexcept;
  // Child workspace `index` of a multithreaded call; children are created by reserve_workers()
  // before the threads start and kept for reuse.
  void reserve_workers(std::size_t count);
  Workspace& worker(std::size_t index) { return *workers_[index]; }

  struct Block;
  std::vector<Block> blocks_;
  std::vector<std::unique_ptr<Workspace>> workers_;
  // The oneTBB arena of the last multithreaded call, kept for the next call with as many threads
  // (driver::TaskRunner says why); it lives and dies with the workspace, so its owner decides.
  struct Arena;
  std::unique_ptr<Arena> arena_;
  std::size_t in_use_ = 0;
  std::size_t peak_ = 0;
};

// ---------------------------------------------------------------------------------------------
// The registry of kernels
// ---------------------------------------------------------------------------------------------

enum class Strategy {
  naive,  // materialise the score matrix; three passes: score, normalise, blend
  tiled,  // online softmax over key blocks; scratch independent of kv_len
};

enum class Backend {
  scalar,    // plain loops, auto-vectorisation off
  autovec,   // the same loops, vectorised by the compiler for AVX2 + FMA
  simd,      // explicit xsimd micro-kernels, one variant per ISA
  openblas,  // the naive steps with OpenBLAS's sgemm (the baseline)
};

// The instruction set a kernel needs beyond plain x86-64. `avx2` means AVX2 + FMA.
enum class Isa { generic, sse4_2, avx2, avx512f };
inline constexpr std::size_t kIsas = 4;
// Does this CPU (and the OS, for the wider registers) support `isa`?
bool cpu_supports(Isa isa);

namespace kernels {
struct KernelCode;  // the entry points the driver calls (kernels/kernel_interface.hpp)
}

// One registry entry: named "strategy/backend[/isa]", e.g. "tiled/simd/avx2".
struct Kernel {
  std::string_view name;
  Strategy strategy;
  Backend backend;
  Isa isa;
  // A dispatching entry ("tiled/simd") has no code of its own: it runs its strategy and
  // backend's first available variant, the registry listing variants in ISA priority order.
  bool dispatches = false;
  // The entry points per K/V storage type (indexed by KvType): null where the kernel does not
  // store that type, all null for a dispatching entry.
  std::array<const kernels::KernelCode*, kKvTypes> codes{};
  const kernels::KernelCode* code(KvType type = KvType::f32) const {
    return codes[static_cast<std::size_t>(type)];
  }

  // Can this CPU run it? A dispatching entry: can it run any of its variants?
  bool available() const;
  // Does it have a backward pass (attention_backward)? A dispatching entry: does the variant
  // that runs here?
  bool has_backward() const;
  // Does it store K and V as `type` (Options::kv_type, KvCache)? A dispatching entry: does the
  // variant that runs here?
  bool stores(KvType type) const;
};

// Every kernel, in priority order: the first available one is the default.
std::span<const Kernel> registry();
// The kernel called `name`, or nullptr.
const Kernel* find_kernel(std::string_view name);
// The first available kernel of the registry.
const Kernel& default_kernel();
// The kernel that runs for `kernel` here: itself, or for a dispatching entry the best available
// ISA variant (itself if none is available, which validate() then reports).
const Kernel& resolve(const Kernel& kernel);
std::string_view to_string(Strategy strategy);
std::string_view to_string(Backend backend);
std::string_view to_string(Isa isa);

// ---------------------------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// The persistent KV cache
// ---------------------------------------------------------------------------------------------

// One layer's keys and values for batch x kv_heads heads, up to `capacity` tokens, kept in the
// packed layout a kernel reads, in one storage type. Prefill appends a block of tokens, decoding
// one at a time; each append packs (and rounds) only the new tokens, and attention() on
// Tensors::kv_cache then reads the cache as it is, with no copy. The layout is the resolved
// kernel's: a cache made for "tiled/simd" on an AVX-512 machine serves tiled/simd/avx512f and
// naive/simd/avx512f (the same layout), no other kernel. Not thread-safe while appending.
class KvCache {
 public:
  // Throws Error: a kernel that reads K and V in place (no packed layout to keep), a type it does
  // not store, a zero size, sizes whose bytes overflow.
  KvCache(const Kernel& kernel, std::size_t batch, std::size_t kv_heads, std::size_t head_dim,
          std::size_t capacity, KvType type);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  // Appends `tokens` tokens of every head: k and v are [batch][kv_heads][tokens][head_dim]
  // float32, rounded to the cache's type. Packs on `threads` threads (0: every core). Throws
  // Error, with the cache unchanged, for a null k or v, more tokens than the capacity has left,
  // or a finite value the type would turn into an infinity.
  void append(const float* k, const float* v, std::size_t tokens, std::size_t threads = 1);
  // Keeps the first `length` tokens and forgets the rest (a rejected speculative step rolled
  // back, or a benchmark's decode loop restarted); Error if the cache holds fewer.
  void truncate(std::size_t length);
  // Forgets every token (capacity and storage kept).
  void clear() { length_ = 0; }

  const Kernel& kernel() const { return kernel_; }
  KvType type() const { return type_; }
  std::size_t batch() const { return batch_; }
  std::size_t kv_heads() const { return kv_heads_; }
  std::size_t head_dim() const { return head_dim_; }
  std::size_t capacity() const { return capacity_; }
  std::size_t length() const { return length_; }
  // Bytes of K and V a call over the cache's `length()` tokens reads: 2 x length x head_dim x
  // element bytes per head (the layout's padding aside).
  std::size_t kv_bytes() const;
  // Bytes the cache holds, padding included.
  std::size_t storage_bytes() const { return heads() * head_bytes_; }
  // Head `index` (batch * kv_heads + key/value head)'s packed storage; for the driver.
  const void* head_storage(std::size_t index) const;

 private:
  std::size_t heads() const { return batch_ * kv_heads_; }

  const Kernel& kernel_;
  KvType type_;
  std::size_t batch_, kv_heads_, head_dim_, capacity_;
  std::size_t length_ = 0;
  std::size_t head_bytes_ = 0;
  struct Storage;
  std::unique_ptr<Storage> storage_;
};

// The scale a call uses: options.scale, or 1 / sqrt(head_dim) when it is unset.
float effective_scale(const Shape& shape, const Options& options);
// The worker threads a call runs on: options.threads, or every core the process may use when 0.
std::size_t worker_threads(const Options& options);
// Bytes of one head's full query-by-key score matrix in float32, as a naive kernel materialises it.
std::size_t naive_score_bytes(const Shape& shape);
// Half of this machine's physical memory: the default naive memory budget.
std::size_t default_memory_budget();

// The float64 oracle: the three steps written plainly (score every key, normalise with the row
// max subtracted, blend the values), one query row at a time. Not a kernel; the truth tests compare
// against. `o` has shape.q_elements() elements; `lse`, if not null, batch x q_heads x q_len (each
// row's log-sum-exp, as Tensors::lse). Validates the shape and options; throws Error.
void reference_attention(const Shape& shape, const Options& options, const float* q, const float* k,
                         const float* v, double* o, double* lse = nullptr);

// The backward oracle, as plainly: per query row, the weights p_j as reference_attention computes
// them, dp_j = dO_i . v_j, D = sum_j p_j dp_j, ds_j = p_j (dp_j - D), then dV_j += p_j dO_i,
// dQ_i = scale sum_j ds_j k_j, dK_j += scale ds_j q_i. Real = double is the oracle (tests check it
// against central differences of reference_attention); Real = float is the same loops in float32,
// the yardstick of the tests' error criterion (how much plain float32 arithmetic itself errs on a
// problem). `dq` has shape.q_elements() elements, `dk` and `dv` shape.kv_elements(). Validates
// the shape and options; throws Error.
template <class Real>
void reference_attention_backward(const Shape& shape, const Options& options, const float* q,
                                  const float* k, const float* v, const float* d_o, Real* dq,
                                  Real* dk, Real* dv);

// The backward's conditioning: the oracle's sums with every term replaced by its magnitude
// (|dp_j| by sum_c |dO_c v_jc|, dp_j - D by |dp_j| + |D|, Q, K, dO and the scale by theirs), so
// each element bounds how large the float terms its gradient element sums can be. Rounding
// errors scale with it where the gradient itself may cancel to zero (one key: dS = p (dp - D) = 0
// exactly, yet computed from two dot products in different orders). Shapes as above.
// `weights_below`: only the terms whose weight p_j is below it (the terms a float exp may flush
// to zero: their sum bounds what flushing them can cost).
void reference_backward_magnitudes(const Shape& shape, const Options& options, const float* q,
                                   const float* k, const float* v, const float* d_o, double* dq,
                                   double* dk, double* dv,
                                   double weights_below = std::numeric_limits<double>::infinity());

}  // namespace attnbench
