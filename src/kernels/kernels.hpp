// Every kernel's entry point, one per file `<strategy>_<backend>[_<isa>].cpp`, and the small
// pieces of softmax arithmetic they all share. Internal: the registry and tests see kernels
// through attnbench::Kernel.
#pragma once

#include <limits>

#include "attnbench.hpp"

namespace attnbench::kernels {

void naive_scalar(const HeadProblem& head, RowRange rows, Workspace& ws);
void tiled_scalar(const HeadProblem& head, RowRange rows, Workspace& ws);

inline constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

// The value subtracted from a row's scores before exp: its running max m, or 0 while m is -inf
// (no key seen yet, or every score -inf), so that exp(s - m) is exp(-inf) = 0 and never
// exp(-inf - -inf) = NaN. A NaN score still gives exp(NaN) = NaN and poisons the row, as in the
// oracle.
inline float max_reference(float m) { return m == kMinusInf ? 0.0f : m; }

// 1 / l for the final normalisation, or 0 when the row weighed nothing (l == 0: no visible key,
// or every score -inf), which the library defines as a zero row. A NaN l stays NaN.
inline float inverse_sum(float l) { return l == 0.0f ? 0.0f : 1.0f / l; }

}  // namespace attnbench::kernels
