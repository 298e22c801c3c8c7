// tiled/autovec: the plain loops of tiled_scalar.hpp compiled with auto-vectorisation on for
// AVX2 + FMA (-mavx2 -mfma at -O3). Flags: src/CMakeLists.txt.
#include "kernels/tiled_scalar.hpp"
#include "kernels/tiled_scalar_backward.hpp"

namespace attnbench::kernels {

constexpr KernelCode tiled_autovec{
    .forward = {.rows = tiled_rows<>, .partial = tiled_partial<>, .blocking = tiled_blocking},
    .backward = {.key_block = backward_key_block, .keys = tiled_backward_keys<>},
};

}  // namespace attnbench::kernels
