// The SIMD kernels for AVX2 + FMA (+ F16C for float16 K/V). This file alone is compiled with
// -mavx2 -mfma -mf16c (src/CMakeLists.txt). The arch is fma3<avx2>: plain xsimd::avx2 emits no FMA.
#include "kernels/simd_table.hpp"

namespace attnbench::kernels {

constexpr SimdTable simd_avx2 = simd_table<xsimd::fma3<xsimd::avx2>>(Isa::avx2);

}  // namespace attnbench::kernels
