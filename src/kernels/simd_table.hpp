// The SimdTable of one ISA: naive_simd.hpp, tiled_simd.hpp and their shared packing instantiated
// for the xsimd architecture `Arch`. Included only by the simd_<isa>.cpp files, each compiled with
// its ISA's flags; internal linkage keeps every ISA's copy of the code apart.
#pragma once

#include "kernels/naive_simd.hpp"
#include "kernels/simd_backward.hpp"
#include "kernels/tiled_simd.hpp"

namespace attnbench::kernels {
namespace {

template <class Arch>
void naive_rows(const HeadProblem& head, RowRange rows, Workspace& ws) {
  NaiveSimd<Arch>::compute(head, rows, ws);
}

template <class Arch>
void tiled_rows(const HeadProblem& head, RowRange rows, Workspace& ws) {
  TiledSimd<Arch>::compute(head, rows, KeyRange{0, head.kv_len}, nullptr, ws);
}

template <class Arch>
void tiled_partial(const HeadProblem& head, RowRange rows, KeyRange keys, PartialRows out,
                   Workspace& ws) {
  TiledSimd<Arch>::compute(head, rows, keys, &out, ws);
}

template <class Arch>
constexpr SimdTable simd_table(Isa isa) {
  const KvPacking packing{Simd<Arch>::packed_floats, Simd<Arch>::pack};
  const KvPacking backward_packing{SimdBackward<Arch>::packed_floats, SimdBackward<Arch>::pack};
  return SimdTable{
      .isa = isa,
      .naive = {.forward = {.rows = naive_rows<Arch>},
                .packing = packing,
                .backward = {.key_block = SimdBackward<Arch>::key_block,
                             .rows = NaiveSimdBackward<Arch>::rows,
                             .key_rows = NaiveSimdBackward<Arch>::key_rows,
                             .packing = backward_packing}},
      .tiled = {.forward = {.rows = tiled_rows<Arch>, .partial = tiled_partial<Arch>},
                .packing = packing,
                .backward = {.key_block = SimdBackward<Arch>::key_block,
                             .keys = TiledSimdBackward<Arch>::keys,
                             .packing = backward_packing}},
      .exp = Simd<Arch>::exp_array,
      .softmax_row = Simd<Arch>::softmax_row,
  };
}

}  // namespace
}  // namespace attnbench::kernels
