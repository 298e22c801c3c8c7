// The float64 oracles every kernel is tested against (tests, the benchmark's oracle check, the
// fuzzers): not part of the library a user links, which they check.
#pragma once

#include <cstddef>
#include <limits>

#include <attnbench/attnbench.hpp>

namespace attnbench {

// The float64 oracle: the three steps written plainly (score every key, normalise with the row
// max subtracted, blend the values), one query row at a time. Not a kernel; the truth tests compare
// against. `o` has shape.q_elements() elements; `lse`, if not null, batch x q_heads x q_len (each
// row's log-sum-exp, as Tensors::lse); `blend_magnitude`, if not null, o's shape: each element's
// sum_j p_j |v_jc|, the size of the terms the blend adds (the forward criterion's floor, in
// testing/error_bound.hpp). Validates the shape and options; throws Error.
void reference_attention(const Shape& shape, const Options& options, const float* q, const float* k,
                         const float* v, double* o, double* lse = nullptr,
                         double* blend_magnitude = nullptr);

// The oracle with what the forward's criteria read off the inputs, in one pass: `o`, `lse` and
// `blend_magnitude` as above; per query row (batch x q_heads x q_len), `row_sigma`, |scale| max_j
// sum_c |q_c k_jc| over its visible keys, and `row_vmax`, max |v_jc| over them (each optional).
struct ForwardConditioning {
  double* o = nullptr;
  double* lse = nullptr;
  double* blend_magnitude = nullptr;
  double* row_sigma = nullptr;
  double* row_vmax = nullptr;
};
void reference_attention(const Shape& shape, const Options& options, const float* q, const float* k,
                         const float* v, const ForwardConditioning& out);

// The same three steps in the same order in float32 throughout (float scores, float exp, float
// sums): how much plain float32 arithmetic itself errs on a problem, the yardstick of the forward
// criterion (testing/error_bound.hpp's compare_with_plain). Products::bf16: each weight
// exp(s_j - m) rounded to bfloat16 before it multiplies V (the sum l adds it unrounded), as a bf16
// kernel does; Q, K and V are used as given (round them first). Validates; throws Error.
void plain_attention(const Shape& shape, const Options& options, const float* q, const float* k,
                     const float* v, float* o, Products products = Products::f32);

// The backward oracle, as plainly: per query row, the weights p_j as reference_attention computes
// them, dp_j = dO_i . v_j, D = sum_j p_j dp_j, ds_j = p_j (dp_j - D), then dV_j += p_j dO_i,
// dQ_i = scale sum_j ds_j k_j, dK_j += scale ds_j q_i. Real = double is the oracle (tests check it
// against central differences of reference_attention); Real = float is the same loops in float32,
// the yardstick of the tests' error criterion (how much plain float32 arithmetic itself errs on a
// problem). `dq` has shape.q_elements() elements, `dk` and `dv` shape.kv_elements(). Validates
// the shape and options; throws Error.
template <class Real>
void reference_attention_backward(const Shape& shape, const Options& options, const float* q,
                                  const float* k, const float* v, const float* d_o, Real* dq,
                                  Real* dk, Real* dv);

// The backward's conditioning: the oracle's sums with every term replaced by its magnitude
// (|dp_j| by sum_c |dO_c v_jc|, dp_j - D by |dp_j| + |D|, Q, K, dO and the scale by theirs), so
// each element bounds how large the float terms its gradient element sums can be. Rounding
// errors scale with it where the gradient itself may cancel to zero (one key: dS = p (dp - D) = 0
// exactly, yet computed from two dot products in different orders). Shapes as above.
// `weights_below`: only the terms whose weight p_j is below it (the terms a float exp may flush
// to zero: their sum bounds what flushing them can cost).
void reference_backward_magnitudes(const Shape& shape, const Options& options, const float* q,
                                   const float* k, const float* v, const float* d_o, double* dq,
                                   double* dk, double* dv,
                                   double weights_below = std::numeric_limits<double>::infinity());

}  // namespace attnbench
