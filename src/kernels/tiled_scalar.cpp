// tiled/scalar: the plain loops of tiled_scalar.hpp compiled with
// auto-vectorisation off (-fno-tree-vectorize -fno-tree-slp-vectorize), so it measures plain scalar code. Flags: src/CMakeLists.txt.
#include "kernels/tiled_scalar.hpp"

namespace attnbench::kernels {

void tiled_scalar(const HeadProblem& head, RowRange rows, Workspace& ws) {
  tiled_loops(head, rows, KeyRange{0, head.kv_len}, nullptr, ws);
}

void tiled_scalar_partial(const HeadProblem& head, RowRange rows, KeyRange keys, PartialRows out,
                        Workspace& ws) {
  tiled_loops(head, rows, keys, &out, ws);
}

}  // namespace attnbench::kernels
