// The float64 oracle. Plain loops, one query row at a time, in the three steps of the
// definition; no blocking, no tricks. Every kernel is tested against it.
#include <cmath>
#include <limits>
#include <vector>

#include "attnbench.hpp"

namespace attnbench {

void reference_attention(const Shape& shape, const Options& options, const float* q, const float* k,
                         const float* v, double* o) {
  validate(shape, options);
  if (q == nullptr || k == nullptr || v == nullptr || o == nullptr) {
    throw Error("reference_attention", "nullptr", "every tensor pointer must be non-null");
  }
  const double scale = effective_scale(shape, options);
  const std::size_t d = shape.head_dim;
  std::vector<double> s(shape.kv_len);

  for (std::size_t b = 0; b < shape.batch; ++b) {
    for (std::size_t h = 0; h < shape.q_heads; ++h) {
      const HeadOffsets at = head_offsets(shape, b, h);
      const std::size_t kv_base = at.kv, q_base = at.q;
      for (std::size_t i = 0; i < shape.q_len; ++i) {
        const float* qi = q + q_base + i * d;
        double* oi = o + q_base + i * d;
        const std::size_t visible = visible_keys(shape, options.causal, i);

        // Step 1, score: s_j = scale * q_i . k_j for every visible key j.
        for (std::size_t j = 0; j < visible; ++j) {
          const float* kj = k + kv_base + j * d;
          double dot = 0.0;
          for (std::size_t c = 0; c < d; ++c) dot += double(qi[c]) * double(kj[c]);
          s[j] = scale * dot;
        }

        // Step 2, normalise: p_j = exp(s_j - m) / sum_j exp(s_j - m), m = max_j s_j.
        // A NaN score makes m NaN (and so the row NaN). No visible key, or every score -inf,
        // leaves nothing to weigh: the row is zero.
        double m = -std::numeric_limits<double>::infinity();
        for (std::size_t j = 0; j < visible; ++j) m = std::isnan(s[j]) || s[j] > m ? s[j] : m;
        for (std::size_t c = 0; c < d; ++c) oi[c] = 0.0;
        if (m == -std::numeric_limits<double>::infinity()) continue;
        double l = 0.0;
        for (std::size_t j = 0; j < visible; ++j) {
          s[j] = std::exp(s[j] - m);
          l += s[j];
        }
        for (std::size_t j = 0; j < visible; ++j) s[j] /= l;

        // Step 3, blend: o_i = sum_j p_j v_j.
        for (std::size_t j = 0; j < visible; ++j) {
          const float* vj = v + kv_base + j * d;
          for (std::size_t c = 0; c < d; ++c) oi[c] += s[j] * double(vj[c]);
        }
      }
    }
  }
}

}  // namespace attnbench
