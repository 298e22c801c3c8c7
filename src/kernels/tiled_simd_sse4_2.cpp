// tiled/simd/sse4.2: tiled_simd.hpp instantiated for SSE4.2, and the packed K/V layout both SIMD
// strategies read on it. This file alone is
// compiled with -msse4.2. SSE4.2 has no FMA: xsimd's fma() is a multiply and an add here. (src/CMakeLists.txt)
#include "kernels/tiled_simd.hpp"

namespace attnbench::kernels {

void tiled_simd_sse4_2(const HeadProblem& head, RowRange rows, Workspace& ws) {
  TiledSimd<xsimd::sse4_2>::compute(head, rows, KeyRange{0, head.kv_len}, nullptr, ws);
}

void tiled_simd_sse4_2_partial(const HeadProblem& head, RowRange rows, KeyRange keys,
                             PartialRows out, Workspace& ws) {
  TiledSimd<xsimd::sse4_2>::compute(head, rows, keys, &out, ws);
}

std::size_t simd_packed_floats_sse4_2(std::size_t kv_len, std::size_t head_dim) {
  return Simd<xsimd::sse4_2>::packed_floats(kv_len, head_dim);
}

void simd_pack_sse4_2(const float* k, const float* v, std::size_t kv_len, std::size_t head_dim,
                     std::size_t first, std::size_t last, float* packed) {
  Simd<xsimd::sse4_2>::pack(k, v, kv_len, head_dim, first, last, packed);
}

void simd_exp_sse4_2(const float* x, float* y, std::size_t n) {
  Simd<xsimd::sse4_2>::exp_array(x, y, n);
}

}  // namespace attnbench::kernels
