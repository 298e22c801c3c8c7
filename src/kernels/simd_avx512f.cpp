// The SIMD kernels for AVX-512F. This file alone is compiled with -mavx512f (src/CMakeLists.txt).
#include "kernels/simd_table.hpp"

namespace attnbench::kernels {

constexpr SimdTable simd_avx512f = simd_table<xsimd::avx512f>(Isa::avx512f);

}  // namespace attnbench::kernels
