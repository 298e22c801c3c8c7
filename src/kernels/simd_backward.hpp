// The SIMD backward pass, naive and tiled, written once over the xsimd architecture `Arch` with
// the forward's micro-kernels (simd_common.hpp) and instantiated per ISA by simd_<isa>.cpp.
//
// Both strategies compute, for a group of MR query rows against a block of keys:
//   S = Q K^T and dP = dO V^T           (score micro-kernel, K^T and V^T packed in panels)
//   P = exp(scale S - LSE)              (the forward's log-sum-exp: no max, no sum)
//   dS = scale P (dP - D), D = dO . O   (the scale of dQ and dK folded in once)
//   dQ += dS K                          (blend micro-kernel, K packed in rows)
// and, reading P and dS down their columns (the blend micro-kernel with a row step),
//   dV += P^T dO,  dK += dS^T Q
// Tiled: a task owns a block of keys (dK and dV in its scratch), visits every query row block
// that sees it, and adds its dQ part in key block order (DqOrder). Naive: P and dS of a whole
// head are materialised by row tasks (which write dQ), then read back by key tasks.
#pragma once

#include "kernels/simd_common.hpp"

#include <algorithm>

namespace attnbench::kernels {
namespace {

template <class Arch>
struct SimdBackward : Simd<Arch> {
  using S = Simd<Arch>;
  using S::Br;
  using S::MR;
  using S::NR;
  using S::W;
  using typename S::batch;
  static_assert(Br == kRowsPerTask, "dQ's addition order counts row blocks of kRowsPerTask");

  // ---------------------------------------------------------------------------------------------
  // Packing, once per (batch, key/value head)
  // ---------------------------------------------------------------------------------------------
  // NOTE: the packed head is K^T in panels of NR keys ([head_dim][NR] each, keys past kv_len
  // zero), then V^T in the same panels (for dP = dO V^T), then K in rows padded to a multiple of
  // W columns (for dQ = dS K).
  static std::size_t packed_bytes(std::size_t kv_len, std::size_t d) {
    return (2 * S::padded_keys(kv_len) * d + kv_len * S::padded_dim(d)) * sizeof(float);
  }
  static const float* vt_panels(const float* packed, std::size_t kv_len, std::size_t d) {
    return packed + S::padded_keys(kv_len) * d;
  }
  static const float* k_rows(const float* packed, std::size_t kv_len, std::size_t d) {
    return packed + 2 * S::padded_keys(kv_len) * d;
  }

  // Keys [first, last) (first a multiple of NR), k and v at key `first`'s rows.
  static void pack(const float* k, const float* v, std::size_t kv_len, std::size_t d,
                   std::size_t first, std::size_t last, void* out) {
    float* packed = static_cast<float*>(out);
    const std::size_t panels_end = last == kv_len ? S::padded_keys(kv_len) : last;
    float* vt = packed + S::padded_keys(kv_len) * d;
    for (std::size_t j0 = first; j0 < panels_end; j0 += NR) {
      for (std::size_t c = 0; c < d; ++c) {
        for (std::size_t j = 0; j < NR; ++j) {
          const bool key = j0 + j < kv_len;
          packed[j0 * d + c * NR + j] = key ? k[(j0 + j - first) * d + c] : 0.0f;
          vt[j0 * d + c * NR + j] = key ? v[(j0 + j - first) * d + c] : 0.0f;
        }
      }
    }
    const std::size_t dp = S::padded_dim(d);
    float* rows = packed + 2 * S::padded_keys(kv_len) * d;
    for (std::size_t j = first; j < last; ++j) {
      for (std::size_t c = 0; c < dp; ++c) rows[j * dp + c] = c < d ? k[(j - first) * d + c] : 0.0f;
    }
  }

  // NOTE: the query side is packed once per call too (RowPacking), not per task: every key
  // block's task reads the same rows, and packing them per task and row block cost about a tenth
  // of a one-thread backward at d = 64 (docs/studies/2026-12-07-backward-products.md). A query
  // head's rows: Q, then dO, in row blocks of Br rows laid out as Simd::pack_q lays them (the
  // score products broadcast them), then Q's and dO's rows padded to dp columns and aligned (the
  // blends stream them with aligned loads).
  static std::size_t packed_rows(std::size_t q_len) { return round_up(q_len, Br); }
  static std::size_t row_bytes(std::size_t q_len, std::size_t d) {
    return 2 * packed_rows(q_len) * (d + S::padded_dim(d)) * sizeof(float);
  }
  static void pack_rows(const float* q, const float* d_o, std::size_t q_len, std::size_t d,
                        std::size_t first, std::size_t last, void* out) {
    float* packed = static_cast<float*>(out);
    const std::size_t rows = packed_rows(q_len), dp = S::padded_dim(d);
    for (std::size_t i0 = first; i0 < last; i0 += Br) {
      const std::size_t br = min_of(Br, last - i0);
      S::pack_q(q + i0 * d, br, MR, d, packed + i0 * d);
      S::pack_q(d_o + i0 * d, br, MR, d, packed + (rows + i0) * d);
    }
    float* padded = packed + 2 * rows * d;
    for (std::size_t i = first; i < last; ++i) {
      pad_row(q + i * d, true, d, dp, padded + i * dp);
      pad_row(d_o + i * d, true, d, dp, padded + (rows + i) * dp);
    }
  }
  // Query head g's packed rows: Q and dO as pack_q lays them, and their rows of dp floats.
  struct PackedRows {
    const float* q;
    const float* d_o;
    const float* q_rows;
    const float* d_o_rows;
  };
  static PackedRows packed_head(const BackwardProblem& pb, std::size_t g) {
    const std::size_t d = pb.head_dim, rows = packed_rows(pb.q_len);
    const float* at = pb.rows_packed + g * pb.rows_packed_floats;
    const float* padded = at + 2 * rows * d;
    return {at, at + rows * d, padded, padded + rows * S::padded_dim(d)};
  }

  // ---------------------------------------------------------------------------------------------
  // Block sizes
  // ---------------------------------------------------------------------------------------------

  // Keys per tiled task, Bk: what one row block's visit touches, the task's dK and dV
  // accumulators (2 Bk dp floats), its keys' K^T, V^T and K rows (3 Bk d), P^T and dS^T (2 Bk Br)
  // and the row block's padded Q, dO and dQ part (3 Br dp), fits in three quarters of the L2 this
  // CPU reports, so that only Q and dO stream from farther away. 96 keys (a multiple of every
  // ISA's NR and of MR) where it fits, else 64 or 32 (whole panels still). Smaller blocks also
  // make more tasks, which two threads share more evenly.
  static std::size_t key_block(std::size_t d) {
    const std::size_t dp = S::padded_dim(d);
    const std::size_t l2 = reported_l2_bytes();
    for (std::size_t bk : {std::size_t{96}, std::size_t{64}}) {
      const std::size_t floats = 2 * bk * dp + 3 * bk * d + 2 * bk * Br + 3 * Br * dp;
      if (floats * sizeof(float) <= l2 / 4 * 3) return bk;
    }
    return 32;
  }
  static constexpr std::size_t kMaxKeys = 96;
  // Row stride of the tiled backward's P and dS tiles: a compile-time constant, so that dQ's
  // blend broadcasts from one pointer at fixed offsets (Simd::blend_tile), and one cache line
  // more than a key block, so that the rows fall in different L1 sets.
  static constexpr std::size_t kBlockStride = kMaxKeys + 16;
  static_assert(kBlockStride % W == 0, "tile rows must be whole vectors");
  static_assert(kMaxKeys % NR == 0 && 64 % NR == 0 && 32 % NR == 0,
                "a key block must be whole panels");

  // ---------------------------------------------------------------------------------------------
  // The pieces
  // ---------------------------------------------------------------------------------------------

  // Lanes of the vector at key `first` in [begin, end) stay; the rest become 0.
  static batch zero_outside(batch x, std::size_t first, std::size_t begin, std::size_t end) {
    return S::mask_span(x, first, begin, end, batch(0.0f));
  }

  // Row `at`'s score vector at index j of a block whose index 0 is key `key0`, under the mask
  // tensor's values read within [begin, end) (Simd::tensor_lanes): plus its bias, or -inf where a
  // boolean mask keeps no key, as the forward's Simd::modify_scores has it.
  static batch masked(const MaskRows& t, std::size_t at, std::size_t key0, std::size_t j,
                      std::size_t begin, std::size_t end, batch score) {
    const std::uint8_t* keep = t.keep ? t.keep + at + key0 : nullptr;
    const float* bias = t.bias ? t.bias + at + key0 : nullptr;
    bool all_kept;
    const batch b = S::tensor_lanes(keep, bias, j, begin, end, all_kept);
    if (all_kept) return score;
    return keep != nullptr ? xsimd::select(b == batch(kMinusInf), b, score) : score + b;
  }

  // For the mr rows of one group (their Q and dO rows at q and d_o, their LSE and D at lse and
  // delta) against a key block (its K^T and V^T panels at kt and vt): P into p and dS into ds
  // (tiles of rows with `stride` floats), over each row's keys [keys.begin[r], keys.end[r]) and
  // zero elsewhere up to `fill` keys (a multiple of W). `packed`: q and d_o are the group's rows
  // packed by Simd::pack_q. `cap` > 0: scores soft-capped (S = cap tanh(scale s / cap), and dS
  // carries the cap's derivative 1 - tanh^2). `alibi_slope` != 0: ALiBi's -alibi_slope |j + offset
  // - r| added to row r's score at index j (offset: the block's first key minus row 0's diagonal
  // key). `tensor`: the mask tensor's rows, row r's at at0 + r * tensor.row_stride, index j its
  // key key0 + j.
  static void group_gradients(const float* q, const float* d_o, std::size_t d, const float* kt,
                              const float* vt, const float* lse, const float* delta, float scale,
                              float cap, float alibi_slope, double offset, const MaskRows& tensor,
                              std::size_t at0, std::size_t key0, std::size_t mr,
                              const typename S::BlockKeys& keys, std::size_t fill, float* p,
                              float* ds, std::size_t stride, bool packed = false) {
    if (keys.any()) {  // from the panel of the first key a row sees (a window's edge block)
      const std::size_t p0 = keys.first / S::NR * S::NR;
      S::score_group(q, mr, d, kt + p0 * d, keys.widest - p0, p + p0, stride, false,
                     packed);  // S = Q K^T
      S::score_group(d_o, mr, d, vt + p0 * d, keys.widest - p0, ds + p0, stride, false,
                     packed);  // dP = dO V^T
    }
    const batch sc(scale), c(cap), inv_c(cap > 0.0f ? 1.0f / cap : 0.0f), minus_slope(-alibi_slope);
    alignas(64) static constexpr float kLane[16] = {0, 1, 2,  3,  4,  5,  6,  7,
                                                    8, 9, 10, 11, 12, 13, 14, 15};
    const batch lane = batch::load_aligned(kLane);
    for (std::size_t r = 0; r < mr; ++r) {
      float* pr = p + r * stride;
      float* dr = ds + r * stride;
      const std::size_t begin = keys.begin[r], end = keys.end[r];
      const batch lse_r(lse[r]), delta_r(delta[r]);
      for (std::size_t j = 0; j < fill; j += W) {
        if (j >= end || j + W <= begin) {
          batch(0.0f).store_aligned(pr + j);
          batch(0.0f).store_aligned(dr + j);
          continue;
        }
        // P = exp(scale S - LSE); keys outside the row's: exp(-inf) = 0.
        batch score = batch::load_aligned(pr + j) * sc, slope(1.0f);
        if (cap > 0.0f) {
          score = c * S::tanh(score * inv_c, slope);
        }
        if (alibi_slope != 0.0f) {
          const batch distance =
              xsimd::abs(lane + batch(static_cast<float>(double(j) + offset - double(r))));
          score = xsimd::fma(minus_slope, distance, score);
        }
        if (tensor) {
          const std::size_t at = at0 + r * tensor.row_stride;
          score = masked(tensor, at, key0, j, begin, end, score);
        }
        const batch x = S::mask_span(score - lse_r, j, begin, end);
        const batch pj = S::exp(xsimd::select(x > batch(0.0f), batch(0.0f), x));  // at_most_zero
        // dS = scale P (dP - D); outside 0, whatever dP holds there (a NaN in a masked V).
        const batch dsj =
            zero_outside(sc * pj * (batch::load_aligned(dr + j) - delta_r) * slope, j, begin, end);
        pj.store_aligned(pr + j);
        dsj.store_aligned(dr + j);
      }
    }
  }

  // acc[k] += sum over rows r in [first[k], last[k]) of p[r][k] * b[r], for keys k in [0, keys):
  // dV += P^T dO and dK += dS^T Q, with P and dS as [rows][keys] (row stride `stride`) read down
  // their columns, and b the padded rows. A key's rows are [first[k], last[k]) (both
  // non-decreasing in k), so that no key multiplies a row that does not see it (a NaN in that
  // row's Q or dO must not leak in): each group of MR keys runs over the rows all of them see,
  // then each key over its few more before and after them.
  static void blend_keys(const float* p, std::size_t stride, const float* b,
                         const std::size_t* first, const std::size_t* last, std::size_t keys,
                         std::size_t dp, float* acc) {
    using One = std::integral_constant<std::size_t, 1>;  // P^T's keys: broadcasts at fixed offsets
    auto add = [&](std::size_t kr, std::size_t k, std::size_t from, std::size_t to) {
      if (from < to) {
        S::blend_rows(kr, p + from * stride + k, One{}, b + from * dp, dp, to - from, nullptr,
                      acc + k * dp, stride);
      }
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

  // ---------------------------------------------------------------------------------------------
  // A tiled task's steps around its products, shared by every tiled SIMD backward (float32 and
  // bf16 products: tiled_bf16_backward.hpp)
  // ---------------------------------------------------------------------------------------------

  // The row blocks of `rows` that see some key of [j0, j0 + bc): [first, last). Those before see
  // none of these keys nor any later; those after see later keys only (a window), and their dQ
  // turns start with the first key block they see (BackwardProblem::dq_turn).
  static RowRange row_blocks(const BackwardProblem& pb, std::size_t j0, std::size_t bc,
                             RowRange rows) {
    const std::size_t seen_from = pb.first_row_seeing(j0) / Br * Br;
    const std::size_t seen_to = pb.last_row_seeing(j0 + bc - 1);
    const std::size_t first = seen_from > rows.begin ? seen_from : rows.begin;
    return {first, max_of(first, min_of(rows.end, seen_to))};
  }

  // Keys of the block [j0, j0 + bc) each row of the row block at i0 sees, [begin[r], end[r])
  // from j0 (empty for a zero row, LSE = -inf; a row that sees none enters the products as
  // zeros).
  static void row_spans(const BackwardProblem& pb, const float* lse, std::size_t i0, std::size_t br,
                        std::size_t j0, std::size_t bc, std::size_t* begin, std::size_t* end) {
    for (std::size_t r = 0; r < br; ++r) {
      const KeySpan visible = pb.visible(i0 + r);
      const bool none = visible.end <= j0 || lse[i0 + r] == kMinusInf;
      end[r] = none ? 0 : min_of(bc, visible.end - j0);
      begin[r] = visible.begin <= j0 ? 0 : min_of(end[r], visible.begin - j0);
      if (begin[r] >= end[r]) begin[r] = end[r] = 0;
    }
  }

  // Whether each of the br rows whose spans end at `end` sees some key of the block (else its
  // rows enter the products as zeros, from a copy).
  static bool every_row_sees(const std::size_t* end, std::size_t br) {
    return std::all_of(end, end + br, [](std::size_t e) { return e > 0; });
  }

  // The BlockKeys of the mr rows whose spans are at begin and end.
  static typename S::BlockKeys group_keys(const std::size_t* begin, const std::size_t* end,
                                          std::size_t mr, std::size_t bc) {
    return S::row_keys(mr, 0, bc, [&](std::size_t r) { return KeySpan{begin[r], end[r]}; });
  }

  // The rows of the block that see key k, [first[k], last[k]): past every row that sees some
  // keys of the block but none from k on, before every row that sees keys past k only (rows that
  // see none are zeros and may be included).
  static void key_rows(const std::size_t* begin, const std::size_t* end, std::size_t br,
                       std::size_t bc, std::size_t* first, std::size_t* last) {
    for (std::size_t k = 0; k < bc; ++k) {
      first[k] = 0;
      last[k] = br;
    }
    for (std::size_t r = 0; r < br; ++r) {
      if (end[r] == 0) continue;
      for (std::size_t k = end[r]; k < bc; ++k) first[k] = r + 1;
    }
    for (std::size_t r = br; r-- > 0;) {
      if (end[r] == 0) continue;
      for (std::size_t k = 0; k < begin[r]; ++k) last[k] = r;
    }
  }

  // dQ of the row block at i0 (query head g) += the task's part, in key block order (DqOrder).
  static void add_dq(const BackwardProblem& pb, std::size_t g, std::size_t i0, std::size_t br,
                     std::size_t block, const float* dq_part, std::size_t dp, float* dq) {
    const std::size_t d = pb.head_dim;
    pb.dq_order.wait(g, i0, pb.dq_turn(i0, block));
    for (std::size_t r = 0; r < br; ++r) {
      float* row = dq + (i0 + r) * d;
      const float* part = dq_part + r * dp;
      std::size_t c = 0;
      for (; c + W <= d; c += W)
        (batch::load_unaligned(row + c) + batch::load_aligned(part + c)).store_unaligned(row + c);
      for (; c < d; ++c) row[c] += part[c];
    }
    pb.dq_order.done(g, i0, pb.dq_turn(i0, block));
  }

  // dK and dV of keys [j0, j0 + bc) += the task's parts, in segment order (DkvOrder); nothing to
  // add when the task's rows saw none of the keys (`seen` false), but its turn still passes.
  static void add_dkv(const BackwardProblem& pb, RowRange rows, std::size_t j0, std::size_t bc,
                      std::size_t block, bool seen, const float* dk_acc, const float* dv_acc,
                      std::size_t dp) {
    const std::size_t d = pb.head_dim;
    const std::size_t segment = rows.begin / kBackwardSegmentRows;
    pb.dkv_order.wait(block, segment);
    for (std::size_t k = 0; seen && k < bc; ++k) {
      for (std::size_t c = 0; c < d; ++c) {
        pb.dk[(j0 + k) * d + c] += dk_acc[k * dp + c];
        pb.dv[(j0 + k) * d + c] += dv_acc[k * dp + c];
      }
    }
    pb.dkv_order.done(block, segment);
  }

  // A row padded to dp columns (zeros past d), or all zeros.
  static void pad_row(const float* row, bool keep, std::size_t d, std::size_t dp, float* out) {
    std::size_t c = 0;
    if (keep) {
      for (; c + W <= d; c += W) batch::load_unaligned(row + c).store_aligned(out + c);
      for (; c < d; ++c) out[c] = row[c];
    }
    for (; c < dp; ++c) out[c] = 0.0f;
  }
};

// ---------------------------------------------------------------------------------------------
// tiled/simd backward: one task per key block
// ---------------------------------------------------------------------------------------------

template <class Arch>
struct TiledSimdBackward : SimdBackward<Arch> {
  using B = SimdBackward<Arch>;
  using S = Simd<Arch>;
  using B::Br;
  using B::MR;

  static void keys(const BackwardProblem& pb, KeyRange keys, RowRange rows, Workspace& ws) {
    static_assert(kBackwardSegmentRows % Br == 0, "a row segment must be whole row blocks");
    const std::size_t d = pb.head_dim, dp = S::padded_dim(d);
    const std::size_t j0 = keys.begin, bc = keys.end - keys.begin, Bk = pb.key_block;
    const std::size_t fill = round_up(bc, S::NR);
    const std::size_t block = j0 / Bk;
    const float* kt = pb.kv_packed + j0 * d;
    const float* vt = B::vt_panels(pb.kv_packed, pb.kv_len, d) + j0 * d;
    const float* k_rows = B::k_rows(pb.kv_packed, pb.kv_len, d) + j0 * dp;
    float* dk_acc = ws.take<float>(Bk * dp);
    float* dv_acc = ws.take<float>(Bk * dp);
    // the row block's Q and dO rows where some row sees none of the keys (zeros then)
    float* q_pad = ws.take<float>(Br * dp);
    float* d_o_pad = ws.take<float>(Br * dp);
    float* dq_part = ws.take<float>(Br * dp);
    // P and dS of the row block against the keys, rows kBlockStride floats apart
    constexpr std::integral_constant<std::size_t, B::kBlockStride> St{};
    float* p_block = ws.take<float>(Br * St);
    float* ds_block = ws.take<float>(Br * St);
    std::size_t* begin = ws.take<std::size_t>(Br);
    std::size_t* end = ws.take<std::size_t>(Br);
    std::size_t* first = ws.take<std::size_t>(Bk);
    std::size_t* last = ws.take<std::size_t>(Bk);
    for (std::size_t x = 0; x < bc * dp; ++x) dk_acc[x] = dv_acc[x] = 0.0f;

    const RowRange seen_rows = B::row_blocks(pb, j0, bc, rows);
    for (std::size_t g = 0; g < pb.group; ++g) {
      const auto [q, d_o, lse, delta, dq] = pb.head(g);
      const auto packed = B::packed_head(pb, g);
      for (std::size_t i0 = seen_rows.begin; i0 < seen_rows.end; i0 += Br) {
        const std::size_t br = min_of(Br, rows.end - i0);
        // Keys of the block each row sees (none for a zero row, LSE = -inf); a row that sees
        // none enters the products as zeros.
        B::row_spans(pb, lse, i0, br, j0, bc, begin, end);
        const float* q_rows = packed.q_rows + i0 * dp;
        const float* d_o_rows = packed.d_o_rows + i0 * dp;
        if (!B::every_row_sees(end, br)) {
          for (std::size_t r = 0; r < br; ++r) {
            B::pad_row(q + (i0 + r) * d, end[r] > 0, d, dp, q_pad + r * dp);
            B::pad_row(d_o + (i0 + r) * d, end[r] > 0, d, dp, d_o_pad + r * dp);
          }
          q_rows = q_pad;
          d_o_rows = d_o_pad;
        }
        for (std::size_t x = 0; x < br * dp; ++x) dq_part[x] = 0.0f;
        const float* q_packed = packed.q + i0 * d;  // i0: a multiple of Br
        const float* d_o_packed = packed.d_o + i0 * d;

        for (std::size_t g0 = 0; g0 < br; g0 += MR) {
          const std::size_t mr = min_of(MR, br - g0);
          const auto seen = B::group_keys(begin + g0, end + g0, mr, bc);
          // (A group that sees none of the keys still writes its zeros, which blend_keys reads.)
          float* p = p_block + g0 * St;
          float* ds = ds_block + g0 * St;
          B::group_gradients(q_packed + g0 * d, d_o_packed + g0 * d, d, kt, vt, lse + i0 + g0,
                             delta + i0 + g0, pb.scale, pb.softcap, pb.alibi ? pb.alibi[g] : 0.0f,
                             double(j0) - double(pb.mask.diagonal(i0 + g0)), pb.tensor,
                             pb.tensor.offset(g, i0 + g0), j0, mr, seen, fill, p, ds, St, true);
          S::blend_group(mr, seen, ds, St, k_rows, dp, nullptr, dq_part + g0 * dp);  // dQ += dS K
        }

        B::key_rows(begin, end, br, bc, first, last);
        B::blend_keys(p_block, St, d_o_rows, first, last, bc, dp, dv_acc);  // dV += P^T dO
        B::blend_keys(ds_block, St, q_rows, first, last, bc, dp, dk_acc);   // dK += dS^T Q
        B::add_dq(pb, g, i0, br, block, dq_part, dp, dq);
      }
    }
    B::add_dkv(pb, rows, j0, bc, block, seen_rows.begin < seen_rows.end, dk_acc, dv_acc, dp);
  }
};

// ---------------------------------------------------------------------------------------------
// naive/simd backward: P and dS materialised
// ---------------------------------------------------------------------------------------------

template <class Arch>
struct NaiveSimdBackward : SimdBackward<Arch> {
  using B = SimdBackward<Arch>;
  using S = Simd<Arch>;
  using B::Br;
  using B::MR;

  // P and dS rows of query head g, and dQ = dS K for them.
  static void rows(const BackwardProblem& pb, std::size_t g, RowRange rows, Workspace& ws) {
    static_assert(kNaiveRowAlign % S::NR == 0, "P's rows must be whole panels");
    const std::size_t d = pb.head_dim, dp = S::padded_dim(d);
    const std::size_t stride = pb.p_stride;
    const std::size_t Bk = pb.key_block;
    const float* q = pb.q + g * pb.q_len * d;
    const float* d_o = pb.d_o + g * pb.q_len * d;
    const float* lse = pb.lse + g * pb.q_len;
    const float* delta = pb.delta + g * pb.q_len;
    const float* k_rows = B::k_rows(pb.kv_packed, pb.kv_len, d);
    float* dq_acc = ws.take<float>(Br * dp);
    for (std::size_t i0 = rows.begin; i0 < rows.end; i0 += Br) {
      const std::size_t br = min_of(Br, rows.end - i0);
      for (std::size_t x = 0; x < br * dp; ++x) dq_acc[x] = 0.0f;
      const KeySpan span = pb.mask.rows(i0, br);
      for (std::size_t j0 = on_grid(0, span.begin, Bk); j0 < span.end; j0 += Bk) {
        const std::size_t bc = min_of(Bk, span.end - j0);
        for (std::size_t g0 = 0; g0 < br; g0 += MR) {
          const std::size_t mr = min_of(MR, br - g0);
          std::size_t begin[MR], end[MR];
          B::row_spans(pb, lse, i0 + g0, mr, j0, bc, begin, end);
          const auto seen = B::group_keys(begin, end, mr, bc);
          // (A group that sees none of the keys still writes its zeros, which key_rows reads.)
          float* p = pb.p + (i0 + g0) * stride + j0;
          float* ds = pb.ds + (i0 + g0) * stride + j0;
          B::group_gradients(q + (i0 + g0) * d, d_o + (i0 + g0) * d, d, pb.kv_packed + j0 * d,
                             B::vt_panels(pb.kv_packed, pb.kv_len, d) + j0 * d, lse + i0 + g0,
                             delta + i0 + g0, pb.scale, pb.softcap, pb.alibi ? pb.alibi[g] : 0.0f,
                             double(j0) - double(pb.mask.diagonal(i0 + g0)), pb.tensor,
                             pb.tensor.offset(g, i0 + g0), j0, mr, seen, round_up(bc, S::W), p, ds,
                             stride);
          S::blend_group(mr, seen, ds, stride, k_rows + j0 * dp, dp, nullptr, dq_acc + g0 * dp);
        }
      }
      for (std::size_t r = 0; r < br; ++r) {
        for (std::size_t c = 0; c < d; ++c) {
          pb.dq[(g * pb.q_len + i0 + r) * d + c] = dq_acc[r * dp + c];
        }
      }
    }
  }

  // dV += P^T dO and dK += dS^T Q for keys `keys`, over every row of query head g that sees them.
  static void key_rows(const BackwardProblem& pb, std::size_t g, KeyRange keys, Workspace& ws) {
    const std::size_t d = pb.head_dim, dp = S::padded_dim(d);
    const std::size_t stride = pb.p_stride;
    const std::size_t j0 = keys.begin, bk = keys.end - keys.begin;
    const float* q = pb.q + g * pb.q_len * d;
    const float* d_o = pb.d_o + g * pb.q_len * d;
    const float* lse = pb.lse + g * pb.q_len;
    const std::size_t r0 = pb.first_row_seeing(j0);
    const std::size_t rows = max_of(r0, pb.last_row_seeing(keys.end - 1)) - r0;
    float* q_pad = ws.take<float>(rows * dp);
    float* d_o_pad = ws.take<float>(rows * dp);
    float* dk_acc = ws.take<float>(bk * dp);
    float* dv_acc = ws.take<float>(bk * dp);
    std::size_t* first = ws.take<std::size_t>(bk);
    std::size_t* last = ws.take<std::size_t>(bk);
    // NOTE: rows() wrote P and dS of every row over the key blocks it sees (zeros for a zero row),
    // so row r0 + r holds the keys of [j0, j0 + bk) it sees here; blend_keys reads no other.
    for (std::size_t r = 0; r < rows; ++r) {
      const bool weighs = lse[r0 + r] != kMinusInf;
      B::pad_row(q + (r0 + r) * d, weighs, d, dp, q_pad + r * dp);
      B::pad_row(d_o + (r0 + r) * d, weighs, d, dp, d_o_pad + r * dp);
    }
    for (std::size_t k = 0; k < bk; ++k) {
      first[k] = pb.first_row_seeing(j0 + k) - r0;
      last[k] = max_of(pb.first_row_seeing(j0 + k), pb.last_row_seeing(j0 + k)) - r0;
    }
    for (std::size_t x = 0; x < bk * dp; ++x) dk_acc[x] = dv_acc[x] = 0.0f;
    const float* p = pb.p + r0 * stride + j0;
    const float* ds = pb.ds + r0 * stride + j0;
    B::blend_keys(p, stride, d_o_pad, first, last, bk, dp, dv_acc);  // dV += P^T dO
    B::blend_keys(ds, stride, q_pad, first, last, bk, dp, dk_acc);   // dK += dS^T Q
    for (std::size_t k = 0; k < bk; ++k) {
      for (std::size_t c = 0; c < d; ++c) {
        pb.dk[(j0 + k) * d + c] += dk_acc[k * dp + c];
        pb.dv[(j0 + k) * d + c] += dv_acc[k * dp + c];
      }
    }
  }
};

}  // namespace
}  // namespace attnbench::kernels
