// tiled/autovec: the plain loops of tiled_scalar.hpp compiled with
// auto-vectorisation on for AVX2 + FMA (-mavx2 -mfma at -O3). Flags: src/CMakeLists.txt.
#include "kernels/tiled_scalar.hpp"

namespace attnbench::kernels {

void tiled_autovec(const HeadProblem& head, RowRange rows, Workspace& ws) {
  tiled_loops(head, rows, KeyRange{0, head.kv_len}, nullptr, ws);
}

void tiled_autovec_partial(const HeadProblem& head, RowRange rows, KeyRange keys, PartialRows out,
                        Workspace& ws) {
  tiled_loops(head, rows, keys, &out, ws);
}

}  // namespace attnbench::kernels
