// naive/simd/sse4.2: naive_simd.hpp instantiated for SSE4.2. This file alone is
// compiled with -msse4.2. SSE4.2 has no FMA: xsimd's fma() is a multiply and an add here. (src/CMakeLists.txt)
#include "kernels/naive_simd.hpp"

namespace attnbench::kernels {

void naive_simd_sse4_2(const HeadProblem& head, RowRange rows, Workspace& ws) {
  NaiveSimd<xsimd::sse4_2>::compute(head, rows, ws);
}

}  // namespace attnbench::kernels
