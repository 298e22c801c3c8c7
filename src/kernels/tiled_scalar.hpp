// tiled/scalar and tiled/autovec: FlashAttention's online softmax. Query rows go in blocks of Br,
// keys in blocks of Bc; each row keeps a running max m and running sum l, and its output
// accumulator (the O row itself) is rescaled whenever m grows. Scratch is Br x Bc scores plus 2 x
// Br floats, whatever kv_len is. Plain loops, compiled by tiled_scalar.cpp with auto-vectorisation
// off and by tiled_autovec.cpp with it on (internal linkage keeps the copies apart).
#pragma once

#include "kernels/common.hpp"
#include "kernels/storage.hpp"

namespace attnbench::kernels {
namespace {

// Br x Bc tile: the Bc keys' K and V rows (2 x 64 x d x 4 bytes, 64 KiB at d = 128) are reused by
// Br query rows while they sit in L2; the scalar loops gain nothing from larger tiles.
constexpr std::size_t Br = 16;
constexpr std::size_t Bc = 64;
static_assert(kKeyChunk % Bc == 0, "a decode chunk must be whole key blocks");
ForwardBlocking tiled_blocking(std::size_t head_dim) {
  return {.query_block = Br, .key_block = Bc, .padded_dim = head_dim};
}

// x rounded to bfloat16 and back: what a bf16-products kernel multiplies.
inline float bf16_rounded(float x) { return bfloat16_value(bfloat16_bits(x)); }

// Rows `rows` against keys `keys`. With `partial` null the normalised rows go to head.o;
// otherwise the unnormalised accumulator and each row's (m, l) go to *partial. `Bf16`: the
// arithmetic of Products::bf16, the reference the bf16 SIMD kernels are tested beside: Q, K and V
// rounded to bfloat16 as they are read, each weight rounded to bfloat16 before it multiplies V
// (the sum l adds it unrounded); a product of two bfloat16 values is exact in float32, so only
// the sums round, in float32.
template <bool Bf16 = false>
void tiled_loops(const HeadProblem& head, RowRange rows, KeyRange keys, const PartialRows* partial,
                 Workspace& ws) {
  const std::size_t d = head.head_dim;
  float* S = ws.take<float>(Br * Bc);
  float* m = ws.take<float>(Br);
  float* l = ws.take<float>(Br);
  // The accumulator of row i: the output row itself, or the partial result's row.
  auto acc = [&](std::size_t i) {
    return partial ? partial->o + (i - rows.begin) * d : head.o + i * d;
  };

  for (std::size_t i0 = rows.begin; i0 < rows.end; i0 += Br) {
    const std::size_t br = min_of(Br, rows.end - i0);  // edge tile: fewer rows
    for (std::size_t r = 0; r < br; ++r) {
      m[r] = kMinusInf;
      l[r] = 0.0f;
      for (std::size_t x = 0; x < d; ++x) acc(i0 + r)[x] = 0.0f;
    }
    // Key blocks no row of the block sees (past the causal diagonal, before a window) are
    // skipped, not masked; the others start on the grid of Bc keys from keys.begin.
    const KeySpan span = head.visible_rows(i0, br);
    const std::size_t last_key = min_of(span.end, keys.end);

    for (std::size_t j0 = on_grid(keys.begin, span.begin, Bc); j0 < last_key; j0 += Bc) {
      const std::size_t bc = min_of(Bc, last_key - j0);  // edge tile: fewer keys
      for (std::size_t r = 0; r < br; ++r) {
        const KeySpan visible = head.visible(i0 + r);
        // this row's keys of the block: [first, count)
        const std::size_t first = visible.begin <= j0 ? 0 : visible.begin - j0;
        const std::size_t count = visible.end <= j0 ? 0 : min_of(bc, visible.end - j0);
        if (first >= count) continue;  // none
        const float* q = head.q + (i0 + r) * d;
        float* s = S + r * Bc;
        float* o = acc(i0 + r);

        // s = scale * q K_block^T; the block max in the same pass.
        float block_max = kMinusInf;
        for (std::size_t c = first; c < count; ++c) {
          const float* k = head.k + (j0 + c) * d;
          float dot = 0.0f;
          for (std::size_t x = 0; x < d; ++x) {
            dot += Bf16 ? bf16_rounded(q[x]) * bf16_rounded(k[x]) : q[x] * k[x];
          }
          s[c] = head.scale * dot;
          if (head.softcap > 0.0f) s[c] = soft_capped(s[c], head.softcap);
          if (head.alibi)
            s[c] += alibi_bias(head.alibi_slope(i0 + r), j0 + c, head.diagonal(i0 + r));
          if (head.tensor) s[c] = masked_score(head.tensor, head.tensor_row(i0 + r), j0 + c, s[c]);
          block_max = s[c] > block_max ? s[c] : block_max;
        }

        // O = O * exp(m_old - m_new) + P V,  l = l * exp(m_old - m_new) + rowsum(P)
        const float m_new = block_max > m[r] ? block_max : m[r];
        const float m_ref = max_reference(m_new);
        if (m_new != m[r]) {  // rescale only when the max moved
          const float alpha = scalar_exp(m[r] - m_ref);
          l[r] *= alpha;
          for (std::size_t x = 0; x < d; ++x) o[x] *= alpha;
          m[r] = m_new;
        }
        for (std::size_t c = first; c < count; ++c) {
          const float p = scalar_exp(s[c] - m_ref);
          const float* v = head.v + (j0 + c) * d;
          l[r] += p;
          if constexpr (Bf16) {
            const float pb = bf16_rounded(p);
            for (std::size_t x = 0; x < d; ++x) o[x] += pb * bf16_rounded(v[x]);
          } else {
            for (std::size_t x = 0; x < d; ++x) o[x] += p * v[x];
          }
        }
      }
    }

    for (std::size_t r = 0; r < br; ++r) {
      float* o = acc(i0 + r);
      if (partial) {
        partial->m[i0 + r - rows.begin] = m[r];
        partial->l[i0 + r - rows.begin] = l[r];
        continue;
      }
      if (head.lse) head.lse[i0 + r] = log_sum_exp(m[r], l[r]);
      if (l[r] == 0.0f) {
        for (std::size_t x = 0; x < d; ++x)
          o[x] = 0.0f;  // nothing to weigh: a zero row, whatever V holds
      } else {
        const float inv_l = inverse_sum(l[r]);
        for (std::size_t x = 0; x < d; ++x) o[x] *= inv_l;
      }
    }
  }
}

template <bool Bf16 = false>
void tiled_rows(const HeadProblem& head, RowRange rows, Workspace& ws) {
  tiled_loops<Bf16>(head, rows, KeyRange{0, head.kv_len}, nullptr, ws);
}

template <bool Bf16 = false>
void tiled_partial(const HeadProblem& head, RowRange rows, KeyRange keys, PartialRows out,
                   Workspace& ws) {
  tiled_loops<Bf16>(head, rows, keys, &out, ws);
}

}  // namespace
}  // namespace attnbench::kernels
