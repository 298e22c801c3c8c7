// attnbench: scaled dot-product attention on the CPU, O = softmax(Q K^T * scale) V.
//
// The one public header. It holds the problem description (Shape, Options, Tensors), the
// library's error type, the scratch Workspace, the kernel interface and the registry of kernels,
// and the entry point attention().
//
// Layout: Q and O are [batch][q_heads][q_len][head_dim], K and V are
// [batch][kv_heads][kv_len][head_dim], contiguous row-major float32. Grouped-query attention:
// query head h reads key/value head h / (q_heads / kv_heads).
#pragma once

#include <cstddef>
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

struct Options {
  // Causal mask aligned to the bottom-right: query i sees keys j <= i + (kv_len - q_len).
  bool causal = false;
  // Multiplies every score; unset means 1 / sqrt(head_dim). 0 is allowed (uniform weights).
  std::optional<float> scale;
  // Largest naive score matrix (bytes) a call may materialise; 0 means half of physical RAM.
  std::size_t memory_budget_bytes = 0;
  // Worker threads for attention(); 0 means every core, 1 runs inline on the caller's thread.
  std::size_t threads = 1;
};

struct Tensors {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  float* o = nullptr;
};

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

  // Child workspace `index` of a multithreaded call; children are created by reserve_workers()
  // before the threads start and kept for reuse.
  void reserve_workers(std::size_t count);
  Workspace& worker(std::size_t index) { return *workers_[index]; }

 private:
  void* take_bytes(std::size_t bytes);
  void give_back_to(std::size_t mark) noexcept;

  struct Block;
  std::vector<Block> blocks_;
  std::vector<std::unique_ptr<Workspace>> workers_;
  std::size_t in_use_ = 0;
  std::size_t peak_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Kernel interface and registry
// ---------------------------------------------------------------------------------------------

// One (batch, query head) slice of the problem: that head's Q and O rows, and the K and V of the
// key/value head it reads.
struct HeadProblem {
  const float* q;  // [q_len][head_dim]
  const float* k;  // [kv_len][head_dim]
  const float* v;  // [kv_len][head_dim]
  float* o;        // [q_len][head_dim]
  std::size_t q_len;
  std::size_t kv_len;
  std::size_t head_dim;
  float scale;
  bool causal;
  const float* kv_packed = nullptr;  // this key/value head packed by Kernel::packing, if it has one

  // Number of keys query row i may attend to: all of them, or under the bottom-right causal mask
  // min(kv_len, max(0, i + 1 + kv_len - q_len)).
  std::size_t visible_keys(std::size_t i) const {
    if (!causal) return kv_len;
    const std::size_t seen = i + 1 + kv_len;  // no overflow: validated sizes are far below 2^63
    return seen <= q_len ? 0 : (seen - q_len < kv_len ? seen - q_len : kv_len);
  }
};

// Query rows [begin, end) of one HeadProblem.
struct RowRange {
  std::size_t begin;
  std::size_t end;
};

// Keys [begin, end) of one head.
struct KeyRange {
  std::size_t begin;
  std::size_t end;
};

// A tiled kernel's result for rows over part of the keys, before normalisation: per row the max
// m of its scores there, l = sum_j exp(s_j - m) and o = sum_j exp(s_j - m) v_j (head_dim floats a
// row). Results over disjoint key ranges merge exactly: rescale each by exp(m_part - m_max).
struct PartialRows {
  float* o;
  float* m;
  float* l;
};

enum class Strategy {
  naive,  // materialise the score matrix; three passes: score, normalise, blend
  tiled,  // online softmax over key blocks; scratch independent of kv_len
};

// A kernel computes the output rows `rows` of one head. It takes all scratch from `ws`.
using ComputeRows = void (*)(const HeadProblem& head, RowRange rows, Workspace& ws);
// The same over keys `keys` only (keys.begin a multiple of 2048), leaving a PartialRows.
using ComputePartial = void (*)(const HeadProblem& head, RowRange rows, KeyRange keys,
                                PartialRows out, Workspace& ws);

// Optional step before compute: a kernel that streams K and V in a layout of its own packs them
// once per (batch, key/value head), and every query head of the group reads that copy. `pack`
// packs keys [first, last) of one head (first a multiple of 256), so a head packs in parallel.
struct KvPacking {
  std::size_t (*floats)(std::size_t kv_len, std::size_t head_dim) = nullptr;  // per head
  void (*pack)(const float* k, const float* v, std::size_t kv_len, std::size_t head_dim,
               std::size_t first, std::size_t last, float* packed) = nullptr;
};

struct Kernel {
  std::string_view name;  // "strategy/backend[/isa]", e.g. "tiled/simd/avx2"
  Strategy strategy;
  bool (*available)();    // can this CPU run it?
  ComputeRows compute;    // null for a dispatching entry
  KvPacking packing = {};  // none: the kernel reads K and V as they are
  ComputePartial partial = nullptr;  // tiled kernels: part of the keys, for split-key decoding
  // A dispatching entry ("tiled/simd") has no code of its own: it runs the first available
  // registry kernel named "<name>/<isa>", the registry being in priority order.
  bool dispatches = false;
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

// The scale a call uses: options.scale, or 1 / sqrt(head_dim) when it is unset.
float effective_scale(const Shape& shape, const Options& options);
// The worker threads a call runs on: options.threads, or every core the process may use when 0.
std::size_t worker_threads(const Options& options);
// Bytes of one head's full query-by-key score matrix in float32, as a naive kernel materialises it.
std::size_t naive_score_bytes(const Shape& shape);
// Bytes of the packed K and V copy a call with `kernel` (resolved) makes: 0 for a kernel that reads
// them in place, otherwise every (batch, key/value head) padded to whole cache lines.
std::size_t packed_bytes(const Kernel& kernel, const Shape& shape);
// Half of this machine's physical memory: the default naive memory budget.
std::size_t default_memory_budget();
// Query rows per parallel task when a call runs on more than one thread (one thread takes each
// head whole): the SIMD kernels' query block (8 groups of 6 rows). Small enough that a single head
// of moderate length makes many tasks, so work stealing balances two threads to within one block;
// large enough that a task's work (48 x kv_len x d x 4 FLOPs) dwarfs the cost of scheduling it.
inline constexpr std::size_t kRowsPerTask = 48;

// The float64 oracle: the three steps written plainly (score every key, normalise with the row
// max subtracted, blend the values), one query row at a time. Not a kernel; the truth tests compare
// against. `o` has shape.q_elements() elements. Validates the shape and options; throws Error.
void reference_attention(const Shape& shape, const Options& options, const float* q,
                         const float* k, const float* v, double* o);

}  // namespace attnbench
