// naive/simd/avx512f: naive_simd.hpp instantiated for AVX-512F. This file alone is
// compiled with -mavx512f. (src/CMakeLists.txt)
#include "kernels/naive_simd.hpp"

namespace attnbench::kernels {

void naive_simd_avx512f(const HeadProblem& head, RowRange rows, Workspace& ws) {
  NaiveSimd<xsimd::avx512f>::compute(head, rows, ws);
}

}  // namespace attnbench::kernels
