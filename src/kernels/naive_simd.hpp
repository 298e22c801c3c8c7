// naive/simd: the materialised score matrix with the same micro-kernels as tiled/simd, written
// once over the xsimd architecture and the K/V storage type T, and instantiated per ISA by
// simd_<isa>.cpp.
//   pass 1, score:     S = Q K^T for every row and key (blocked so a key block stays in L2)
//   pass 2, normalise: per row: m = scale max S (a read), then in place
//                      P = exp(scale S - m) with the sum l in the second sweep
//   pass 3, blend:     O = (P V) / l; dividing the d outputs by l instead of the n weights is the
//                      same normalisation with n / d times fewer divisions.
// Scratch: the rows x kv_len score matrix (rows padded to NR keys), l per row, and a Br x d
// accumulator.
#pragma once

#include "kernels/simd_common.hpp"

namespace attnbench::kernels {
namespace {

template <class Arch, class T>
struct NaiveSimd : Simd<Arch> {
  using S = Simd<Arch>;
  using S::Br;
  using S::MR;

  static void compute(const HeadProblem& head, RowRange rows, Workspace& ws) {
    const std::size_t d = head.head_dim;
    const std::size_t dp = S::padded_dim(d);
    const std::size_t Bc = S::key_block(dp);
    const std::size_t stride = S::padded_keys(head.kv_len);  // whole NR-wide tiles fit a row
    const T* kt = static_cast<const T*>(head.kv_packed);
    const T* v = S::packed_v(kt, head.kv_capacity, d);
    const std::size_t row_count = rows.end - rows.begin;
    float* scores = ws.take<float>(row_count * stride);
    float* l = ws.take<float>(row_count);
    float* o_acc = ws.take<float>(Br * dp);

    // Visit (block of Br rows, block of Bc keys, group of MR rows) in that order, skipping key
    // blocks no row of the block sees; `body` sees the group's keys of the block.
    auto for_each_tile = [&](auto&& begin_block, auto&& body, auto&& end_block) {
      for (std::size_t i0 = rows.begin; i0 < rows.end; i0 += Br) {
        const std::size_t br = min_of(Br, rows.end - i0);
        begin_block(br);
        const KeySpan span = head.visible_rows(i0, br);
        const std::size_t group = row_group(br, MR);
        for (std::size_t j0 = on_grid(0, span.begin, Bc); j0 < span.end; j0 += Bc) {
          const std::size_t last_key = span.end;
          const std::size_t bc = min_of(Bc, last_key - j0);
          for (std::size_t g = 0; g < br; g += group) {
            const std::size_t mr = min_of(group, br - g);
            const auto keys = S::block_keys(head, i0 + g, mr, j0, bc);
            if (keys.any()) body(i0 + g, g, mr, j0, keys);
          }
        }
        end_block(i0, br);
      }
    };
    auto nothing = [](auto...) {};

    // Pass 1, score: S = Q K^T.
    for_each_tile(
        nothing,
        [&](std::size_t i, std::size_t, std::size_t mr, std::size_t j0, const auto& keys) {
          const std::size_t p0 = keys.first / S::NR * S::NR;  // the first key's panel
          S::score_group(head.q + i * d, mr, d, kt + (j0 + p0) * d, keys.widest - p0,
                         scores + (i - rows.begin) * stride + j0 + p0, stride);
        },
        nothing);

    // Pass 2, normalise: m = scale max S, then in place P = exp(scale S - m), l = rowsum(P).
    for (std::size_t r = 0; r < row_count; ++r) {
      float* s = scores + r * stride;
      const KeySpan keys = head.visible(rows.begin + r);
      float scale = head.scale;
      if (head.only_drops_keys()) {  // the sweeps scale what it leaves
        S::drop_removed(s, keys.begin, keys.end,
                        head.tensor.keep + head.tensor_row(rows.begin + r));
      } else if (head.modifies_scores()) {  // modified in place, scaled: the sweeps' is 1
        const std::size_t i = rows.begin + r;
        const std::size_t at = head.tensor_row(i);
        S::modify_scores(s, keys.begin, keys.end, head.scale, head.softcap, head.alibi_slope(i),
                         -double(head.diagonal(i)),
                         head.tensor.keep ? head.tensor.keep + at : nullptr,
                         head.tensor.bias ? head.tensor.bias + at : nullptr);
        scale = 1.0f;
      }
      const float m = S::scale_and_max(s, keys.begin, keys.end, scale);
      l[r] = S::exp_and_sum(s, keys.begin, keys.end, scale, max_reference(m));
      if (head.lse) head.lse[rows.begin + r] = log_sum_exp(m, l[r]);
    }

    // Pass 3, blend: O = P V / l.
    for_each_tile(
        [&](std::size_t br) {
          for (std::size_t x = 0; x < br * dp; ++x) o_acc[x] = 0.0f;
        },
        [&](std::size_t i, std::size_t g, std::size_t mr, std::size_t j0, const auto& keys) {
          S::blend_group(mr, keys, scores + (i - rows.begin) * stride + j0, stride, v + j0 * dp, dp,
                         nullptr, o_acc + g * dp);
        },
        [&](std::size_t i0, std::size_t br) {
          for (std::size_t r = 0; r < br; ++r) {
            const float row_l = l[i0 - rows.begin + r];
            S::write_row(o_acc + r * dp, inverse_sum(row_l), row_l == 0.0f, d,
                         head.o + (i0 + r) * d);
          }
        });
  }
};

}  // namespace
}  // namespace attnbench::kernels
