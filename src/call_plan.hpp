// The driver's plan of a forward call, shared by attention() and the cost counts that describe
// it (forward_counts.hpp): how many query rows a parallel task takes, and when decoding splits the
// keys into chunks.
#pragma once

#include <cstddef>

#include "attnbench.hpp"
#include "kernels/kernel_interface.hpp"

namespace attnbench::driver {

using kernels::kKeyChunk;
using kernels::kRowsPerTask;

// Query rows per parallel task: the kernel's query block (the rows that share a pass over K and
// V), halved down to kRowsPerTask while the call would make fewer than kTasksPerThread tasks per
// thread: with at least 16 equal tasks each, the last task leaves a thread idle for at most 1/16
// of the call. The rows are whole query blocks, so a row's arithmetic is the same.
constexpr std::size_t kTasksPerThread = 16;

inline std::size_t task_rows(const kernels::KernelCode& code, const Shape& shape, std::size_t heads,
                             std::size_t threads) {
  std::size_t rows =
      code.forward.query_block ? code.forward.query_block(shape.head_dim) : kRowsPerTask;
  auto tasks = [&](std::size_t r) { return heads * ((shape.q_len + r - 1) / r); };
  while (rows > kRowsPerTask && tasks(rows) < kTasksPerThread * threads) rows /= 2;
  return rows;
}

// Decoding (few query rows, many keys) splits the keys into chunks of kKeyChunk and merges the
// chunks' partial results by log-sum-exp. Whether to split depends on the shape only, never on
// the thread count, so results stay bitwise equal for every thread count.
constexpr std::size_t kDecodeRows = kRowsPerTask;

inline bool splits_keys(const kernels::KernelCode& code, const Shape& shape) {
  return code.forward.partial != nullptr && shape.q_len <= kDecodeRows &&
         shape.kv_len >= 2 * kKeyChunk;
}

}  // namespace attnbench::driver
