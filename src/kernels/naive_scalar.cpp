// naive/scalar: the plain loops of naive_scalar.hpp compiled with auto-vectorisation off
// (-fno-tree-vectorize -fno-tree-slp-vectorize), so it measures plain scalar code. Flags:
// src/CMakeLists.txt.
#include "kernels/naive_scalar.hpp"

namespace attnbench::kernels {

constexpr KernelCode naive_scalar{.forward = {.rows = naive_loops}};

}  // namespace attnbench::kernels
