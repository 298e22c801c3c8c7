// tiled/simd/avx2: tiled_simd.hpp instantiated for AVX2 + FMA, and the packed K/V layout both SIMD
// strategies read on it. This file alone is
// compiled with -mavx2 -mfma. The arch is fma3<avx2>: plain xsimd::avx2 emits no FMA. (src/CMakeLists.txt)
#include "kernels/tiled_simd.hpp"

namespace attnbench::kernels {

void tiled_simd_avx2(const HeadProblem& head, RowRange rows, Workspace& ws) {
  TiledSimd<xsimd::fma3<xsimd::avx2>>::compute(head, rows, KeyRange{0, head.kv_len}, nullptr, ws);
}

void tiled_simd_avx2_partial(const HeadProblem& head, RowRange rows, KeyRange keys,
                             PartialRows out, Workspace& ws) {
  TiledSimd<xsimd::fma3<xsimd::avx2>>::compute(head, rows, keys, &out, ws);
}

std::size_t simd_packed_floats_avx2(std::size_t kv_len, std::size_t head_dim) {
  return Simd<xsimd::fma3<xsimd::avx2>>::packed_floats(kv_len, head_dim);
}

void simd_pack_avx2(const float* k, const float* v, std::size_t kv_len, std::size_t head_dim,
                     std::size_t first, std::size_t last, float* packed) {
  Simd<xsimd::fma3<xsimd::avx2>>::pack(k, v, kv_len, head_dim, first, last, packed);
}

void simd_exp_avx2(const float* x, float* y, std::size_t n) {
  Simd<xsimd::fma3<xsimd::avx2>>::exp_array(x, y, n);
}

}  // namespace attnbench::kernels
