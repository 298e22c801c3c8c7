// The SimdTable of one ISA: naive_simd.hpp, tiled_simd.hpp and their shared packing instantiated
// for the xsimd architecture `Arch` and each K/V storage type. Included only by the simd_<isa>.cpp
// files, each compiled with its ISA's flags; internal linkage keeps every ISA's copy of the code
// apart.
#pragma once

#include "kernels/naive_simd.hpp"
#include "kernels/simd_backward.hpp"
#include "kernels/tiled_simd.hpp"

namespace attnbench::kernels {
namespace {

template <class Arch, class T>
void naive_rows(const HeadProblem& head, RowRange rows, Workspace& ws) {
  NaiveSimd<Arch, T>::compute(head, rows, ws);
}

template <class Arch, class T>
void tiled_rows(const HeadProblem& head, RowRange rows, Workspace& ws) {
  TiledSimd<Arch, T>::compute(head, rows, KeyRange{0, head.kv_len}, nullptr, ws);
}

template <class Arch, class T>
void tiled_partial(const HeadProblem& head, RowRange rows, KeyRange keys, PartialRows out,
                   Workspace& ws) {
  TiledSimd<Arch, T>::compute(head, rows, keys, &out, ws);
}

template <class Arch, unsigned Phase>
void tiled_phase(const HeadProblem& head, RowRange rows, Workspace& ws) {
  TiledSimd<Arch, float>::template compute<Phase>(head, rows, KeyRange{0, head.kv_len}, nullptr,
                                                  ws);
}

template <class Arch>
std::size_t tiled_query_block(std::size_t head_dim) {
  return Simd<Arch>::query_block(Simd<Arch>::padded_dim(head_dim));
}

template <class Arch>
ForwardBlocking naive_blocking(std::size_t head_dim) {
  using S = Simd<Arch>;
  const std::size_t dp = S::padded_dim(head_dim);
  // The score pass writes S; scale-and-max reads it; exp-and-sum reads and rewrites it; the
  // blend reads it: 5 sweeps.
  return {.query_block = S::Br,
          .key_block = S::key_block(dp),
          .mr = S::MR,
          .nr = S::NR,
          .padded_dim = dp,
          .score_sweeps = 5};
}

template <class Arch>
ForwardBlocking tiled_blocking(std::size_t head_dim) {
  using S = Simd<Arch>;
  const std::size_t dp = S::padded_dim(head_dim);
  return {.query_block = S::query_block(dp),
          .key_block = S::key_block(dp),
          .mr = S::MR,
          .nr = S::NR,
          .padded_dim = dp,
          .chunk_keys = S::l3_keys(dp),
          .super_blocks = S::super_blocks(dp)};
}

// One strategy's code for storage type T; the backward (float32 K/V only) with T = float.
template <class Arch, class T>
constexpr KernelCode naive_code() {
  KernelCode code{.forward = {.rows = naive_rows<Arch, T>, .blocking = naive_blocking<Arch>},
                  .packing = {Simd<Arch>::template packed_bytes<T>, Simd<Arch>::template pack<T>}};
  if constexpr (std::is_same_v<T, float>) {
    code.backward = {.key_block = SimdBackward<Arch>::key_block,
                     .rows = NaiveSimdBackward<Arch>::rows,
                     .key_rows = NaiveSimdBackward<Arch>::key_rows,
                     .packing = {SimdBackward<Arch>::packed_bytes, SimdBackward<Arch>::pack}};
  }
  return code;
}

template <class Arch, class T>
constexpr KernelCode tiled_code() {
  KernelCode code{.forward = {.rows = tiled_rows<Arch, T>,
                              .partial = tiled_partial<Arch, T>,
                              .query_block = tiled_query_block<Arch>,
                              .blocking = tiled_blocking<Arch>}};
  if constexpr (kQuantised<T>) {
    code.packing = {QuantPacking<Arch, T>::packed_bytes, QuantPacking<Arch, T>::pack};
  } else {
    code.packing = {Simd<Arch>::template packed_bytes<T>, Simd<Arch>::template pack<T>};
  }
  if constexpr (std::is_same_v<T, float>) {
    code.backward = {.key_block = SimdBackward<Arch>::key_block,
                     .keys = TiledSimdBackward<Arch>::keys,
                     .packing = {SimdBackward<Arch>::packed_bytes, SimdBackward<Arch>::pack},
                     .row_packing = {SimdBackward<Arch>::row_bytes, SimdBackward<Arch>::pack_rows}};
  }
  return code;
}

template <class Arch>
constexpr SimdTable simd_table(Isa isa) {
  return SimdTable{
      .isa = isa,
      // naive/simd stores no quantised type: its passes read the packed K and V by whole rows.
      .naive = {naive_code<Arch, float>(), naive_code<Arch, Half>(), naive_code<Arch, BFloat16>(),
                KernelCode{}, KernelCode{}},
      .tiled = {tiled_code<Arch, float>(), tiled_code<Arch, Half>(), tiled_code<Arch, BFloat16>(),
                tiled_code<Arch, Q8_0>(), tiled_code<Arch, Q4_0>()},
      .exp = Simd<Arch>::exp_array,
      .exp2 = Simd<Arch>::exp2_array,
      .phases = {tiled_phase<Arch, kScorePhase>, tiled_phase<Arch, kSoftmaxPhase>,
                 tiled_phase<Arch, kBlendPhase>},
      .softmax_row = Simd<Arch>::softmax_row,
      .widen_f16 = Simd<Arch>::template widen_array<Half>,
      .widen_bf16 = Simd<Arch>::template widen_array<BFloat16>,
      .narrow_f16 = Simd<Arch>::template narrow_array<Half>,
      .narrow_bf16 = Simd<Arch>::template narrow_array<BFloat16>,
  };
}

}  // namespace
}  // namespace attnbench::kernels
