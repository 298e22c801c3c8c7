// naive/autovec: the plain loops of naive_scalar.hpp compiled with auto-vectorisation on for
// AVX2 + FMA (-mavx2 -mfma at -O3). Flags: src/CMakeLists.txt.
#include "kernels/naive_scalar.hpp"

namespace attnbench::kernels {

constexpr KernelCode naive_autovec{.forward = {.rows = naive_loops}};

}  // namespace attnbench::kernels
