#include "oracle_check.hpp"

#include <cmath>
#include <vector>

#include "testing/backward.hpp"
#include "testing/error_bound.hpp"

namespace attnbench::bench {

OracleCheck check_against_oracle(const Shape& shape, const Options& options, const Tensors& io,
                                 std::size_t max_rows, Products products) {
  const bool bf16 = products == Products::bf16;
  auto rounded = [bf16](const float* x, std::size_t n, std::vector<float>& out) {
    if (!bf16) return x;
    out.resize(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = round_to(KvType::bf16, x[i]);
    return static_cast<const float*>(out.data());
  };
  std::vector<float> q16, k16, v16;
  OracleCheck check;
  const std::size_t d = shape.head_dim;
  const std::size_t rows = max_rows < shape.q_len ? max_rows : shape.q_len;
  std::vector<double> ref(d);
  testing::Comparison result;
  for (std::size_t b = 0; b < shape.batch; ++b) {
    for (std::size_t h = 0; h < shape.q_heads; ++h) {
      const HeadOffsets at = head_offsets(shape, b, h);
      for (std::size_t r = 0; r < rows && !result.mismatch; ++r) {
        // Evenly spaced rows, the first and the last among them.
        const std::size_t i = rows == 1 ? 0 : r * (shape.q_len - 1) / (rows - 1);
        const KeySpan keys = visible_keys(shape, options, i);
        const std::size_t visible = keys.size(), kv0 = at.kv + keys.begin * d;
        const float* out = io.o + at.q + i * d;
        ++check.rows_checked;
        if (visible == 0) {  // nothing to weigh: the library's answer is a zero row
          for (std::size_t c = 0; c < d; ++c) {
            if (out[c] != 0.0f) {
              result.mismatch = testing::Mismatch{b, h, i, c, out[c], 0.0, out[c], 0.0};
              break;
            }
          }
          continue;
        }
        // Row i alone: one query over the keys it sees, the same scale and soft-cap, its row of
        // the mask tensor (ALiBi, whose bias depends on the row's diagonal, is not checked here).
        Shape row_shape{.q_len = 1, .kv_len = visible, .head_dim = d};
        Options row_options;
        row_options.scale = effective_scale(shape, options);
        row_options.softcap = options.softcap;
        if (!options.mask.empty()) {
          const auto [batch_stride, head_stride, row_stride] = options.mask.strides();
          const std::size_t from = b * batch_stride + h * head_stride + i * row_stride + keys.begin;
          row_options.mask = {options.mask.keep ? options.mask.keep + from : nullptr,
                              options.mask.bias ? options.mask.bias + from : nullptr,
                              {1, 1, 1, visible}};
        }
        const float* q = rounded(io.q + at.q + i * d, d, q16);
        const float* k = rounded(io.k + kv0, visible * d, k16);
        const float* v = rounded(io.v + kv0, visible * d, v16);
        reference_attention(row_shape, row_options, q, k, v, ref.data());
        const testing::ProblemView row{row_shape, row_options, q, k, v};
        const testing::RowConditioning rc = testing::row_conditioning(row, 0, 0, 0);
        double bound = testing::row_bound(rc, d);
        if (bf16) {  // the weights' and the output's bfloat16 rounding
          double largest = 0;
          for (std::size_t c = 0; c < d; ++c) largest = std::fmax(largest, std::fabs(ref[c]));
          bound += std::ldexp(rc.vmax + largest, -8);
        }
        testing::compare_row(row, out, ref.data(), 0, 0, 0, bound, result);
        if (result.mismatch) {
          result.mismatch->batch = b;
          result.mismatch->head = h;
          result.mismatch->row = i;
        }
      }
    }
  }
  check.passed = !result.mismatch;
  check.worst_ratio = result.worst_ratio;
  if (result.mismatch) check.failure = result.mismatch->describe();
  return check;
}

namespace {

// Every element of `got` against the backward oracle of problem `p` with output gradient `d_o`.
// (`kernel`: the checks a kernel's products call for, testing::check_kernel_gradients.)
OracleCheck check_gradients_of(const testing::Problem& p, const std::vector<float>& d_o,
                               const testing::GradientsOf<float>& got,
                               const Kernel* kernel = nullptr) {
  const auto checks =
      kernel ? testing::check_kernel_gradients(*kernel, p, d_o, got)
             : testing::check_gradients(p, d_o, got, testing::reference_gradients<float>(p, d_o),
                                        testing::reference_gradients<double>(p, d_o));
  OracleCheck check;
  check.passed = true;
  check.rows_checked = p.shape.batch * p.shape.q_heads * p.shape.q_len;
  for (const testing::GradientCheck& c : checks) {
    const double ratio = c.allowed > 0 ? c.error / c.allowed : (c.error > 0 ? INFINITY : 0.0);
    check.worst_ratio = std::fmax(check.worst_ratio, ratio);
    if (c.failure && check.passed) {
      check.passed = false;
      check.failure = *c.failure;
    }
  }
  return check;
}

}  // namespace

OracleCheck check_backward_against_oracle(const Kernel& kernel, const Shape& shape,
                                          const Options& options) {
  testing::Problem p = testing::random_problem(shape, options.causal, 7);
  p.options = options;
  const std::vector<float> d_o = testing::random_output_gradient(p, 8);
  Workspace ws;
  return check_gradients_of(p, d_o, testing::run_backward(kernel, p, d_o, ws), &kernel);
}

OracleCheck check_gradients_against_oracle(const Shape& shape, const Options& options,
                                           const Tensors& forward, const float* d_o,
                                           const Gradients& got) {
  testing::Problem p(shape, options);
  p.q.assign(forward.q, forward.q + shape.q_elements());
  p.k.assign(forward.k, forward.k + shape.kv_elements());
  p.v.assign(forward.v, forward.v + shape.kv_elements());
  const std::vector<float> gradient(d_o, d_o + shape.q_elements());
  testing::GradientsOf<float> g{std::vector<float>(got.dq, got.dq + shape.q_elements()),
                                std::vector<float>(got.dk, got.dk + shape.kv_elements()),
                                std::vector<float>(got.dv, got.dv + shape.kv_elements())};
  return check_gradients_of(p, gradient, g);
}

}  // namespace attnbench::bench
