// shape_from_dims: the Shape of a call on arrays, what every front end (CLI, Python) needs.
#include <algorithm>
#include <array>
#include <string>

#include <attnbench/attnbench.hpp>

namespace attnbench {

namespace {

// "(2, 3)", as NumPy prints a shape ("(8,)" for one dimension).
std::string shape_string(std::span<const std::size_t> dims) {
  std::string s = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + (dims.size() == 1 ? ",)" : ")");
}

// (len, dim), (heads, len, dim) or (batch, heads, len, dim) as {batch, heads, len, dim}.
std::array<std::size_t, 4> as_bhnd(std::string_view name, std::span<const std::size_t> dims) {
  if (dims.size() < 2 || dims.size() > 4) {
    throw Error(std::string(name), shape_string(dims),
                "has " + std::to_string(dims.size()) +
                    " dimension(s), expected (n, d), (h, n, d) or (b, h, n, d)");
  }
  std::array<std::size_t, 4> bhnd{1, 1, 1, 1};
  std::copy(dims.begin(), dims.end(), bhnd.end() - dims.size());
  return bhnd;
}

}  // namespace

Shape shape_from_dims(std::span<const std::size_t> q, std::span<const std::size_t> k,
                      std::span<const std::size_t> v,
                      const std::array<std::string_view, 3>& names) {
  // Named views, not a structured binding: clang 14 (the fuzz build) cannot capture one in a
  // lambda.
  const std::string_view q_name = names[0], k_name = names[1], v_name = names[2];
  const auto [qb, qh, qn, qd] = as_bhnd(q_name, q);
  const auto [kb, kh, kn, kd] = as_bhnd(k_name, k);
  as_bhnd(v_name, v);
  if (!std::equal(k.begin(), k.end(), v.begin(), v.end())) {
    throw Error(std::string(v_name), shape_string(v),
                "must equal " + std::string(k_name) + "'s shape " + shape_string(k));
  }
  const std::string k_is = shape_string(k);
  auto mismatch = [&](const std::string& why) {
    return Error(std::string(k_name), k_is,
                 why + " (" + std::string(q_name) + " has shape " + shape_string(q) + ")");
  };
  if (k.size() != q.size()) {
    throw mismatch("has " + std::to_string(k.size()) + " dimensions, " + std::string(q_name) +
                   " has " + std::to_string(q.size()));
  }
  if (kd != qd) {
    throw mismatch("head dim " + std::to_string(kd) + " must equal " + std::string(q_name) + "'s " +
                   std::to_string(qd));
  }
  if (kb != qb) {
    throw mismatch("batch " + std::to_string(kb) + " must equal " + std::string(q_name) + "'s " +
                   std::to_string(qb));
  }
  return Shape{qb, qh, kh, qn, kn, qd};
}

}  // namespace attnbench
