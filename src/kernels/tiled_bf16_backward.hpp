// tiled/simd-bf16's backward pass: TiledSimdBackward's tasks and order (simd_backward.hpp) with
// the five products as bfloat16 products accumulated in float32 (tiled_bf16.hpp's micro-kernels).
//
// Per key block and group of query rows, as FlashAttention does it in 16 bits:
//   S = Q K^T, dP = dO V^T        (Q, dO, K, V rounded to bfloat16; pairs along d)
//   P = exp(scale S - LSE), dS = scale P (dP - D)      (float32; D = rowsum(dO O), dO rounded)
//   dQ += dS K                    (dS rounded to bfloat16; pairs along the keys)
//   dV += P^T dO, dK += dS^T Q    (P and dS rounded; pairs along the query rows)
// The sums over query rows pair two rows: P^T and dS^T as pairs of rows per key, dO and Q as
// pairs of rows per column. A row that does not see a key enters neither side of that key's pair
// (its V or Q half masked, as the forward masks a row's last odd key).
#pragma once

#include <algorithm>  // std::fill
#include <tuple>

#include "kernels/simd_backward.hpp"
#include "kernels/tiled_bf16.hpp"

namespace attnbench::kernels {
namespace {

template <class Arch>
struct TiledBf16Backward : TiledBf16<Arch> {
  using T = TiledBf16<Arch>;
  using S = Simd<Arch>;
  using B = SimdBackward<Arch>;
  using T::MR;
  using T::NR;
  using T::pairs;
  using T::W;
  using typename T::Pair;
  static constexpr std::size_t Br = B::Br;
  static constexpr std::size_t St = B::kBlockStride;  // P and dS tiles' row stride (floats)
  static constexpr std::size_t Ps = St / 2;           // dS rounded, pairs of keys a row

  // NOTE: the packed head is K^T and V^T in panels ([pairs(d)][NR] pairs each, for S and dP),
  // then K in pairs of rows ([pairs of keys][padded_dim(d)], for dQ = dS K).
  static std::size_t packed_bytes(std::size_t kv_len, std::size_t d) {
    return (2 * S::padded_keys(kv_len) * pairs(d) + round_up(kv_len, 2) / 2 * S::padded_dim(d)) *
           sizeof(Pair);
  }
  static void pack(const float* k, const float* v, std::size_t kv_len, std::size_t d,
                   std::size_t first, std::size_t last, void* out) {
    Pair* kt = static_cast<Pair*>(out);
    const std::size_t panels = S::padded_keys(kv_len) * pairs(d);
    T::pack_panels(k, kv_len, d, first, last, kt);
    T::pack_panels(v, kv_len, d, first, last, kt + panels);
    T::pack_pair_rows(k, kv_len, d, first, last, kt + 2 * panels);
  }

  // Rows [0, br) of x (d floats each) in pairs of rows, rows that see no key (end 0; and row br,
  // for an odd br) as zeros: what dV += P^T dO and dK += dS^T Q pair with P^T and dS^T.
  static void pair_rows(const float* x, std::size_t br, const std::size_t* count, std::size_t d,
                        Pair* out) {
    const std::size_t dp = S::padded_dim(d);
    alignas(64) BFloat16 a[T::C], b[T::C];
    for (std::size_t r = 0; r < br; r += 2) {
      const bool first = count[r] > 0, second = r + 1 < br && count[r + 1] > 0;
      for (std::size_t c0 = 0; c0 < d; c0 += T::C) {  // (dp - d < W: c0 < dp means c0 < d)
        for (auto [keep, row, to] : {std::tuple{first, r, a}, {second, r + 1, b}}) {
          if (keep) {
            T::round_chunk(x + row * d, d, c0, to);
          } else {
            for (std::size_t c = 0; c < T::C; ++c) to[c] = BFloat16{};
          }
        }
        for (std::size_t c = 0; c < T::C && c0 + c < dp; c += W) {
          const __m512i lo =
              _mm512_cvtepu16_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(a + c)));
          const __m512i hi =
              _mm512_cvtepu16_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(b + c)));
          _mm512_storeu_si512(out + r / 2 * dp + c0 + c,
                              _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
        }
      }
    }
  }

  // Q and dO packed once per call (RowPacking), as the float32 kernel's (SimdBackward::pack_rows):
  // a query head's Q, then dO, in row blocks of Br rows as pack_q lays them, then Q's and dO's rows
  // in pairs of rows (pair_rows, every row kept).
  static std::size_t row_bytes(std::size_t q_len, std::size_t d) {
    const std::size_t rows = B::packed_rows(q_len);
    return 2 * (rows * pairs(d) + rows / 2 * S::padded_dim(d)) * sizeof(Pair);
  }
  static void pack_rows(const float* q, const float* d_o, std::size_t q_len, std::size_t d,
                        std::size_t first, std::size_t last, void* out) {
    Pair* packed = static_cast<Pair*>(out);
    const std::size_t rows = B::packed_rows(q_len), pd = pairs(d), dp = S::padded_dim(d);
    Pair* paired = packed + 2 * rows * pd;
    std::size_t every[Br];
    std::fill(every, every + Br, std::size_t{1});
    for (std::size_t i0 = first; i0 < last; i0 += Br) {
      const std::size_t br = min_of(Br, last - i0);
      T::pack_q(q + i0 * d, br, MR, d, packed + i0 * pd);
      T::pack_q(d_o + i0 * d, br, MR, d, packed + (rows + i0) * pd);
      pair_rows(q + i0 * d, br, every, d, paired + i0 / 2 * dp);
      pair_rows(d_o + i0 * d, br, every, d, paired + (rows + i0) / 2 * dp);
    }
  }

  // Rows [0, br) of a float32 tile (rows St apart) as pairs of rows per key, [br / 2][St] pairs,
  // keys [0, fill) (the tile's zeros past each row's keys stay zero; an odd br's last row pairs
  // with zeros).
  static void transpose_pairs(const float* tile, std::size_t br, std::size_t fill, Pair* out) {
    for (std::size_t r = 0; r < br; r += 2) {
      for (std::size_t k = 0; k < fill; k += W) {
        const __m256bh a = _mm512_cvtneps_pbh(_mm512_load_ps(tile + r * St + k));
        const __m256bh b = r + 1 < br ? _mm512_cvtneps_pbh(_mm512_load_ps(tile + (r + 1) * St + k))
                                      : reinterpret_cast<__m256bh>(_mm256_setzero_si256());
        const __m512i lo = _mm512_cvtepu16_epi32(reinterpret_cast<__m256i>(a));
        const __m512i hi = _mm512_cvtepu16_epi32(reinterpret_cast<__m256i>(b));
        _mm512_store_si512(out + r / 2 * St + k, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
      }
    }
  }

  // acc[k] += sum over rows r in [first[k], last[k]) of p[r][k] * b[r] for keys [0, keys), p as
  // pairs of rows per key (St pairs a row pair) and b as pairs of rows: each group of MR keys over
  // the rows all of them see, then each key over its few more before and after them (halves
  // masked where a pair straddles a key's first or last row).
  static void blend_keys(const Pair* pt, const Pair* b, const std::size_t* first,
                         const std::size_t* last, std::size_t keys, std::size_t dp, float* acc) {
    auto add = [&](std::size_t kr, std::size_t k, std::size_t from, std::size_t to) {
      if (from >= to) return;
      const std::size_t begin = from / 2, end = (to + 1) / 2;
      T::template blend_rows<1, St>(kr, pt + begin * St + k, b + begin * dp, dp, end - begin,
                                    from % 2 != 0, to % 2 != 0, nullptr, acc + k * dp);
    };
    for (std::size_t k0 = 0; k0 < keys; k0 += MR) {
      const std::size_t kr = min_of(MR, keys - k0);
      const std::size_t common_first = first[k0 + kr - 1], common_last = last[k0];
      if (common_first >= common_last) {  // no row sees every key of the group
        for (std::size_t k = k0; k < k0 + kr; ++k) add(1, k, first[k], last[k]);
        continue;
      }
      add(kr, k0, common_first, common_last);
      for (std::size_t k = k0; k < k0 + kr; ++k) {
        add(1, k, first[k], common_first);
        add(1, k, common_last, last[k]);
      }
    }
  }

  static void keys(const BackwardProblem& pb, KeyRange keys, RowRange rows, Workspace& ws) {
    static_assert(kBackwardSegmentRows % Br == 0, "a row segment must be whole row blocks");
    static_assert(Br % MR == 0 && Br % 2 == 0, "a row block must be whole groups and pairs");
    const std::size_t d = pb.head_dim, dp = S::padded_dim(d), pd = pairs(d);
    const std::size_t j0 = keys.begin, bc = keys.end - keys.begin, Bk = pb.key_block;
    const std::size_t fill = round_up(bc, NR);
    const std::size_t block = j0 / Bk;
    const auto* packed = reinterpret_cast<const Pair*>(pb.kv_packed);
    const std::size_t panels = S::padded_keys(pb.kv_len) * pd;
    const Pair* kt = packed + j0 * pd;
    const Pair* vt = packed + panels + j0 * pd;
    const Pair* k_rows = packed + 2 * panels + j0 / 2 * dp;
    float* dk_acc = ws.take<float>(Bk * dp);
    float* dv_acc = ws.take<float>(Bk * dp);
    float* dq_part = ws.take<float>(Br * dp);
    float* p_block = ws.take<float>(Br * St);
    float* ds_block = ws.take<float>(Br * St);
    Pair* ds_rows = ws.take<Pair>(Br * Ps);  // dS rounded, for dQ
    Pair* pt = ws.take<Pair>(Br / 2 * St);   // P^T, pairs of rows
    Pair* dst = ws.take<Pair>(Br / 2 * St);  // dS^T
    // Q and dO in pairs of rows where some row of the block sees none of the keys (zeros then)
    Pair* q_pad = ws.take<Pair>(Br / 2 * dp);
    Pair* d_o_pad = ws.take<Pair>(Br / 2 * dp);
    std::size_t* begin = ws.take<std::size_t>(Br);
    std::size_t* end = ws.take<std::size_t>(Br);
    std::size_t* first = ws.take<std::size_t>(Bk);
    std::size_t* last = ws.take<std::size_t>(Bk);
    for (std::size_t x = 0; x < bc * dp; ++x) dk_acc[x] = dv_acc[x] = 0.0f;

    const RowRange seen_rows = B::row_blocks(pb, j0, bc, rows);
    using batch = typename S::batch;
    alignas(64) static constexpr float kLane[16] = {0, 1, 2,  3,  4,  5,  6,  7,
                                                    8, 9, 10, 11, 12, 13, 14, 15};
    const batch lane = batch::load_aligned(kLane);
    const batch sc(pb.scale), cap(pb.softcap),
        inv_cap(pb.softcap > 0.0f ? 1.0f / pb.softcap : 0.0f);
    for (std::size_t g = 0; g < pb.group; ++g) {
      const auto [q, d_o, lse, delta, dq] = pb.head(g);
      const std::size_t packed_rows = B::packed_rows(pb.q_len);
      const auto* head_rows =
          reinterpret_cast<const Pair*>(pb.rows_packed + g * pb.rows_packed_floats);
      const Pair* head_pairs = head_rows + 2 * packed_rows * pd;
      for (std::size_t i0 = seen_rows.begin; i0 < seen_rows.end; i0 += Br) {
        const std::size_t br = min_of(Br, rows.end - i0);
        B::row_spans(pb, lse, i0, br, j0, bc, begin, end);
        const Pair* q_pairs = head_pairs + i0 / 2 * dp;  // i0: a multiple of Br
        const Pair* d_o_pairs = head_pairs + (packed_rows + i0) / 2 * dp;
        if (!B::every_row_sees(end, br)) {
          pair_rows(q + i0 * d, br, end, d, q_pad);
          pair_rows(d_o + i0 * d, br, end, d, d_o_pad);
          q_pairs = q_pad;
          d_o_pairs = d_o_pad;
        }
        for (std::size_t x = 0; x < br * dp; ++x) dq_part[x] = 0.0f;
        const Pair* q_packed = head_rows + i0 * pd;
        const Pair* d_o_packed = head_rows + (packed_rows + i0) * pd;

        for (std::size_t g0 = 0; g0 < br; g0 += MR) {
          const std::size_t mr = min_of(MR, br - g0);
          const auto seen = B::group_keys(begin + g0, end + g0, mr, bc);
          float* p = p_block + g0 * St;
          float* ds = ds_block + g0 * St;
          if (seen.any()) {  // from the panel of the first key a row sees
            const std::size_t p0 = seen.first / NR * NR;
            const std::size_t used = (seen.widest - p0 + NR - 1) / NR;  // panels
            T::template score_rows<St>(mr, q_packed + g0 * pd, pd, kt + p0 * pd, used,
                                       p + p0);  // S = Q K^T
            T::template score_rows<St>(mr, d_o_packed + g0 * pd, pd, vt + p0 * pd, used,
                                       ds + p0);  // dO V^T
          }
          for (std::size_t r = 0; r < mr; ++r) {  // P and dS as the float32 kernel has them
            float* pr = p + r * St;
            float* dr = ds + r * St;
            auto* d16 = reinterpret_cast<std::uint16_t*>(ds_rows + (g0 + r) * Ps);
            const std::size_t from = seen.begin[r], to = seen.end[r];
            const typename S::batch lse_r(lse[i0 + g0 + r]), delta_r(delta[i0 + g0 + r]);
            for (std::size_t j = 0; j < fill; j += W) {
              typename S::batch pj(0.0f), dsj(0.0f);
              if (j < to && j + W > from) {
                // soft-capped: S = cap tanh(scale s / cap), dS times the cap's 1 - tanh^2
                batch score = batch::load_aligned(pr + j) * sc, slope(1.0f);
                if (pb.softcap > 0.0f) {
                  score = cap * S::tanh(score * inv_cap, slope);
                }
                if (pb.alibi) {  // ALiBi: -slope |key - diagonal|
                  const double offset = double(j0 + j) - double(pb.mask.diagonal(i0 + g0 + r));
                  const batch distance = xsimd::abs(lane + batch(static_cast<float>(offset)));
                  score = xsimd::fma(batch(-pb.alibi[g]), distance, score);
                }
                if (pb.tensor) {
                  const std::size_t at = pb.tensor.offset(g, i0 + g0 + r);
                  score = B::masked(pb.tensor, at, j0, j, from, to, score);
                }
                const auto x = S::mask_span(score - lse_r, j, from, to);
                pj = S::exp(xsimd::select(x > batch(0.0f), batch(0.0f), x));
                dsj = B::zero_outside(sc * pj * (batch::load_aligned(dr + j) - delta_r) * slope, j,
                                      from, to);
              }
              pj.store_aligned(pr + j);
              dsj.store_aligned(dr + j);
              const __m256bh rounded = _mm512_cvtneps_pbh(static_cast<__m512>(dsj));
              _mm256_storeu_si256(reinterpret_cast<__m256i*>(d16 + j),
                                  reinterpret_cast<__m256i>(rounded));
            }
          }
          T::template blend_group<Ps>(mr, seen, ds_rows + g0 * Ps, k_rows, dp, nullptr,
                                      dq_part + g0 * dp);  // dQ += dS K
        }

        B::key_rows(begin, end, br, bc, first, last);
        transpose_pairs(p_block, br, fill, pt);
        transpose_pairs(ds_block, br, fill, dst);
        blend_keys(pt, d_o_pairs, first, last, bc, dp, dv_acc);  // dV += P^T dO
        blend_keys(dst, q_pairs, first, last, bc, dp, dk_acc);   // dK += dS^T Q
        B::add_dq(pb, g, i0, br, block, dq_part, dp, dq);
      }
    }
    B::add_dkv(pb, rows, j0, bc, block, seen_rows.begin < seen_rows.end, dk_acc, dv_acc, dp);
  }
};

// The KernelCode of a bf16-products ISA: forward F (TiledBf16 or a kernel built on it), this
// backward.
template <class Arch, class F>
constexpr KernelCode tiled_bf16_code() {
  using Bw = TiledBf16Backward<Arch>;
  return KernelCode{.forward = {.rows = F::rows,
                                .partial = F::partial_rows,
                                .query_block = F::query_block,
                                .blocking = F::blocking},
                    .packing = {F::packed_bytes, F::pack},
                    .backward = {.key_block = SimdBackward<Arch>::key_block,
                                 .keys = Bw::keys,
                                 .packing = {Bw::packed_bytes, Bw::pack},
                                 .row_packing = {Bw::row_bytes, Bw::pack_rows}}};
}

}  // namespace
}  // namespace attnbench::kernels
