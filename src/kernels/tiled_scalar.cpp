// tiled/scalar: the plain loops of tiled_scalar.hpp compiled with
// auto-vectorisation off (-fno-tree-vectorize -fno-tree-slp-vectorize), so it measures plain scalar code. Flags: src/CMakeLists.txt.
#include "kernels/tiled_scalar.hpp"

namespace attnbench::kernels {

void tiled_scalar(const HeadProblem& head, RowRange rows, Workspace& ws) { tiled_loops(head, rows, ws); }

}  // namespace attnbench::kernels
