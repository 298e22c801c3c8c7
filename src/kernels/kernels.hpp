// Every kernel's entry point, one per file `<strategy>_<backend>[_<isa>].cpp`, and the small
// pieces of softmax arithmetic they all share. Internal: the registry and tests see kernels
// through attnbench::Kernel.
#pragma once

#include <limits>

#include "attnbench.hpp"

namespace attnbench::kernels {

// Plain loops, compiled twice: without auto-vectorisation (scalar) and with it for AVX2 + FMA
// (autovec), from naive_scalar.hpp and tiled_scalar.hpp.
void naive_scalar(const HeadProblem& head, RowRange rows, Workspace& ws);
void tiled_scalar(const HeadProblem& head, RowRange rows, Workspace& ws);
void naive_autovec(const HeadProblem& head, RowRange rows, Workspace& ws);
void tiled_autovec(const HeadProblem& head, RowRange rows, Workspace& ws);
void tiled_scalar_partial(const HeadProblem& head, RowRange rows, KeyRange keys, PartialRows out,
                          Workspace& ws);
void tiled_autovec_partial(const HeadProblem& head, RowRange rows, KeyRange keys, PartialRows out,
                           Workspace& ws);

// The baseline: the naive steps with OpenBLAS's sgemm for both products.
void naive_openblas(const HeadProblem& head, RowRange rows, Workspace& ws);

// Explicit SIMD, written once in naive_simd.hpp and tiled_simd.hpp over the xsimd architecture,
// instantiated by one file per strategy and ISA. Both strategies stream K and V from the same
// packed layout, whose functions are instantiated in the tiled_simd_<isa>.cpp files.
void naive_simd_sse4_2(const HeadProblem& head, RowRange rows, Workspace& ws);
void naive_simd_avx2(const HeadProblem& head, RowRange rows, Workspace& ws);
void naive_simd_avx512f(const HeadProblem& head, RowRange rows, Workspace& ws);
void tiled_simd_sse4_2(const HeadProblem& head, RowRange rows, Workspace& ws);
void tiled_simd_avx2(const HeadProblem& head, RowRange rows, Workspace& ws);
void tiled_simd_avx512f(const HeadProblem& head, RowRange rows, Workspace& ws);
void tiled_simd_sse4_2_partial(const HeadProblem& head, RowRange rows, KeyRange keys,
                              PartialRows out, Workspace& ws);
void tiled_simd_avx2_partial(const HeadProblem& head, RowRange rows, KeyRange keys,
                            PartialRows out, Workspace& ws);
void tiled_simd_avx512f_partial(const HeadProblem& head, RowRange rows, KeyRange keys,
                               PartialRows out, Workspace& ws);
std::size_t simd_packed_floats_sse4_2(std::size_t kv_len, std::size_t head_dim);
std::size_t simd_packed_floats_avx2(std::size_t kv_len, std::size_t head_dim);
std::size_t simd_packed_floats_avx512f(std::size_t kv_len, std::size_t head_dim);
void simd_pack_sse4_2(const float* k, const float* v, std::size_t kv_len, std::size_t head_dim,
                      std::size_t first, std::size_t last, float* packed);
void simd_pack_avx2(const float* k, const float* v, std::size_t kv_len, std::size_t head_dim,
                    std::size_t first, std::size_t last, float* packed);
// The vectorised exp of each ISA over an array, for its accuracy test.
void simd_exp_sse4_2(const float* x, float* y, std::size_t n);
void simd_exp_avx2(const float* x, float* y, std::size_t n);
void simd_exp_avx512f(const float* x, float* y, std::size_t n);
void simd_pack_avx512f(const float* k, const float* v, std::size_t kv_len, std::size_t head_dim,
                       std::size_t first, std::size_t last, float* packed);

// The helpers below are compiled into scalar and per-ISA translation units alike: internal
// linkage keeps the linker from sharing one ISA's copy with another.
namespace {

constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

inline std::size_t min_of(std::size_t a, std::size_t b) { return a < b ? a : b; }
inline float scalar_exp(float x) { return __builtin_expf(x); }

// The value subtracted from a row's scores before exp: its running max m, or 0 while m is -inf
// (no key seen yet, or every score -inf), so that exp(s - m) is exp(-inf) = 0 and never
// exp(-inf - -inf) = NaN. A NaN score still gives exp(NaN) = NaN and poisons the row, as in the
// oracle.
inline float max_reference(float m) { return m == kMinusInf ? 0.0f : m; }

// 1 / l for the final normalisation, or 0 when the row weighed nothing (l == 0: no visible key,
// or every score -inf), which the library defines as a zero row. A NaN l stays NaN.
inline float inverse_sum(float l) { return l == 0.0f ? 0.0f : 1.0f / l; }

}  // namespace

}  // namespace attnbench::kernels
