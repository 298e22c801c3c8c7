// The consumer: one attention call through the installed library, checked against a direct sum.
#include <attnbench/attnbench.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  const attnbench::Shape shape{1, 2, 1, 3, 5, 4};
  std::vector<float> q(shape.q_elements()), k(shape.kv_elements()), v(shape.kv_elements());
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = std::sin(float(i));
  for (std::size_t i = 0; i < k.size(); ++i) k[i] = std::cos(float(i)), v[i] = float(i % 7);
  std::vector<float> o(q.size());
  attnbench::Options options;
  options.threads = 2;
  attnbench::Workspace ws;
  const attnbench::Kernel& ran = attnbench::attention(attnbench::default_kernel(), shape, options,
                                                      {q.data(), k.data(), v.data(), o.data()}, ws);
  // Query head h, row i against the one key/value head, the three steps written out.
  double worst = 0;
  for (std::size_t h = 0; h < 2; ++h) {
    for (std::size_t i = 0; i < 3; ++i) {
      const float* qi = &q[(h * 3 + i) * 4];
      double s[5], m = -INFINITY, l = 0;
      for (int j = 0; j < 5; ++j) {
        s[j] = 0;
        for (int c = 0; c < 4; ++c) s[j] += double(qi[c]) * k[j * 4 + c] / 2.0;  // 1/sqrt(4)
        m = std::fmax(m, s[j]);
      }
      for (double& x : s) l += (x = std::exp(x - m));
      for (int c = 0; c < 4; ++c) {
        double want = 0;
        for (int j = 0; j < 5; ++j) want += s[j] / l * v[j * 4 + c];
        worst = std::fmax(worst, std::fabs(want - o[(h * 3 + i) * 4 + c]));
      }
    }
  }
  std::printf("consumer: %.*s, max error %.3g\n", int(ran.name.size()), ran.name.data(), worst);
  try {
    attnbench::attention(ran, {1, 1, 1, 0, 5, 4}, options, {q.data(), k.data(), v.data(), o.data()},
                         ws);
    return 1;
  } catch (const attnbench::Error& e) {
    std::printf("consumer: bad shape refused: %s\n", e.what());
  }
  return worst < 1e-5 ? 0 : 1;
}
