// naive/scalar and naive/autovec: materialise the score matrix S of the requested rows, then
// three passes over it: score, normalise, blend. Plain loops, compiled by naive_scalar.cpp with
// auto-vectorisation off and by naive_autovec.cpp with it on (internal linkage keeps the copies
// apart).
#pragma once

#include "kernels/common.hpp"

namespace attnbench::kernels {
namespace {

// One row at a time against every key. Score sweeps: the score pass writes S; the max reads it;
// the exp and the normalisation each read and rewrite it; the blend reads it: 7.
ForwardBlocking naive_blocking(std::size_t head_dim) {
  return {.query_block = 1, .key_block = kNoKeyBlocks, .padded_dim = head_dim, .score_sweeps = 7};
}

void naive_loops(const HeadProblem& head, RowRange rows, Workspace& ws) {
  const std::size_t n = head.kv_len;
  const std::size_t d = head.head_dim;
  const std::size_t row_count = rows.end - rows.begin;
  float* S = ws.take<float>(row_count * n);  // row r holds the scores of query rows.begin + r
  KeySpan* keys = ws.take<KeySpan>(row_count);

  // NOTE: under a mask or window row i scores only the keys it sees, keys[r]; the rest of its S
  // row is never written nor read.

  // Pass 1, score: S = scale * Q K^T.
  for (std::size_t r = 0; r < row_count; ++r) {
    const float* q = head.q + (rows.begin + r) * d;
    const KeySpan visible = head.visible(rows.begin + r);
    for (std::size_t j = visible.begin; j < visible.end; ++j) {
      const float* k = head.k + j * d;
      float dot = 0.0f;
      for (std::size_t c = 0; c < d; ++c) dot += q[c] * k[c];
      S[r * n + j] =
          head.softcap > 0.0f ? soft_capped(head.scale * dot, head.softcap) : head.scale * dot;
      const std::size_t i = rows.begin + r;
      if (head.alibi) S[r * n + j] += alibi_bias(head.alibi_slope(i), j, head.diagonal(i));
      if (head.tensor)
        S[r * n + j] = masked_score(head.tensor, head.tensor_row(i), j, S[r * n + j]);
    }
    keys[r] = visible;
  }

  // Pass 2, normalise each row in place: P = exp(S - m) / l, m = row max, l = sum exp(S - m).
  for (std::size_t r = 0; r < row_count; ++r) {
    float* s = S + r * n;
    float m = kMinusInf;
    for (std::size_t j = keys[r].begin; j < keys[r].end; ++j) m = s[j] > m ? s[j] : m;
    const float m_ref = max_reference(m);
    float l = 0.0f;
    for (std::size_t j = keys[r].begin; j < keys[r].end; ++j) {
      s[j] = scalar_exp(s[j] - m_ref);
      l += s[j];
    }
    if (head.lse) head.lse[rows.begin + r] = log_sum_exp(m, l);
    const float inv_l = inverse_sum(l);
    if (l == 0.0f) keys[r] = {};  // nothing to weigh: a zero row, whatever V holds
    for (std::size_t j = keys[r].begin; j < keys[r].end; ++j) s[j] *= inv_l;
  }

  // Pass 3, blend: O = P V.
  for (std::size_t r = 0; r < row_count; ++r) {
    float* o = head.o + (rows.begin + r) * d;
    for (std::size_t c = 0; c < d; ++c) o[c] = 0.0f;
    for (std::size_t j = keys[r].begin; j < keys[r].end; ++j) {
      const float p = S[r * n + j];
      const float* v = head.v + j * d;
      for (std::size_t c = 0; c < d; ++c) o[c] += p * v[c];
    }
  }
}

}  // namespace
}  // namespace attnbench::kernels
