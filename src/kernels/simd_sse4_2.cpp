// The SIMD kernels for SSE4.2. This file alone is compiled with -msse4.2 (src/CMakeLists.txt).
#include "kernels/simd_table.hpp"

namespace attnbench::kernels {

constexpr SimdTable simd_sse4_2 = simd_table<xsimd::sse4_2>(Isa::sse4_2);

}  // namespace attnbench::kernels
