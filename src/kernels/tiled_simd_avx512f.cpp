// tiled/simd/avx512f: tiled_simd.hpp instantiated for AVX-512F, and the packed K/V layout both SIMD
// strategies read on it. This file alone is
// compiled with -mavx512f. (src/CMakeLists.txt)
#include "kernels/tiled_simd.hpp"

namespace attnbench::kernels {

void tiled_simd_avx512f(const HeadProblem& head, RowRange rows, Workspace& ws) {
  TiledSimd<xsimd::avx512f>::compute(head, rows, KeyRange{0, head.kv_len}, nullptr, ws);
}

void tiled_simd_avx512f_partial(const HeadProblem& head, RowRange rows, KeyRange keys,
                             PartialRows out, Workspace& ws) {
  TiledSimd<xsimd::avx512f>::compute(head, rows, keys, &out, ws);
}

std::size_t simd_packed_floats_avx512f(std::size_t kv_len, std::size_t head_dim) {
  return Simd<xsimd::avx512f>::packed_floats(kv_len, head_dim);
}

void simd_pack_avx512f(const float* k, const float* v, std::size_t kv_len, std::size_t head_dim,
                     std::size_t first, std::size_t last, float* packed) {
  Simd<xsimd::avx512f>::pack(k, v, kv_len, head_dim, first, last, packed);
}

void simd_exp_avx512f(const float* x, float* y, std::size_t n) {
  Simd<xsimd::avx512f>::exp_array(x, y, n);
}

}  // namespace attnbench::kernels
