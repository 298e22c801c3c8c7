// naive/autovec: the plain loops of naive_scalar.hpp compiled with
// auto-vectorisation on for AVX2 + FMA (-mavx2 -mfma at -O3). Flags: src/CMakeLists.txt.
#include "kernels/naive_scalar.hpp"

namespace attnbench::kernels {

void naive_autovec(const HeadProblem& head, RowRange rows, Workspace& ws) { naive_loops(head, rows, ws); }

}  // namespace attnbench::kernels
