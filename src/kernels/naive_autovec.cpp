// naive/autovec: the plain loops of naive_scalar.hpp compiled with auto-vectorisation on for
// AVX2 + FMA (-mavx2 -mfma at -O3). Flags: src/CMakeLists.txt.
#include "kernels/naive_scalar.hpp"
#include "kernels/naive_scalar_backward.hpp"

namespace attnbench::kernels {

constexpr KernelCode naive_autovec{
    .forward = {.rows = naive_loops, .blocking = naive_blocking},
    .backward = {.key_block = naive_backward_key_block,
                 .rows = naive_backward_rows,
                 .key_rows = naive_backward_key_rows},
};

}  // namespace attnbench::kernels
