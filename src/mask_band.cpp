#include "mask_band.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

namespace attnbench::driver {
namespace {

// The first and one past the last key a keep row keeps ({n, 0} for none): 8 bytes at a time
// over the zeros before and after them.
std::pair<std::size_t, std::size_t> kept_span(const std::uint8_t* row, std::size_t n) {
  std::size_t first = 0;
  for (std::uint64_t w = 0; first + 8 <= n; first += 8) {
    std::memcpy(&w, row + first, 8);
    if (w != 0) break;
  }
  while (first < n && row[first] == 0) ++first;
  if (first == n) return {n, 0};
  std::size_t end = n;
  for (std::uint64_t w = 0; end >= first + 8; end -= 8) {
    std::memcpy(&w, row + end - 8, 8);
    if (w != 0) break;
  }
  while (row[end - 1] == 0) --end;
  return {first, end};
}
std::pair<std::size_t, std::size_t> kept_span(const float* row, std::size_t n) {
  constexpr float kGone = -std::numeric_limits<float>::infinity();
  std::size_t first = 0;
  while (first < n && row[first] == kGone) ++first;
  if (first == n) return {n, 0};
  std::size_t end = n;
  while (row[end - 1] == kGone) --end;
  return {first, end};
}

}  // namespace

KeyMask kernel_key_mask(const Shape& shape, const Options& options) {
  const MaskTensor& m = options.mask;
  if (m.empty()) return KeyMask(shape.q_len, shape.kv_len, options);
  const KeyMask by_options(shape.q_len, shape.kv_len, options);
  // Over every row of the tensor (each stands for one query row, or for all when it broadcasts
  // over rows): how far before and after its diagonal key the kept keys reach.
  constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::min();
  std::int64_t left = kNone, right = kNone;  // keys: diagonal - first + 1, last - diagonal
  const std::size_t rows = m.sizes[0] * m.sizes[1] * m.sizes[2], n = shape.kv_len;
  for (std::size_t r = 0; r < rows; ++r) {
    const auto [first, end] = m.keep ? kept_span(m.keep + r * n, n) : kept_span(m.bias + r * n, n);
    if (first >= end) continue;
    const bool every_row = m.sizes[2] == 1;
    const std::size_t i = r % m.sizes[2];
    const std::int64_t latest = by_options.diagonal(every_row ? shape.q_len - 1 : i);
    const std::int64_t earliest = by_options.diagonal(every_row ? 0 : i);
    left = std::max(left, latest - std::int64_t(first) + 1);
    right = std::max(right, std::int64_t(end) - 1 - earliest);
  }
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
