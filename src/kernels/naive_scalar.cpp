// naive/scalar: the plain loops of naive_scalar.hpp compiled with
// auto-vectorisation off (-fno-tree-vectorize -fno-tree-slp-vectorize), so it measures plain scalar code. Flags: src/CMakeLists.txt.
#include "kernels/naive_scalar.hpp"

namespace attnbench::kernels {

void naive_scalar(const HeadProblem& head, RowRange rows, Workspace& ws) { naive_loops(head, rows, ws); }

}  // namespace attnbench::kernels
