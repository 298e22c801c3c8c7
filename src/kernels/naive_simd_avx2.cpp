// naive/simd/avx2: naive_simd.hpp instantiated for AVX2 + FMA. This file alone is
// compiled with -mavx2 -mfma. The arch is fma3<avx2>: plain xsimd::avx2 emits no FMA. (src/CMakeLists.txt)
#include "kernels/naive_simd.hpp"

namespace attnbench::kernels {

void naive_simd_avx2(const HeadProblem& head, RowRange rows, Workspace& ws) {
  NaiveSimd<xsimd::fma3<xsimd::avx2>>::compute(head, rows, ws);
}

}  // namespace attnbench::kernels
