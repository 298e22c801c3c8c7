#include "demo/demo_support.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace attnbench::demo::detail {

Ran call(const Kernel& kernel, const Shape& shape, const Options& options,
         const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v) {
  std::vector<float> o(shape.q_elements());
  Workspace ws;
  const Kernel& ran =
      attention(kernel, shape, options, {q.data(), k.data(), v.data(), o.data()}, ws);
  return {std::move(o), std::string(ran.name)};
}

std::vector<float> identity(std::size_t n) {
  std::vector<float> v(n * n, 0.0f);
  for (std::size_t i = 0; i < n; ++i) v[i * n + i] = 1.0f;
  return v;
}

float Normal::operator()() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  const double u1 = (double(gen_()) + 1.0) / 4294967296.0;  // (0, 1]: log(u1) is finite
  const double u2 = double(gen_()) / 4294967296.0;
  const double r = std::sqrt(-2.0 * std::log(u1));
  spare_ = float(r * std::sin(2 * std::numbers::pi * u2));
  has_spare_ = true;
  return float(r * std::cos(2 * std::numbers::pi * u2));
}

std::vector<float> Normal::vector(std::size_t count) {
  std::vector<float> x(count);
  for (float& e : x) e = (*this)();
  return x;
}

void position_encoding(std::size_t pos, std::size_t dim, float* out) {
  for (std::size_t c = 0; c < dim; ++c) {
    const double angle = double(pos) / std::pow(10000.0, double(c - c % 2) / double(dim));
    out[c] = float(c % 2 == 0 ? std::sin(angle) : std::cos(angle));
  }
}

double distance(const float* a, const float* b, std::size_t n) {
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return std::sqrt(sum);
}

double max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
  return worst;
}

std::string number(double x, int precision) {
  if (std::isnan(x)) return "nan";  // no "-nan": inf / inf has its sign bit set on x86
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, x);
  return buf;
}

std::string tuple(std::span<const float> xs, int precision) {
  std::string s = "(";
  for (std::size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + number(xs[i], precision);
  return s + ")";
}

// Decimal units, as the "65.5 GB" is.
std::string bytes(double b) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) {
    b /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

std::string milliseconds(double ms) {
  char buf[32];
  if (ms >= 60000) {
    std::snprintf(buf, sizeof buf, "%.1f min", ms / 60000);
  } else if (ms >= 1000) {
    std::snprintf(buf, sizeof buf, "%.2f s", ms / 1000);
  } else {
    std::snprintf(buf, sizeof buf, "%.3f ms", ms);
  }
  return buf;
}

void heading(std::FILE* out, std::string_view name, const char* claim) {
  std::fprintf(out, "== %.*s: %s ==\n", int(name.size()), name.data(), claim);
}

Json json_number(double x) {
  if (std::isfinite(x)) return x;
  return number(x, 0);
}

Json json_numbers(std::span<const float> xs) {
  Json a = Json::array();
  for (float x : xs) a.push_back(json_number(x));
  return a;
}

Line fit(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = double(x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  const double denominator = n * sxx - sx * sx;
  if (denominator == 0) return {sy / n, 0};  // one point, or every x equal: a constant
  const double slope = (n * sxy - sx * sy) / denominator;
  return {(sy - slope * sx) / n, slope};
}

}  // namespace attnbench::demo::detail
