// The copy demo's training machinery (copy.cpp): every parameter of a model in one array with
// Adam's moments, and dense layers with hand-written gradients. Internal to copy.cpp; a header of
// its own so that the demo file holds the task and the two models.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "demo/demo_support.hpp"

namespace attnbench::demo::copy_layers {

using detail::Normal;

// ---------------------------------------------------------------------------------------------
// Parameters, Adam, dense layers
// ---------------------------------------------------------------------------------------------

// Every parameter of one model in one array, with its gradient and Adam's two moments beside it.
class Parameters {
 public:
  // `count` parameters drawn from N(0, std^2) (zeros for std = 0); returns their offset.
  std::size_t add(std::size_t count, float std, Normal& normal) {
    const std::size_t offset = value.size();
    for (std::size_t i = 0; i < count; ++i) value.push_back(std == 0 ? 0.0f : std * normal());
    grad.resize(value.size(), 0.0f);
    m_.resize(value.size(), 0.0f);
    v_.resize(value.size(), 0.0f);
    return offset;
  }
  void zero_grad() { std::fill(grad.begin(), grad.end(), 0.0f); }

  // Adam (Kingma & Ba): m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
  // w -= lr * m_hat / (sqrt(v_hat) + eps), the hats undoing the moments' start at 0.
  void adam_step(float lr) {
    constexpr float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
    ++t_;
    const float c1 = 1.0f - std::pow(b1, float(t_)), c2 = 1.0f - std::pow(b2, float(t_));
    for (std::size_t i = 0; i < value.size(); ++i) {
      m_[i] = b1 * m_[i] + (1 - b1) * grad[i];
      v_[i] = b2 * v_[i] + (1 - b2) * grad[i] * grad[i];
      value[i] -= lr * (m_[i] / c1) / (std::sqrt(v_[i] / c2) + eps);
    }
  }

  std::vector<float> value, grad;

 private:
  std::vector<float> m_, v_;
  std::size_t t_ = 0;
};

// sum_i a_i b_i in kLanes interleaved partial sums: independent additions the compiler turns into
// vector lanes, which one running sum (each addition waiting for the last) would forbid.
float dot(const float* a, const float* b, std::size_t count) {
  constexpr std::size_t kLanes = 8;
  float lane[kLanes] = {};
  std::size_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    for (std::size_t l = 0; l < kLanes; ++l) lane[l] += a[i + l] * b[i + l];
  }
  float sum = 0;
  for (; i < count; ++i) sum += a[i] * b[i];
  for (float x : lane) sum += x;
  return sum;
}

// y = x W + b over `rows` rows of x. W is stored [in][out], so the inner loops run along out:
// contiguous, and vectorised by the compiler without reassociating any sum.
struct Dense {
  std::size_t in = 0, out = 0;
  std::size_t w = 0, b = 0;  // offsets into Parameters
  bool bias = true;

  Dense() = default;
  // W ~ N(0, 1/in) (LeCun's scale: y's components start with the variance of x's), b = 0.
  Dense(Parameters& params, std::size_t in_, std::size_t out_, Normal& normal, bool bias_ = true)
      : in(in_), out(out_), bias(bias_) {
    w = params.add(in * out, 1.0f / std::sqrt(float(in)), normal);
    if (bias) b = params.add(out, 0.0f, normal);
  }

  void forward(const Parameters& params, const float* x, std::size_t rows, float* y) const {
    const float* W = &params.value[w];
    for (std::size_t r = 0; r < rows; ++r) {
      float* yr = y + r * out;
      if (bias) {
        std::copy_n(&params.value[b], out, yr);
      } else {
        std::fill_n(yr, out, 0.0f);
      }
      const float* xr = x + r * in;
      for (std::size_t i = 0; i < in; ++i) {
        const float xi = xr[i];
        if (xi == 0.0f) continue;  // one-hot inputs: most of a row
        for (std::size_t o = 0; o < out; ++o) yr[o] += xi * W[i * out + o];
      }
    }
  }

  // dW += x^T dy, db += the column sums of dy, and dx = dy W^T unless dx is null.
  void backward(Parameters& params, const float* x, const float* dy, std::size_t rows,
                float* dx) const {
    const float* W = &params.value[w];
    float* dW = &params.grad[w];
    for (std::size_t r = 0; r < rows; ++r) {
      const float* xr = x + r * in;
      const float* dyr = dy + r * out;
      for (std::size_t i = 0; i < in; ++i) {
        const float xi = xr[i];
        if (xi == 0.0f) continue;
        for (std::size_t o = 0; o < out; ++o) dW[i * out + o] += xi * dyr[o];
      }
      if (bias) {
        float* db = &params.grad[b];
        for (std::size_t o = 0; o < out; ++o) db[o] += dyr[o];
      }
      if (dx != nullptr) {
        float* dxr = dx + r * in;
        for (std::size_t i = 0; i < in; ++i) dxr[i] = dot(dyr, &W[i * out], out);
      }
    }
  }
};

void relu(std::vector<float>& x) {
  for (float& e : x) e = std::max(e, 0.0f);
}
// dx = dy where the ReLU's output was positive, 0 elsewhere.
void relu_backward(const std::vector<float>& y, std::vector<float>& dy) {
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (y[i] <= 0.0f) dy[i] = 0.0f;
  }
}

}  // namespace attnbench::demo::copy_layers
