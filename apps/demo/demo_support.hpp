// What the demo files share: running a kernel on small vectors, a reproducible RNG, the
// table and JSON formatting, and a least-squares line. Internal to apps/demo/; the public interface
// is demos.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "demo/demos.hpp"

namespace attnbench::demo::detail {

// ---------------------------------------------------------------------------------------------
// Running the kernels
// ---------------------------------------------------------------------------------------------

struct Ran {
  std::vector<float> o;
  std::string kernel;  // the kernel that ran (a dispatching entry resolved to its ISA variant)
};

// One attention() call on a fresh Workspace.
Ran call(const Kernel& kernel, const Shape& shape, const Options& options,
         const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v);

// The n x n identity: as V it makes each output row that query's weights.
std::vector<float> identity(std::size_t n);

// Standard normals by Box-Muller over mt19937, whose output the C++ standard fixes (its
// distributions it does not), so every demo prints the same numbers with any standard library.
class Normal {
 public:
  explicit Normal(std::uint32_t seed) : gen_(seed) {}
  float operator()();
  std::vector<float> vector(std::size_t count);

 private:
  std::mt19937 gen_;
  float spare_ = 0;
  bool has_spare_ = false;
};

// The sinusoidal position encoding of `pos` (Vaswani et al.), `dim` floats written to out:
// PE(pos, 2i) = sin(pos / 10000^(2i/dim)), PE(pos, 2i+1) = cos(pos / 10000^(2i/dim)).
void position_encoding(std::size_t pos, std::size_t dim, float* out);

// Euclidean |a - b| over n floats, in double.
double distance(const float* a, const float* b, std::size_t n);
double max_abs_difference(const std::vector<float>& a, const std::vector<float>& b);

// ---------------------------------------------------------------------------------------------
// Formatting
// ---------------------------------------------------------------------------------------------

std::string number(double x, int precision);
std::string tuple(std::span<const float> xs, int precision);  // "(0.61, 0.11, 0.28)"
std::string bytes(double b);
std::string milliseconds(double ms);
void heading(std::FILE* out, std::string_view name, const char* claim);

// JSON has no inf or NaN: they are written as the strings "inf", "-inf" and "nan" (Python's
// float() reads all three).
Json json_number(double x);
Json json_numbers(std::span<const float> xs);

// ---------------------------------------------------------------------------------------------
// Least squares
// ---------------------------------------------------------------------------------------------

// y = intercept + slope * x over the points.
struct Line {
  double intercept, slope;
};
Line fit(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace attnbench::demo::detail
