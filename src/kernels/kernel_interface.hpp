// The kernel interface: what the driver (attention.cpp) hands a kernel, the entry points a kernel
// offers it, and the block sizes they agree on. Internal to the library; its tests and benchmarks
// may read it, users see kernels only through attnbench.hpp's registry.
//
// Every kernel file exports one descriptor: a KernelCode for a portable kernel
// (<strategy>_<backend>.cpp), a SimdTable for one ISA's SIMD kernels (simd_<isa>.cpp). The
// registry (registry.cpp) builds its entries from those descriptors.
#pragma once

#include <cstddef>
#include <span>

#include "attnbench.hpp"

namespace attnbench::kernels {

// ---------------------------------------------------------------------------------------------
// What a kernel computes
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
  const float* kv_packed = nullptr;  // this key/value head packed by KernelCode::packing, if any

  // Number of keys query row i may attend to: attnbench::visible_keys for this head.
  std::size_t visible_keys(std::size_t i) const {
    return attnbench::visible_keys(Shape{.q_len = q_len, .kv_len = kv_len}, causal, i);
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

// ---------------------------------------------------------------------------------------------
// Block sizes the driver and the kernels agree on. Each kernel checks its own blocks against
// these with a static_assert beside its block constants.
// ---------------------------------------------------------------------------------------------

// Query rows per parallel task when a call runs on more than one thread (one thread takes each
// head whole): the SIMD kernels' query block Br (8 groups of 6 rows). Small enough that a single
// head of moderate length makes many tasks, so work stealing balances two threads to within one
// block; large enough that a task's work (48 x kv_len x d x 4 FLOPs) dwarfs the cost of
// scheduling it. Kernels whose rounding depends on how rows are grouped (naive/openblas) group
// them in blocks that divide it, so a row's result is the same for every thread count.
inline constexpr std::size_t kRowsPerTask = 48;

// Keys per packing task: a multiple of every packed panel's width, so tasks write whole panels
// and one long head (decoding) packs on every thread.
inline constexpr std::size_t kPackKeys = 256;

// Keys per chunk of split-key decoding: a multiple of every key block, so a chunk is whole key
// blocks and a row's arithmetic within it is the same as in an unsplit call's blocks.
inline constexpr std::size_t kKeyChunk = 2048;

// ---------------------------------------------------------------------------------------------
// What a kernel offers the driver
// ---------------------------------------------------------------------------------------------

// Computes the output rows `rows` of one head, all scratch from `ws`.
using ComputeRows = void (*)(const HeadProblem& head, RowRange rows, Workspace& ws);
// The same over keys `keys` only (keys.begin a multiple of kKeyChunk), leaving a PartialRows.
using ComputePartial = void (*)(const HeadProblem& head, RowRange rows, KeyRange keys,
                                PartialRows out, Workspace& ws);

// The forward pass of one kernel.
struct Forward {
  ComputeRows rows = nullptr;
  ComputePartial partial = nullptr;  // tiled kernels: part of the keys, for split-key decoding
};

// Optional step before compute: a kernel that streams K and V in a layout of its own packs them
// once per (batch, key/value head), and every query head of the group reads that copy. `pack`
// packs keys [first, last) of one head (first a multiple of kPackKeys), so a head packs in
// parallel.
struct KvPacking {
  std::size_t (*floats)(std::size_t kv_len, std::size_t head_dim) = nullptr;  // per head
  void (*pack)(const float* k, const float* v, std::size_t kv_len, std::size_t head_dim,
               std::size_t first, std::size_t last, float* packed) = nullptr;
};

// Everything the driver calls for one registry entry. A backward pass is a further member beside
// `forward`; a K/V storage type (f16, bf16) a further KernelCode whose packing converts.
struct KernelCode {
  Forward forward;
  KvPacking packing = {};  // none: the kernel reads K and V as they are
};

// One ISA's SIMD kernels: naive_simd.hpp and tiled_simd.hpp instantiated for that ISA by its one
// translation unit simd_<isa>.cpp, the only file compiled with the ISA's flags. Both strategies
// read the same packed layout.
struct SimdTable {
  Isa isa;
  KernelCode naive;
  KernelCode tiled;
  void (*exp)(const float* x, float* y, std::size_t n);  // the kernels' vector exp, for its tests
  // One score row in place: s = s * scale, then softmax over its `count` elements (max
  // subtracted, that exp); returns the row sum l (0 means a zero row). For naive/openblas.
  float (*softmax_row)(float* s, std::size_t count, float scale);
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

// Every SimdTable, widest ISA first: the order dispatch tries them in (registry.cpp).
std::span<const SimdTable* const> simd_tables();

// Bytes of the packed K and V copy a call with `kernel` (a registry entry with code) makes: 0 for
// a kernel that reads them in place, otherwise every (batch, key/value head) padded to whole cache
// lines, so every head's packed copy starts aligned.
inline std::size_t packed_floats_per_head(const KernelCode& code, const Shape& shape) {
  if (code.packing.floats == nullptr) return 0;
  constexpr std::size_t kLine = Workspace::kAlignment / sizeof(float);
  return (code.packing.floats(shape.kv_len, shape.head_dim) + kLine - 1) / kLine * kLine;
}
inline std::size_t packed_bytes(const KernelCode& code, const Shape& shape) {
  return shape.batch * shape.kv_heads * packed_floats_per_head(code, shape) * sizeof(float);
}

}  // namespace attnbench::kernels
