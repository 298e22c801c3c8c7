// naive/scalar: the plain loops of naive_scalar.hpp compiled with auto-vectorisation off
// (-fno-tree-vectorize -fno-tree-slp-vectorize), so it measures plain scalar code. Flags:
// src/CMakeLists.txt.
#include "kernels/naive_scalar.hpp"
#include "kernels/naive_scalar_backward.hpp"

namespace attnbench::kernels {

constexpr KernelCode naive_scalar{
    .forward = {.rows = naive_loops, .blocking = naive_blocking},
    .backward = {.key_block = naive_backward_key_block,
                 .rows = naive_backward_rows,
                 .key_rows = naive_backward_key_rows},
};

}  // namespace attnbench::kernels
