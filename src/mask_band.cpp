#include "mask_band.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

namespace attnbench::driver {
namespace {

// Whether the 32 values at `p` all remove their keys: 64-bit words OR'ed, each equal to the word
// of removed values `gone` (0 for keep bytes, -inf's bits twice for a bias) when all are.
template <class T>
bool all_gone(const T* p, std::uint64_t gone) {
  std::uint64_t diff = 0;
  for (std::size_t x = 0; x < 32 * sizeof(T) / 8; ++x) {
    std::uint64_t w;
    std::memcpy(&w, reinterpret_cast<const unsigned char*>(p) + 8 * x, 8);
    diff |= w ^ gone;
  }
  return diff == 0;
}

// The first and one past the last key a row of the tensor keeps ({n, 0} for none): 32 values a
// step over the removed ones before and after them, then one by one.
template <class T>
std::pair<std::size_t, std::size_t> kept_span(const T* row, std::size_t n, T removed,
                                              std::uint64_t gone) {
  std::size_t first = 0;
  while (first + 32 <= n && all_gone(row + first, gone)) first += 32;
  while (first < n && row[first] == removed) ++first;
  if (first == n) return {n, 0};
  std::size_t end = n;
  while (end >= first + 32 && all_gone(row + end - 32, gone)) end -= 32;
  while (row[end - 1] == removed) --end;
  return {first, end};
}
std::pair<std::size_t, std::size_t> kept_span(const std::uint8_t* row, std::size_t n) {
  return kept_span<std::uint8_t>(row, n, 0, 0);
}
std::pair<std::size_t, std::size_t> kept_span(const float* row, std::size_t n) {
  return kept_span(row, n, -std::numeric_limits<float>::infinity(), 0xff800000ff800000ull);
}

}  // namespace

KeyMask kernel_key_mask(const Shape& shape, const Options& options, const ForEach& for_each) {
  const MaskTensor& m = options.mask;
  if (m.empty()) return KeyMask(shape.q_len, shape.kv_len, options);
  const KeyMask by_options(shape.q_len, shape.kv_len, options);
  // Over every row of the tensor (each stands for one query row, or for all when it broadcasts
  // over rows): how far before and after its diagonal key the kept keys reach, the most over
  // each task's rows, then over the tasks (a maximum: the same for any split).
  constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::min();
  constexpr std::size_t kRowsPerTask = 256;
  const std::size_t rows = m.sizes[0] * m.sizes[1] * m.sizes[2], n = shape.kv_len;
  const std::size_t tasks = (rows + kRowsPerTask - 1) / kRowsPerTask;
  std::vector<std::pair<std::int64_t, std::int64_t>> reach(tasks, {kNone, kNone});
  auto scan = [&](std::size_t t) {
    auto& [left, right] = reach[t];  // keys: diagonal - first + 1, last - diagonal
    for (std::size_t r = t * kRowsPerTask; r < std::min(rows, (t + 1) * kRowsPerTask); ++r) {
      const auto [first, end] =
          m.keep ? kept_span(m.keep + r * n, n) : kept_span(m.bias + r * n, n);
      if (first >= end) continue;
      const bool every_row = m.sizes[2] == 1;
      const std::size_t i = r % m.sizes[2];
      const std::int64_t latest = by_options.diagonal(every_row ? shape.q_len - 1 : i);
      const std::int64_t earliest = by_options.diagonal(every_row ? 0 : i);
      left = std::max(left, latest - std::int64_t(first) + 1);
      right = std::max(right, std::int64_t(end) - 1 - earliest);
    }
  };
  if (for_each && tasks > 1) {
    for_each(tasks, scan);
  } else {
    for (std::size_t t = 0; t < tasks; ++t) scan(t);
  }
  std::int64_t left = kNone, right = kNone;
  for (const auto& [l, r] : reach) left = std::max(left, l), right = std::max(right, r);
  Options narrowed = options;
  // No kept key anywhere: the diagonal key alone, which the tensor removes too (zero rows).
  const std::size_t new_left = std::size_t(std::max<std::int64_t>(left, 1));
  if (!narrowed.window_left || *narrowed.window_left > new_left) narrowed.window_left = new_left;
  if (!narrowed.causal) {
    const std::size_t new_right = std::size_t(std::max<std::int64_t>(right, 0));
    if (!narrowed.window_right || *narrowed.window_right > new_right) {
      narrowed.window_right = new_right;
    }
  }
  return KeyMask(shape.q_len, shape.kv_len, narrowed);
}

}  // namespace attnbench::driver
