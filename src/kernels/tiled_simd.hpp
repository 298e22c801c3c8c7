// tiled/simd: FlashAttention's online softmax with register-blocked micro-kernels, written once
// over the xsimd architecture and the K/V storage type T (float, Half, BFloat16, or a quantised
// Q8_0 / Q4_0, whose key blocks are always dequantised to float32 first), and instantiated per ISA
// by simd_<isa>.cpp.
//
// For a block of Br query rows (Simd::query_block: 48-192, from the L2 size), key blocks of Bc
// keys stream past; for each group of MR rows:
//   S = Q K_block^T                      (score micro-kernel, MR x NR tiles; wider for few rows)
//   m_new = max(m, scale rowmax S)       (one pass, reading S)
//   P = exp(scale S - m_new), l = l * exp(m - m_new) + rowsum P   (one pass, P over S)
//   O = O * exp(m - m_new) + P V_block    (blend micro-kernel; the rescale fused into its load)
// and at the end O /= l. A head whose K and V outgrow an L3 chunk is taken a chunk of keys at a
// time by a super block of query blocks (Simd::l3_keys). Scratch: a score tile of 4 MR rows of
// Simd::kTileStride floats (Bc of them used), the accumulator, the packed Q rows (Simd::pack_q) and
// 2 floats of each row of a query block (of a super block for such a head); K and V are read from
// the packed copy the driver made once.
#pragma once

#include "kernels/simd_common.hpp"
#include "kernels/simd_quant.hpp"

namespace attnbench::kernels {
namespace {

template <class Arch, class T>
struct TiledSimd : Simd<Arch> {
  using S = Simd<Arch>;
  using S::MR;

  // Rows `rows` against keys `keys` (keys.begin a multiple of the key block). With `partial` null
  // the normalised rows go to head.o; otherwise the unnormalised accumulator and each row's
  // (m, l) go to *partial. A variant with only some `Phases` skips the others' work (its output
  // is not attention: the cost model times it); its score tile starts zeroed, so that a phase that
  // reads it without the one that writes it computes on zeros.
  template <unsigned Phases = kAllPhases>
  static void compute(const HeadProblem& head, RowRange rows, KeyRange keys,
                      const PartialRows* partial, Workspace& ws) {
    const std::size_t d = head.head_dim;
    const std::size_t dp = S::padded_dim(d);
    const std::size_t Bc = S::key_block(dp);
    constexpr std::integral_constant<std::size_t, S::kTileStride> Ss{};  // score tile row stride
    const std::size_t Br = S::query_block(dp);
    const T* kt = static_cast<const T*>(head.kv_packed);  // K^T panels
    const T* v = S::packed_v(kt, head.kv_capacity, d);
    // A head of at most kFewGroups row groups (decoding several rows per query head: up to 48
    // folded rows with AVX-512, 24 with AVX2; never a task of a longer head's rows, which a
    // two-thread call cuts into 48-row tasks) does few FMAs per key block byte, and reads each
    // key block from beyond L2: its first group prefetches the block (as a group of at most
    // kStreamingRows always does), and reads it as stored, 16-bit included. A row block of more
    // groups (a prefill's query block) widens a 16-bit key block to float32 once (K^T panels and V
    // rows, 8 x Bc x d bytes as the float32 block), not once per group. Widening first makes a
    // pass that streams the block with no FMAs to hide it behind: on the Zen 5 guest, decoding in
    // 16 bits ran this way 1.45-1.57x faster at 16 folded rows (2 groups; avx2 1.26-1.58x),
    // 1.20-1.35x at 32 (3) and 1.07-1.17x at 48 (4), and an unwidened prefill 0.99-1.01x (docs/
    // studies/2026-12-02-decode.md).
    constexpr std::size_t kFewGroups = 4;
    // Scores of up to kFewGroups groups (a few-group row block keeps them all: `interleaved`)
    float* s_tile = ws.take<float>(kFewGroups * MR * Ss);
    if constexpr (Phases != kAllPhases) {
      for (std::size_t x = 0; x < kFewGroups * MR * Ss; ++x) s_tile[x] = 0.0f;
    }
    // Br, or a super block of them (never more than the rows asked for: the scratch it sizes)
    const std::size_t Rs = min_of(S::super_rows(dp, head.kv_len), rows.end - rows.begin);
    const std::size_t Kc = S::l3_keys(dp);
    float* o_all = ws.take<float>(Rs * dp);
    float* m_all = ws.take<float>(Rs);
    float* l_all = ws.take<float>(Rs);
    float* alpha = ws.take<float>(kFewGroups * MR);
    // Q rows of a super block, packed query block by query block (each a whole number of groups)
    const std::size_t q_block_floats = round_up(Br, MR) * d;
    float* q_packed = ws.take<float>((Rs + Br - 1) / Br * q_block_floats);
    constexpr bool kWidens = !std::is_same_v<T, float>;
    float* kt_wide = kWidens ? ws.take<float>(round_up(Bc, S::NR) * d) : nullptr;
    float* v_wide = kWidens ? ws.take<float>(Bc * dp) : nullptr;
    // The decode blend's weights and V's scales for a run of keys (QuantPacking::weights)
    [[maybe_unused]] float* v_weights = nullptr;
    [[maybe_unused]] std::uint16_t* v_scales = nullptr;
    if constexpr (kQuantised<T>) {
      using Quant = QuantPacking<Arch, T>;
      v_weights = ws.take<float>(Quant::weight_floats(MR, d));
      v_scales = ws.take<std::uint16_t>(Quant::blocks(d) * Quant::kWeightStride);
    }

    // The online softmax of a group of mr rows against the block, their scores in S at s (Bc
    // floats a row): their max m and sum l updated, a[r] = exp(m_old - m_new); whether any row's
    // max moved (its accumulator then needs the rescale). Rows from query row i, keys from j0.
    auto softmax_group = [&](float* s, float* a, std::size_t mr, const typename S::BlockKeys& seen,
                             float* m, float* l, std::size_t i, std::size_t j0) {
      // Every row's max first, then every row's exp sweep: a row's sweep waits for its max
      // (dependent vmaxps chains, then the fold across lanes), and one row's sweep fills the
      // reorder window, so row by row that wait was paid for every row at small d.
      float block_max[S::MR];
      float scale[S::MR];
      for (std::size_t r = 0; r < mr; ++r) {
        float* s_r = s + r * Ss;
        scale[r] = head.scale;
        if (head.only_drops_keys()) {  // the sweeps scale what it leaves
          S::drop_removed(s_r, seen.begin[r], seen.end[r],
                          head.tensor.keep + head.tensor_row(i + r) + j0);
        } else if (head.modifies_scores()) {  // modified in place, scaled: the sweeps' is 1
          const std::size_t at = head.tensor_row(i + r) + j0;  // the block's first key
          S::modify_scores(s_r, seen.begin[r], seen.end[r], head.scale, head.softcap,
                           head.alibi_slope(i + r), double(j0) - double(head.diagonal(i + r)),
                           head.tensor.keep ? head.tensor.keep + at : nullptr,
                           head.tensor.bias ? head.tensor.bias + at : nullptr);
          scale[r] = 1.0f;
        }
        block_max[r] = S::scale_and_max(s_r, seen.begin[r], seen.end[r], scale[r]);
      }
      bool rescale = false;
      for (std::size_t r = 0; r < mr; ++r) {
        float* s_r = s + r * Ss;
        const float m_new = block_max[r] > m[r] ? block_max[r] : m[r];
        const float m_ref = max_reference(m_new);
        a[r] = 1.0f;
        if (m_new != m[r]) {  // rescale only when the max moved
          a[r] = scalar_exp(m[r] - m_ref);
          rescale = true;
          m[r] = m_new;
        }
        // l = l * exp(m_old - m_new) + rowsum(P)
        l[r] = S::mul_add(l[r], a[r],
                          S::exp_and_sum(s_r, seen.begin[r], seen.end[r], scale[r], m_ref));
      }
      return rescale;
    };

    // Rows [i0, i0 + br) against keys [j0, j0 + bc), the block's K^T panels at kb and V rows at
    // vb (stored, or widened to float32), the first group prefetching them if `first_streams`; the
    // rows' accumulator at o_acc, their max and sum at m and l. Group after group, each over the
    // whole block (scores, softmax, blend) in one MR x Bc score tile before the next.
    auto block = [&](std::size_t i0, std::size_t br, const float* q_block, std::size_t j0,
                     std::size_t bc, const auto* kb, const auto* vb, bool first_streams,
                     float* o_acc, float* m, float* l) {
      const std::size_t group = row_group(br, MR);  // 16 rows: 8 + 8, not 12 + 4
      for (std::size_t g = 0; g < br; g += group) {
        const std::size_t mr = min_of(group, br - g);  // edge group: fewer rows
        const auto seen = S::block_keys(head, i0 + g, mr, j0, bc);
        if (!seen.any()) continue;  // no row of the group sees this block
        const bool streams = first_streams && g == 0;
        if constexpr ((Phases & kScorePhase) != 0) {
          // from the panel of the first key a row sees (a window's edge block)
          const std::size_t p0 = seen.first / S::NR * S::NR;
          S::score_group(q_block + g / group * MR * d, mr, d, kb + p0 * d, seen.widest - p0,
                         s_tile + p0, Ss, streams, true);
        }
        bool rescale = false;
        if constexpr ((Phases & kSoftmaxPhase) != 0) {
          rescale = softmax_group(s_tile, alpha, mr, seen, m + g, l + g, i0 + g, j0);
        }
        // O = O * exp(m_old - m_new) + P V
        if constexpr ((Phases & kBlendPhase) != 0) {
          S::blend_group(mr, seen, s_tile, Ss, vb, dp, rescale ? alpha : nullptr, o_acc + g * dp,
                         streams);
        }
      }
    };

    // NOTE: a row block of 2 to kFewGroups groups (decoding several rows per query head) whose
    // rows all see the whole key block takes it a few panels (scores) and a run of keys (blend)
    // at a time, every group over them before the next: the first group streams them from
    // memory, prefetching, and the others read them from L1 or L2 meanwhile. Group after group,
    // the memory sat idle while the groups after the first computed on the block in L2 (compute
    // and memory near the machine's balance, as 16 folded rows in float32 are, then add up
    // instead of overlapping). Each row's FMAs run in the same order either way. On the Zen 4
    // guest (AMD EPYC family 25 model 17), the Llama layer at 65536 keys on 2 threads, the two
    // orders alternated call by call on the same caches: 16 folded rows in float32 ran 1.03-1.11x
    // faster (avx512f) and 1.15-1.16x (avx2; 8 rows, 2 groups of 4, 1.16x); 16-bit, compute-bound
    // there, and 32 or 48 rows 0.99-1.03x (docs/studies/2026-12-02-decode.md).
    constexpr std::size_t kInterleavedPanels = 3;  // 6 vectors: whole tiles of 2 and of 3
    auto interleaved = [&](std::size_t i0, std::size_t br, std::size_t j0, std::size_t bc,
                           const auto* kb, const auto* vb, float* o_acc, float* m, float* l) {
      const std::size_t group = row_group(br, MR);
      if constexpr ((Phases & kScorePhase) != 0) {
        const std::size_t panels = (bc + S::NR - 1) / S::NR;
        for (std::size_t p0 = 0; p0 < panels; p0 += kInterleavedPanels) {
          const std::size_t np = min_of(kInterleavedPanels, panels - p0);
          for (std::size_t g = 0; g < br; g += group) {
            S::score_rows(min_of(group, br - g), head.q + (i0 + g) * d, d, kb + p0 * S::NR * d, np,
                          s_tile + g * Ss + p0 * S::NR, Ss, g == 0);
          }
        }
      }
      bool rescale[kFewGroups] = {};
      if constexpr ((Phases & kSoftmaxPhase) != 0) {
        for (std::size_t g = 0; g < br; g += group) {
          const std::size_t mr = min_of(group, br - g);
          rescale[g / group] =
              softmax_group(s_tile + g * Ss, alpha + g, mr, S::block_keys(head, i0 + g, mr, j0, bc),
                            m + g, l + g, i0 + g, j0);
        }
      }
      if constexpr ((Phases & kBlendPhase) != 0) {
        for (std::size_t k0 = 0; k0 < bc; k0 += S::kBlendKeys) {
          const std::size_t run = min_of(S::kBlendKeys, bc - k0);
          for (std::size_t g = 0; g < br; g += group) {
            const float* a = k0 == 0 && rescale[g / group] ? alpha + g : nullptr;
            S::blend_rows(min_of(group, br - g), s_tile + g * Ss + k0, Ss, vb + k0 * dp, dp, run, a,
                          o_acc + g * dp, 1, g == 0);
          }
        }
      }
    };

    // NOTE: a quantised key block for few groups of rows (decoding) seen whole by every row is
    // taken a few panels and a run of keys at a time, every group over a piece before the next:
    // the scores on integer dot products (the query quantised) or over K^T panels of half the L1
    // this CPU reports, dequantised just before; the blend over V's codes as stored, each key's
    // block scale folded into its P weight (QuantPacking::blend_rows_codes). Converting the codes
    // sets the decode time (docs/studies/2026-12-06-quantised-kv.md).
    [[maybe_unused]] auto quant_few = [&](std::size_t i0, std::size_t br, std::size_t j0,
                                          std::size_t bc, float* o_acc, float* m, float* l) {
      if constexpr (kQuantised<T>) {
        using Quant = QuantPacking<Arch, T>;
        const std::size_t group = row_group(br, MR);
        const std::size_t l1_floats = reported_l1_bytes() / 2 / sizeof(float);
        const std::size_t chunk_panels = max_of(1, l1_floats / (S::NR * d));
        if constexpr ((Phases & kScorePhase) != 0) {
          const std::size_t panels = (bc + S::NR - 1) / S::NR;
          const bool integer = head.q_codes != nullptr && Quant::integer_dot();
          const std::size_t nb = query_blocks(d);
          for (std::size_t p0 = 0; p0 < panels; p0 += chunk_panels) {
            const std::size_t np = min_of(chunk_panels, panels - p0);
            const std::uint8_t* kp = Quant::panels(head.kv_packed, j0 + p0 * S::NR, d);
            if (!integer) Quant::widen_panels(kp, np, d, kt_wide);
            for (std::size_t g = 0; g < br; g += group) {
              const std::size_t i = i0 + g;
              float* s = s_tile + g * Ss + p0 * S::NR;
              if (integer) {
                Quant::score_rows_int8(min_of(group, br - g), head.q_codes + i * nb * kQuantBlock,
                                       head.q_scales + i * nb, head.q_sums + i * nb, d, kp, np, s,
                                       Ss);
              } else {
                S::score_rows(min_of(group, br - g), head.q + i * d, d, kt_wide, np, s, Ss);
              }
            }
          }
        }
        bool rescale[kFewGroups] = {};
        if constexpr ((Phases & kSoftmaxPhase) != 0) {
          for (std::size_t g = 0; g < br; g += group) {
            const std::size_t mr = min_of(group, br - g);
            rescale[g / group] =
                softmax_group(s_tile + g * Ss, alpha + g, mr,
                              S::block_keys(head, i0 + g, mr, j0, bc), m + g, l + g, i0 + g, j0);
          }
        }
        if constexpr ((Phases & kBlendPhase) != 0) {
          for (std::size_t k0 = 0; k0 < bc; k0 += S::kBlendKeys) {
            const std::size_t run = min_of(S::kBlendKeys, bc - k0);
            const std::uint8_t* vr = Quant::v_rows(head.kv_packed, head.kv_capacity, j0 + k0, d);
            Quant::gather_scales(vr, run, d, v_scales);
            for (std::size_t g = 0; g < br; g += group) {
              const std::size_t mr = min_of(group, br - g);
              const float* a = k0 == 0 && rescale[g / group] ? alpha + g : nullptr;
              Quant::weights(mr, s_tile + g * Ss + k0, Ss, v_scales, run, d, v_weights);
              Quant::blend_rows_codes(mr, v_weights, vr, run, d, dp, a, o_acc + g * dp, g == 0);
            }
          }
        }
      }
    };

    // Super blocks of Rs rows (one query block unless the head's K and V outgrow a chunk): each
    // chunk of Kc keys, then each query block of the super block over the chunk's key blocks.
    for (std::size_t s0 = rows.begin; s0 < rows.end; s0 += Rs) {
      const std::size_t sr = min_of(Rs, rows.end - s0);
      for (std::size_t r = 0; r < sr; ++r) {
        m_all[r] = kMinusInf;
        l_all[r] = 0.0f;
      }
      for (std::size_t x = 0; x < sr * dp; ++x) o_all[x] = 0.0f;
      for (std::size_t i0 = s0; i0 < s0 + sr; i0 += Br) {
        const std::size_t br = min_of(Br, s0 + sr - i0);
        S::pack_q(head.q + i0 * d, br, row_group(br, MR), d,
                  q_packed + (i0 - s0) / Br * q_block_floats);
      }
      // Key blocks no row sees (past the causal diagonal, before a window) are skipped; the
      // others start on the grid of Bc keys from keys.begin, whatever the rows.
      const KeySpan super_keys = head.visible_rows(s0, sr);
      const std::size_t super_last = min_of(super_keys.end, keys.end);
      for (std::size_t c0 = on_grid(keys.begin, super_keys.begin, Kc); c0 < super_last; c0 += Kc) {
        for (std::size_t i0 = s0; i0 < s0 + sr; i0 += Br) {
          const std::size_t br = min_of(Br, s0 + sr - i0);  // edge block: fewer rows
          const KeySpan block_keys = head.visible_rows(i0, br);
          const std::size_t last_key = min_of(min_of(block_keys.end, keys.end), c0 + Kc);
          const std::size_t first_key = max_of(c0, on_grid(keys.begin, block_keys.begin, Bc));
          const float* q_block = q_packed + (i0 - s0) / Br * q_block_floats;
          float* o_acc = o_all + (i0 - s0) * dp;
          float* m = m_all + (i0 - s0);
          float* l = l_all + (i0 - s0);
          for (std::size_t j0 = first_key; j0 < last_key; j0 += Bc) {
            const std::size_t bc = min_of(Bc, last_key - j0);  // edge block: fewer keys
            const bool few = br <= kFewGroups * MR && head.q_len <= kFewGroups * MR;
            if constexpr (kQuantised<T>) {
              // Dequantised to float32 (a quantised panel has a scale per key and block of 32:
              // the float micro-kernels' loads cannot take it); memory is read once, as stored.
              if (few && head.seen_by_all(i0, br, j0, bc)) {
                quant_few(i0, br, j0, bc, o_acc, m, l);
              } else {
                using Quant = QuantPacking<Arch, T>;
                Quant::widen_panels(Quant::panels(head.kv_packed, j0, d), (bc + S::NR - 1) / S::NR,
                                    d, kt_wide);
                Quant::widen_rows(Quant::v_rows(head.kv_packed, head.kv_capacity, j0, d), bc, d, dp,
                                  v_wide);
                block(i0, br, q_block, j0, bc, kt_wide, v_wide, false, o_acc, m, l);
              }
            } else if (kWidens && !few) {
              S::widen_block(kt + j0 * d, round_up(bc, S::NR) * d, kt_wide);
              S::widen_block(v + j0 * dp, bc * dp, v_wide);
              block(i0, br, q_block, j0, bc, kt_wide, v_wide, false, o_acc, m, l);
            } else if (few && br > MR && head.seen_by_all(i0, br, j0, bc)) {
              interleaved(i0, br, j0, bc, kt + j0 * d, v + j0 * dp, o_acc, m, l);
            } else {
              block(i0, br, q_block, j0, bc, kt + j0 * d, v + j0 * dp, few, o_acc, m, l);
            }
          }
        }
      }

      S::finish_rows(head, s0, sr, o_all, dp, m_all, l_all, partial, rows.begin);
    }
  }
};

}  // namespace
}  // namespace attnbench::kernels
