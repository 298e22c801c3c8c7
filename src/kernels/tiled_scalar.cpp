// tiled/scalar: the plain loops of tiled_scalar.hpp compiled with auto-vectorisation off
// (-fno-tree-vectorize -fno-tree-slp-vectorize), so it measures plain scalar code. Flags:
// src/CMakeLists.txt.
#include "kernels/tiled_scalar.hpp"
#include "kernels/tiled_scalar_backward.hpp"

namespace attnbench::kernels {

constexpr KernelCode tiled_scalar{
    .forward = {.rows = tiled_rows<>, .partial = tiled_partial<>, .blocking = tiled_blocking},
    .backward = {.key_block = backward_key_block, .keys = tiled_backward_keys<>},
};

// tiled/scalar-bf16: the same loops with the arithmetic of bf16 products.
constexpr KernelCode tiled_scalar_bf16{
    .forward = {.rows = tiled_rows<true>,
                .partial = tiled_partial<true>,
                .blocking = tiled_blocking},
    .backward = {.key_block = backward_key_block, .keys = tiled_backward_keys<true>},
};

}  // namespace attnbench::kernels
