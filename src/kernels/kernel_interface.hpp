// The kernel interface: what the driver (attention.cpp) hands a kernel, the entry points a kernel
// offers it, and the block sizes they agree on. Internal to the library; its tests and benchmarks
// may read it, users see kernels only through <attnbench/registry.hpp>. The backward's thread
// ordering is kernels/backward_order.hpp, the block sizes kernels/block_sizes.hpp.
//
// Every kernel file exports one descriptor: a KernelCode for a portable kernel
// (<strategy>_<backend>.cpp), a SimdTable for one ISA's SIMD kernels (simd_<isa>.cpp). The
// registry (registry.cpp) builds its entries from those descriptors.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <tuple>

#include <attnbench/attnbench.hpp>

#include "kernels/backward_order.hpp"
#include "kernels/block_sizes.hpp"

namespace attnbench::kernels {

// ---------------------------------------------------------------------------------------------
// What a kernel computes
// ---------------------------------------------------------------------------------------------

// A mask tensor's rows for one problem (Options::mask), or none: row i of its query head h
// (counted from the problem's first) at keep or bias + h * head_stride + i * row_stride, one
// value per key. kernels/common.hpp applies them (apply_mask, masked_score), the SIMD kernels in
// Simd::modify_scores.
struct MaskRows {
  const std::uint8_t* keep = nullptr;
  const float* bias = nullptr;
  std::size_t head_stride = 0;  // elements; 0 where the tensor broadcasts over heads
  std::size_t row_stride = 0;   // elements; 0 where it broadcasts over rows

  explicit operator bool() const { return keep != nullptr || bias != nullptr; }
  std::size_t offset(std::size_t h, std::size_t i) const {
    return h * head_stride + i * row_stride;
  }
};

// The rows of query head q_head of batch `batch` (and of the heads after it) in Options::mask.
inline MaskRows mask_rows(const MaskTensor& m, std::size_t batch, std::size_t q_head) {
  if (m.empty()) return {};
  const auto [batch_stride, head_stride, row_stride] = m.strides();
  const std::size_t at = batch * batch_stride + q_head * head_stride;
  return {m.keep ? m.keep + at : nullptr, m.bias ? m.bias + at : nullptr, head_stride, row_stride};
}

// Blocks of a query row of d values quantised as q8_0 (Options::quantise_query): ggml's 32 a block.
constexpr std::size_t query_blocks(std::size_t d) { return (d + 31) / 32; }

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
  float softcap = 0.0f;  // Options::softcap, 0 for none
  // ALiBi: the slopes of the problem's query heads (row i's: alibi[i / head_rows]), or null
  const float* alibi = nullptr;
  KeyMask mask;     // which keys each of a head's rows sees, for head_rows rows
  MaskRows tensor;  // Options::mask's rows, within the keys `mask` leaves
  // This key/value head packed by KernelCode::packing (in the kernel's storage type), if any,
  // laid out for kv_capacity keys (kv_len for a call's own copy, more in a KvCache).
  const void* kv_packed = nullptr;
  std::size_t kv_capacity = 0;
  float* lse = nullptr;  // [q_len], each row's log-sum-exp, when the caller asks
  // Rows of one query head: q_len, or fewer when the driver folds the query heads that share a
  // key/value head into one problem (decoding), row i then being row i % head_rows of its head
  // for the mask.
  std::size_t head_rows = 0;
  // Options::quantise_query: q holds the rounded rows, and these their q8_0 blocks (rows of
  // query_blocks(head_dim) blocks from row 0 of q): 32 int8 codes a block, its scale (float16's
  // value as float) and the sum of its codes. Null otherwise.
  const std::int8_t* q_codes = nullptr;
  const float* q_scales = nullptr;
  const std::int32_t* q_sums = nullptr;

  // Row i's ALiBi slope (0 without ALiBi) and diagonal key: its score for key j gains
  // -slope * |j - diagonal|.
  float alibi_slope(std::size_t i) const {
    return alibi ? alibi[i < head_rows ? 0 : i / head_rows] : 0.0f;
  }
  std::int64_t diagonal(std::size_t i) const {
    return mask.diagonal(i < head_rows ? i : i % head_rows);
  }
  // Where row i's values start in the mask tensor (`tensor`), key 0.
  std::size_t tensor_row(std::size_t i) const {
    return i < head_rows ? tensor.offset(0, i) : tensor.offset(i / head_rows, i % head_rows);
  }
  // Whether scores change before the softmax beyond the scale (soft-cap, ALiBi, mask tensor).
  bool modifies_scores() const { return softcap > 0.0f || alibi != nullptr || bool(tensor); }
  // Whether the only change is a boolean mask tensor's -inf, which raw scores can take before the
  // softmax sweeps scale them (a scale above 0 keeps -inf): Simd::drop_removed.
  bool only_drops_keys() const {
    return tensor.keep != nullptr && softcap == 0.0f && alibi == nullptr && scale > 0.0f;
  }
  // The keys query row i sees: attnbench::KeyMask for this head.
  KeySpan visible(std::size_t i) const { return mask.row(i < head_rows ? i : i % head_rows); }
  // The keys any of rows [i, i + count) sees: a block skips the keys outside them.
  KeySpan visible_rows(std::size_t i, std::size_t count) const {
    const std::size_t first = i < head_rows ? i : i % head_rows;
    // A block across two heads' rows (folded) sees what a head's first and last rows see.
    if (first + count > head_rows) return {mask.row(0).begin, mask.row(head_rows - 1).end};
    return mask.rows(first, count);
  }
  // Whether every one of rows [i, i + count) sees every key of [j0, j0 + bc).
  bool seen_by_all(std::size_t i, std::size_t count, std::size_t j0, std::size_t bc) const {
    const std::size_t first = i < head_rows ? i : i % head_rows;
    const bool wraps = first + count > head_rows;  // folded: a head's last and first rows
    const std::size_t last = wraps ? head_rows - 1 : first + count - 1;
    return mask.row(last).begin <= j0 && mask.row(wraps ? 0 : first).end >= j0 + bc;
  }
};

// The first key of the grid of `step` keys from `origin` at or before `key` (origin if key is
// before it): where a block that must hold `key` starts.
inline std::size_t on_grid(std::size_t origin, std::size_t key, std::size_t step) {
  return key <= origin ? origin : origin + (key - origin) / step * step;
}

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

// One (batch, key/value head) of a backward call, with the `group` query heads that read it.
// Query head g of the group: its rows at q + g * q_len * head_dim (likewise d_o, dq), its LSE and
// D = rowsum(dO * O) at lse + g * q_len and delta + g * q_len.
struct BackwardProblem {
  const float* q;
  const float* d_o;
  const float* lse;
  const float* delta;
  float* dq;  // zeroed by the driver; the kernels add to it
  const float* k;
  const float* v;
  float* dk;               // zeroed by the driver
  float* dv;               // zeroed by the driver
  const float* kv_packed;  // this key/value head packed by Backward::packing, if any
  // The group's query heads' Q and dO rows packed by Backward::row_packing, if any: head g's at
  // rows_packed + g * rows_packed_floats.
  const float* rows_packed = nullptr;
  std::size_t rows_packed_floats = 0;
  std::size_t group;
  std::size_t q_len;
  std::size_t kv_len;
  std::size_t head_dim;
  float scale;
  float softcap;       // Options::softcap, 0 for none
  const float* alibi;  // ALiBi: the group's query heads' slopes (head g's: alibi[g]), or null
  KeyMask mask;
  MaskRows tensor;        // Options::mask's rows: head g's row i at tensor.offset(g, i)
  std::size_t key_block;  // Backward::key_block(head_dim): a task's keys start at its multiples
  DqOrder dq_order;       // heads counted from the group's first query head
  DkvOrder dkv_order;     // key blocks of this key/value head
  // Naive kernels: the query head's materialised P and dS, q_len rows of p_stride floats each
  // (kv_len rounded up to kNaiveRowAlign, so that every row starts on a whole SIMD panel).
  float* p = nullptr;
  float* ds = nullptr;
  std::size_t p_stride = 0;

  KeySpan visible(std::size_t i) const { return mask.row(i); }
  // Query head g of the group: its rows of Q, dO and dQ, its LSE and D.
  struct HeadRows {
    const float* q;
    const float* d_o;
    const float* lse;
    const float* delta;
    float* dq;
  };
  HeadRows head(std::size_t g) const {
    const std::size_t rows = g * q_len;
    return {q + rows * head_dim, d_o + rows * head_dim, lse + rows, delta + rows,
            dq + rows * head_dim};
  }
  // The query rows that see key j: [first_row_seeing(j), last_row_seeing(j)).
  std::size_t first_row_seeing(std::size_t j) const { return mask.first_row(j); }
  std::size_t last_row_seeing(std::size_t j) const { return mask.last_row(j); }
  // dQ's turn (DqOrder) of key block `block` on the rows from i0: key blocks add to a row block
  // in order from the first one its rows' window reaches (block 0 without a window), which
  // takes turn 0. A task takes row block i0 iff i0 + (rows a block) > first_row_seeing(its first
  // key) and i0 < last_row_seeing(its last key).
  std::size_t dq_turn(std::size_t i0, std::size_t block) const {
    return block - mask.window_start(i0) / key_block;
  }
};

// ---------------------------------------------------------------------------------------------
// What a kernel offers the driver
// ---------------------------------------------------------------------------------------------

// Computes the output rows `rows` of one head, all scratch from `ws`.
using ComputeRows = void (*)(const HeadProblem& head, RowRange rows, Workspace& ws);
// The same over keys `keys` only (keys.begin a multiple of kKeyChunk), leaving a PartialRows.
using ComputePartial = void (*)(const HeadProblem& head, RowRange rows, KeyRange keys,
                                PartialRows out, Workspace& ws);

// How a kernel's forward blocks one head, for a head dim: the rows that share one pass over K
// and V (Br), the keys of a block (Bc), the micro-tile of the products (MR rows x NR keys; keys
// padded to whole NR panels), the head dim its V rows and accumulators are padded to, and for a
// naive kernel how its passes sweep the score matrix. The cost counts (src/forward_counts.cpp) are
// computed from it.
// A key_block of kNoKeyBlocks: every key at once (the plain loops, OpenBLAS's calls).
inline constexpr std::size_t kNoKeyBlocks = ~std::size_t{0};

// The rows of each group of micro-tiles of at most `mr` rows that a block of `rows` rows splits
// into: as few groups as whole tiles allow, each ceil(rows / groups) rows, the last the rest
// (16 rows of 12-row tiles: 8 + 8, not 12 + 4). The SIMD kernels group rows so; the cost counts
// follow them.
inline std::size_t row_group(std::size_t rows, std::size_t mr) {
  const std::size_t groups = (rows + mr - 1) / mr;
  return groups == 0 ? mr : (rows + groups - 1) / groups;
}
struct ForwardBlocking {
  std::size_t query_block;
  std::size_t key_block;
  std::size_t mr = 1;
  std::size_t nr = 1;
  std::size_t padded_dim;
  // Naive kernels: sweeps of the score matrix, each reading or writing every visible score once
  // (the score pass's write, then each pass's reads and writes up to the blend's read).
  std::size_t score_sweeps = 0;
  // Naive kernels that score every key and mask afterwards (one sgemm per row block): the score
  // product and its K stream cover all keys under the causal mask too.
  bool scores_masked_keys = false;
  // Tiled SIMD kernels: a head of more than chunk_keys keys is computed in chunks of that many
  // keys (K and V kept in L3), each passed over by super_blocks query blocks at once (0: never).
  std::size_t chunk_keys = 0;
  std::size_t super_blocks = 1;
};

// The forward pass of one kernel.
struct Forward {
  ComputeRows rows = nullptr;
  ComputePartial partial = nullptr;  // tiled kernels: part of the keys, for split-key decoding
  // The rows that share one pass over K and V, for a head dim: kRowsPerTask times a power of two
  // (null: kRowsPerTask). The driver makes parallel tasks of it while they stay many enough.
  std::size_t (*query_block)(std::size_t head_dim) = nullptr;
  // Its blocking (null: one query row at a time against every key, unpadded, as plain loops do).
  ForwardBlocking (*blocking)(std::size_t head_dim) = nullptr;
};

// Optional step before compute: a kernel that streams K and V in a layout of its own packs them
// once per (batch, key/value head), and every query head of the group reads that copy. `pack`
// packs keys [first, last) of one head (first a multiple of kPackKeys), so a head packs in
// parallel.
// `pack` writes keys [first, last) of one head into a layout for `capacity` keys (kv_len for a
// call's own copy), k and v pointing at key `first`'s rows; the last panel is padded with zero
// keys when `last` reaches the capacity. A KvCache appends through it, any `first`.
struct KvPacking {
  std::size_t (*bytes)(std::size_t capacity, std::size_t head_dim) = nullptr;  // per head
  void (*pack)(const float* k, const float* v, std::size_t capacity, std::size_t head_dim,
               std::size_t first, std::size_t last, void* packed) = nullptr;
};

// A backward kernel's own layout of each query head's Q and dO rows, packed once per call by the
// driver: rows [first, last) of a head (first a multiple of kRowsPerTask, last too or q_len) into
// the head's `bytes(q_len, head_dim)` at out.
struct RowPacking {
  std::size_t (*bytes)(std::size_t q_len, std::size_t head_dim) = nullptr;
  void (*pack)(const float* q, const float* d_o, std::size_t q_len, std::size_t head_dim,
               std::size_t first, std::size_t last, void* out) = nullptr;
};

// The backward pass of one kernel, in one of two shapes.
// Tiled: `keys` computes key block `keys` (of `key_block` keys, the last one shorter) of one
// key/value head over every query row of its group: recomputes P = exp(scale Q K^T - LSE) tile by
// tile, dS = scale P (dO V^T - D), accumulates dV = P^T dO and dK = dS^T Q for its keys, and adds
// dQ += dS K through problem.dq_order.
// Naive: per query head g of the group, `rows` materialises that head's P and dS rows in
// problem.p and problem.ds and writes dQ = dS K for them; then `key_rows` adds P^T dO and dS^T Q
// to dV and dK for key block `keys`, over every row.
// `key_block(head_dim)` depends on the kernel, the head dim and the caches this CPU reports,
// never on the thread count, so that every sum runs in the same order whatever the threads.
struct Backward {
  std::size_t (*key_block)(std::size_t head_dim) = nullptr;
  void (*keys)(const BackwardProblem& problem, KeyRange keys, RowRange rows,
               Workspace& ws) = nullptr;
  void (*rows)(const BackwardProblem& problem, std::size_t g, RowRange rows,
               Workspace& ws) = nullptr;
  void (*key_rows)(const BackwardProblem& problem, std::size_t g, KeyRange keys,
                   Workspace& ws) = nullptr;
  KvPacking packing = {};       // the backward's own packed layout of K and V, if any
  RowPacking row_packing = {};  // and of Q and dO
};

// Everything the driver calls for one registry entry and K/V storage type (kernels::code(kernel,
// type)): a 16-bit type is a further KernelCode whose packing rounds and whose kernels read that
// type.
struct KernelCode {
  Forward forward;
  KvPacking packing = {};  // none: the kernel reads K and V as they are
  Backward backward = {};  // none: all null
};

// One ISA's SIMD kernels: naive_simd.hpp and tiled_simd.hpp instantiated for that ISA by its one
// translation unit simd_<isa>.cpp, the only file compiled with the ISA's flags. Both strategies
// read the same packed layout.
// A tiled forward with one phase alone, for the cost model (bench/): the same loops as its
// forward.rows doing only the score product S = Q K^T, only the softmax's sweeps (scale and max,
// exp and sum, on a score tile that starts zeroed and then holds their own output; a bf16 kernel's
// rounding of P with them), or only the blend O += P V. Their output is not attention.
struct TiledPhases {
  ComputeRows score, softmax, blend;
};

struct SimdTable {
  Isa isa;
  KernelCode naive[kKvTypes];  // indexed by KvType
  KernelCode tiled[kKvTypes];
  void (*exp)(const float* x, float* y, std::size_t n);   // the kernels' vector exp and
  void (*exp2)(const float* x, float* y, std::size_t n);  // exp2, for their tests
  TiledPhases phases;                                     // of tiled[f32]
  // One score row in place: s = s * scale, then softmax over its `count` elements (max
  // subtracted, that exp); returns the row sum l (0 means a zero row) and, when `lse` is not
  // null, writes the row's log-sum-exp there. For naive/openblas.
  float (*softmax_row)(float* s, std::size_t count, float scale, float* lse);
  // n stored float16 / bfloat16 values (n a multiple of the vector width) widened to float32 by
  // the kernels' own vector load, for its tests.
  void (*widen_f16)(const std::uint16_t* in, float* out, std::size_t n);
  void (*widen_bf16)(const std::uint16_t* in, float* out, std::size_t n);
  // n floats rounded to float16 / bfloat16 by the kernels' packing's vector conversion.
  void (*narrow_f16)(const float* in, std::uint16_t* out, std::size_t n);
  void (*narrow_bf16)(const float* in, std::uint16_t* out, std::size_t n);
};

// One ISA's bf16-products SIMD kernels (Products::bf16): tiled_bf16.hpp instantiated by its one
// translation unit bf16_<isa>.cpp. Its code stores K and V as bf16.
struct Bf16Table {
  Isa isa;
  KernelCode tiled;
  TiledPhases phases;  // of tiled
};

// The descriptors, one per kernel file.
extern const SimdTable simd_sse4_2;
extern const SimdTable simd_avx2;
extern const SimdTable simd_avx512f;
extern const KernelCode naive_scalar;
extern const KernelCode tiled_scalar;
extern const KernelCode naive_autovec;
extern const KernelCode tiled_autovec;
extern const KernelCode naive_openblas;
extern const Bf16Table bf16_avx512bf16;
extern const Bf16Table bf16_amxbf16;
extern const KernelCode tiled_scalar_bf16;

// Every SimdTable, widest ISA first: the order dispatch tries them in (registry.cpp).
std::span<const SimdTable* const> simd_tables();
// The bf16-products descriptors, widest ISA first.
std::span<const Bf16Table* const> bf16_tables();

// Bytes of the packed K and V copy a call with `packing` makes of one (batch, key/value head),
// padded to whole cache lines so that every head's copy starts aligned: 0 for a kernel that
// reads K and V in place.
inline std::size_t packed_bytes_per_head(const KvPacking& packing, std::size_t capacity,
                                         std::size_t head_dim) {
  if (packing.bytes == nullptr) return 0;
  constexpr std::size_t kLine = Workspace::kAlignment;
  return (packing.bytes(capacity, head_dim) + kLine - 1) / kLine * kLine;
}
inline std::size_t packed_bytes(const KvPacking& packing, const Shape& shape) {
  return shape.batch * shape.kv_heads *
         packed_bytes_per_head(packing, shape.kv_len, shape.head_dim);
}

// `kernel`'s code for K/V storage `type`, from the registry (registry.cpp): null where the kernel
// does not store that type, and for a dispatching entry (resolve() it first).
const KernelCode* code(const Kernel& kernel, KvType type = KvType::f32);
// The type a call with `options` stores K and V in with `kernel` (resolved): options.kv_type,
// or bf16 for a bf16-products kernel left at the default f32.
KvType stored_type(const Kernel& kernel, const Options& options);

}  // namespace attnbench::kernels
