// naive/openblas: the baseline, what a NumPy user on Debian gets. The three naive steps with
// OpenBLAS's cblas_sgemm for both products:
//   S = scale * Q K^T (sgemm), softmax of each row in place (the SIMD kernels' vector exp),
//   O = P V (sgemm).
// OpenBLAS runs single-threaded inside each call; attnbench's driver supplies the threads, as it
// does for every kernel, so threads never oversubscribe the cores.
#include <cblas.h>

#include <mutex>

#include "kernels/common.hpp"

namespace attnbench::kernels {

namespace {
// Rows per sgemm call: one parallel task's rows. Scoring: blocks at the offsets where tasks start
// keep each row's rounding independent of the thread count. Blending: under the causal mask the
// block's rows share the keys its first row sees, and each row's few extra keys (fewer than a
// block) go through sgemv, so that no row multiplies a key it does not see (a masked key's V may
// hold NaN, and 0 * NaN is NaN).
constexpr std::size_t kBlendRows = kRowsPerTask;

// The softmax row of the widest SIMD table this CPU supports (dispatch by its ISA field).
auto widest_softmax_row() {
  for (const SimdTable* table : simd_tables()) {
    if (cpu_supports(table->isa)) return table->softmax_row;
  }
  return simd_sse4_2.softmax_row;  // x86-64 without SSE4.2: not a machine this study targets
}

void naive_rows(const HeadProblem& head, RowRange rows, Workspace& ws) {
  static std::once_flag single_threaded;
  std::call_once(single_threaded, [] { openblas_set_num_threads(1); });

  const std::size_t n = head.kv_len;
  const std::size_t d = head.head_dim;
  const std::size_t row_count = rows.end - rows.begin;
  float* S = ws.take<float>(row_count * n);
  KeySpan* keys = ws.take<KeySpan>(row_count);  // keys each row blends (empty: zero row)

  // Pass 1, score: S = Q K^T over every key (a mask or window is applied in pass 2), one sgemm per
  // block of kBlendRows rows: OpenBLAS may round a row differently depending on how many rows
  // share a call, and blocks at fixed row offsets keep the output the same for every thread count
  // (tasks start at multiples of 48 rows). The scale is applied in pass 2, not as sgemm's alpha:
  // with alpha = 0 a BLAS need not read Q and K at all, and a NaN or Inf in them would vanish
  // instead of making the row NaN (0 * NaN is NaN).
  for (std::size_t r0 = 0; r0 < row_count; r0 += kBlendRows) {
    const std::size_t rb = min_of(kBlendRows, row_count - r0);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(rb), int(n), int(d), 1.0f,
                head.q + (rows.begin + r0) * d, int(d), head.k, int(d), 0.0f, S + r0 * n, int(n));
  }

  // Pass 2, normalise each row over its visible keys: S *= scale, P = exp(S - m) / l, with the
  // SIMD kernels' vector exp (the widest ISA this CPU has), as NumPy's exp is vectorised too.
  const auto softmax_row = widest_softmax_row();
  for (std::size_t r = 0; r < row_count; ++r) {
    const KeySpan visible = head.visible(rows.begin + r);
    float scale = head.scale;
    if (head.modifies_scores()) {  // scaled, capped, biased, masked first: the sweep's scale 1
      const std::size_t i = rows.begin + r;
      for (std::size_t j = visible.begin; j < visible.end; ++j) {
        float x = head.scale * S[r * n + j];
        if (head.softcap > 0.0f) x = soft_capped(x, head.softcap);
        if (head.alibi) x += alibi_bias(head.alibi_slope(i), j, head.diagonal(i));
        S[r * n + j] = x;
      }
      if (head.tensor)
        apply_mask(head.tensor, head.tensor_row(i), S + r * n, visible.begin, visible.end, 0);
      scale = 1.0f;
    }
    const float l = softmax_row(S + r * n + visible.begin, visible.size(), scale,
                                head.lse ? head.lse + rows.begin + r : nullptr);
    keys[r] = l == 0.0f ? KeySpan{} : visible;
  }

  // Pass 3, blend: O = P V, block by block of rows over the keys all of them blend, then each
  // row's head and tail (no row multiplies a V it does not see).
  for (std::size_t r0 = 0; r0 < row_count; r0 += kBlendRows) {
    const std::size_t rb = min_of(kBlendRows, row_count - r0);
    std::size_t common_begin = 0, common_end = n;
    for (std::size_t r = r0; r < r0 + rb; ++r) {
      common_begin = keys[r].begin > common_begin ? keys[r].begin : common_begin;
      common_end = min_of(common_end, keys[r].end);
    }
    if (common_end < common_begin) common_end = common_begin;  // none shared
    float* o = head.o + (rows.begin + r0) * d;
    // (k = 0 still sets O = 0)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(rb), int(d),
                int(common_end - common_begin), 1.0f, S + r0 * n + common_begin, int(n),
                head.v + common_begin * d, int(d), 0.0f, o, int(d));
    auto add = [&](std::size_t r, std::size_t begin, std::size_t end) {  // row r, keys [begin, end)
      if (begin >= end) return;
      cblas_sgemv(CblasRowMajor, CblasTrans, int(end - begin), int(d), 1.0f, head.v + begin * d,
                  int(d), S + r * n + begin, 1, 1.0f, head.o + (rows.begin + r) * d, 1);
    };
    for (std::size_t r = r0; r < r0 + rb; ++r) {
      add(r, keys[r].begin, min_of(keys[r].end, common_begin));
      add(r, max_of(keys[r].begin, common_end), keys[r].end);
    }
  }
}

// Both products go to sgemm in blocks of kBlendRows rows (its own blocking within them is
// OpenBLAS's): K and V stream once per block, the score sgemm over every key whatever the mask.
// Score sweeps: sgemm writes S; softmax_row scales with the max, exps with the sum and
// normalises, each reading and rewriting it; the blend sgemm reads it: 8.
ForwardBlocking naive_blocking(std::size_t head_dim) {
  return {.query_block = kBlendRows,
          .key_block = kNoKeyBlocks,
          .padded_dim = head_dim,
          .score_sweeps = 8,
          .scores_masked_keys = true};
}

}  // namespace

constexpr KernelCode naive_openblas{.forward = {.rows = naive_rows, .blocking = naive_blocking}};

}  // namespace attnbench::kernels
