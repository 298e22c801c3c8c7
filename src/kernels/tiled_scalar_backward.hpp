// tiled/scalar and tiled/autovec backward: FlashAttention-2's backward in plain loops. A task owns
// a block of kBackwardKeys keys over one segment of query rows; for every row of it that sees
// them it recomputes the weights from the forward's log-sum-exp and
//   p = exp(scale q.k - LSE),  dp = dO . v,  ds = scale p (dp - D)      (D = dO . O)
//   dV_j += p dO_i,  dK_j += ds q_i  (the task's accumulators, added in segment order)
//   dQ_i += ds k_j                    (a row block's part, added in key block order)
// Scratch: the key block's dK and dV accumulators and one row block's dQ part, whatever the
// lengths. Compiled by tiled_scalar.cpp with auto-vectorisation off, by tiled_autovec.cpp with it
// on.
#pragma once

#include "kernels/common.hpp"

namespace attnbench::kernels {
namespace {

// Keys per task: enough rows x keys per dQ addition to amortise its wait; a multiple of nothing
// in particular (the loops have no tiles), fixed so that sums run in one order for every thread
// count.
constexpr std::size_t kBackwardKeys = 64;
std::size_t backward_key_block(std::size_t) { return kBackwardKeys; }

// `Bf16`: the arithmetic of Products::bf16 (tiled_scalar.hpp's bf16_rounded): Q, K, V and dO
// rounded to bfloat16 as they are read, P and dS rounded before the products they feed.
template <bool Bf16 = false>
void tiled_backward_keys(const BackwardProblem& pb, KeyRange keys, RowRange rows_of,
                         Workspace& ws) {
  auto in = [](float x) { return Bf16 ? bf16_rounded(x) : x; };
  const std::size_t d = pb.head_dim;
  const std::size_t j0 = keys.begin, bc = keys.end - keys.begin;
  const std::size_t block = j0 / pb.key_block;
  float* dk_acc = ws.take<float>(bc * d);
  float* dv_acc = ws.take<float>(bc * d);
  float* dq_part = ws.take<float>(kRowsPerTask * d);
  for (std::size_t x = 0; x < bc * d; ++x) dk_acc[x] = dv_acc[x] = 0.0f;

  // NOTE: rows before first_row_seeing(j0) see none of the block's keys; their row blocks are
  // skipped, and so are they by every later key block. Rows from last_row_seeing(the block's
  // last key) on (a window) see later keys only; their dQ turns start with the first key block
  // they see (BackwardProblem::dq_turn).
  const std::size_t seen_from = pb.first_row_seeing(j0) / kRowsPerTask * kRowsPerTask;
  const std::size_t first = seen_from > rows_of.begin ? seen_from : rows_of.begin;
  const std::size_t seen_to = pb.last_row_seeing(j0 + bc - 1);
  const std::size_t last = min_of(rows_of.end, seen_to > first ? seen_to : first);
  for (std::size_t g = 0; g < pb.group; ++g) {
    const auto [q, d_o, lse, delta, dq] = pb.head(g);
    for (std::size_t i0 = first; i0 < last; i0 += kRowsPerTask) {
      const std::size_t rows = min_of(kRowsPerTask, rows_of.end - i0);
      for (std::size_t x = 0; x < rows * d; ++x) dq_part[x] = 0.0f;
      for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t i = i0 + r;
        const KeySpan visible = pb.visible(i);
        if (visible.end <= j0 || lse[i] == kMinusInf) continue;  // sees no key here, or a zero row
        const std::size_t count = min_of(bc, visible.end - j0);
        const std::size_t from = visible.begin <= j0 ? 0 : min_of(count, visible.begin - j0);
        const float* qi = q + i * d;
        const float* doi = d_o + i * d;
        float* dqi = dq_part + r * d;
        for (std::size_t j = from; j < count; ++j) {
          const float* kj = pb.k + (j0 + j) * d;
          const float* vj = pb.v + (j0 + j) * d;
          float s = 0.0f, dp = 0.0f;
          for (std::size_t c = 0; c < d; ++c) s += in(qi[c]) * in(kj[c]);
          for (std::size_t c = 0; c < d; ++c) dp += in(doi[c]) * in(vj[c]);
          // P = exp(S - LSE), dS = scale P (dP - D) (soft-capped: S = cap tanh(scale s / cap),
          // and dS carries the cap's derivative 1 - tanh^2)
          float score = pb.scale * s, slope = 1.0f;
          if (pb.softcap > 0.0f) {
            slope = soft_cap_slope(score / pb.softcap);
            score = soft_capped(score, pb.softcap);
          }
          if (pb.alibi) score += alibi_bias(pb.alibi[g], j0 + j, pb.mask.diagonal(i));
          if (pb.tensor) score = masked_score(pb.tensor, pb.tensor.offset(g, i), j0 + j, score);
          const float p = scalar_exp(at_most_zero(score - lse[i]));
          const float ds = pb.scale * p * (dp - delta[i]) * slope;
          const float p_in = in(p), ds_in = in(ds);
          float* dkj = dk_acc + j * d;
          float* dvj = dv_acc + j * d;
          for (std::size_t c = 0; c < d; ++c) {
            dvj[c] += p_in * in(doi[c]);  // dV += P^T dO
            dkj[c] += ds_in * in(qi[c]);  // dK += dS^T Q
            dqi[c] += ds_in * in(kj[c]);  // dQ += dS K
          }
        }
      }
      pb.dq_order.wait(g, i0, pb.dq_turn(i0, block));
      for (std::size_t x = 0; x < rows * d; ++x) dq[i0 * d + x] += dq_part[x];
      pb.dq_order.done(g, i0, pb.dq_turn(i0, block));
    }
  }
  // dK += this segment's part, dV likewise, in segment order.
  const std::size_t segment = rows_of.begin / kBackwardSegmentRows;
  pb.dkv_order.wait(block, segment);
  for (std::size_t x = 0; first < last && x < bc * d; ++x) {
    pb.dk[j0 * d + x] += dk_acc[x];
    pb.dv[j0 * d + x] += dv_acc[x];
  }
  pb.dkv_order.done(block, segment);
}

}  // namespace
}  // namespace attnbench::kernels
