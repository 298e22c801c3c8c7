// naive/scalar and naive/autovec backward: the textbook gradients with P and dS materialised.
// Per query head, over its rows (one task's rows):
//   P = exp(scale Q K^T - LSE),  dP = dO V^T,  dS = scale P (dP - D)  in place of dP,  dQ = dS K
// then over a block of keys, every row in order:
//   dV += P^T dO,  dK += dS^T Q.
// Compiled by naive_scalar.cpp with auto-vectorisation off, by naive_autovec.cpp with it on.
#pragma once

#include "kernels/common.hpp"

namespace attnbench::kernels {
namespace {

// Keys per dK/dV task.
constexpr std::size_t kNaiveBackwardKeys = 64;
std::size_t naive_backward_key_block(std::size_t) { return kNaiveBackwardKeys; }

void naive_backward_rows(const BackwardProblem& pb, std::size_t g, RowRange rows, Workspace&) {
  const std::size_t n = pb.p_stride, d = pb.head_dim;
  const float* q = pb.q + g * pb.q_len * d;
  const float* d_o = pb.d_o + g * pb.q_len * d;
  const float* lse = pb.lse + g * pb.q_len;
  float* dq = pb.dq + g * pb.q_len * d;
  for (std::size_t i = rows.begin; i < rows.end; ++i) {
    // A zero row weighs nothing; under a mask or window, row i reaches only its visible keys.
    const KeySpan visible = lse[i] == kMinusInf ? KeySpan{} : pb.visible(i);
    float* p = pb.p + i * n;
    float* ds = pb.ds + i * n;
    const float delta = pb.delta[g * pb.q_len + i];
    for (std::size_t j = visible.begin; j < visible.end; ++j) {
      float s = 0.0f, dp = 0.0f;
      for (std::size_t c = 0; c < d; ++c) s += q[i * d + c] * pb.k[j * d + c];
      for (std::size_t c = 0; c < d; ++c) dp += d_o[i * d + c] * pb.v[j * d + c];
      // soft-capped: S = cap tanh(scale s / cap), and dS carries its derivative 1 - tanh^2
      float score = pb.scale * s, slope = 1.0f;
      if (pb.softcap > 0.0f) {
        slope = soft_cap_slope(score / pb.softcap);
        score = soft_capped(score, pb.softcap);
      }
      if (pb.alibi) score += alibi_bias(pb.alibi[g], j, pb.mask.diagonal(i));  // no slope factor
      if (pb.tensor) score = masked_score(pb.tensor, pb.tensor.offset(g, i), j, score);
      p[j] = scalar_exp(at_most_zero(score - lse[i]));  // P = exp(S - LSE)
      ds[j] = pb.scale * p[j] * (dp - delta) * slope;   // dS = scale P (dO V^T - D)
    }
    for (std::size_t j = visible.begin; j < visible.end; ++j) {  // dQ = dS K
      for (std::size_t c = 0; c < d; ++c) dq[i * d + c] += ds[j] * pb.k[j * d + c];
    }
  }
}

void naive_backward_key_rows(const BackwardProblem& pb, std::size_t g, KeyRange keys, Workspace&) {
  const std::size_t n = pb.p_stride, d = pb.head_dim;
  const float* q = pb.q + g * pb.q_len * d;
  const float* d_o = pb.d_o + g * pb.q_len * d;
  const float* lse = pb.lse + g * pb.q_len;
  for (std::size_t j = keys.begin; j < keys.end; ++j) {
    float* dk = pb.dk + j * d;
    float* dv = pb.dv + j * d;
    for (std::size_t i = pb.first_row_seeing(j); i < pb.last_row_seeing(j); ++i) {
      if (lse[i] == kMinusInf) continue;  // a zero row: its P and dS were never written
      const float p = pb.p[i * n + j], ds = pb.ds[i * n + j];
      for (std::size_t c = 0; c < d; ++c) {
        dv[c] += p * d_o[i * d + c];  // dV += P^T dO
        dk[c] += ds * q[i * d + c];   // dK += dS^T Q
      }
    }
  }
}

}  // namespace
}  // namespace attnbench::kernels
