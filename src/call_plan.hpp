// The driver's plan of a forward call, shared by attention() and the cost counts that describe
// it (forward_counts.hpp): how many query rows a parallel task takes, and when decoding splits the
// keys into chunks.
#pragma once

#include <cstddef>

#include <attnbench/attnbench.hpp>
#include "kernels/common.hpp"
#include "kernels/kernel_interface.hpp"

namespace attnbench::driver {

using kernels::kKeyChunk;
using kernels::kRowsPerTask;

// Decoding (few query rows) folds the query heads that share a key/value head into one problem
// of group x q_len rows, at every key length: each key block then streams once per key/value
// head, not once per query head, and feeds up to MR rows per load. A row's arithmetic is the same
// folded or not (tested), so folding changes no result.
constexpr std::size_t kDecodeRows = kRowsPerTask;

inline bool folds_heads(const kernels::KernelCode& code, const Shape& shape) {
  return code.forward.partial != nullptr && shape.q_len <= kDecodeRows;
}

// The problems a forward call's tasks share out: one per (batch, query head) of q_len rows, or,
// when decoding folds, one per (batch, key/value head) of group x q_len rows.
struct Problems {
  std::size_t count;  // problems
  std::size_t group;  // query heads per problem
  std::size_t rows;   // query rows per problem: group x q_len
};

inline Problems problems(const kernels::KernelCode& code, const Shape& shape) {
  const std::size_t group = folds_heads(code, shape) ? shape.q_heads / shape.kv_heads : 1;
  return {shape.batch * shape.q_heads / group, group, group * shape.q_len};
}

// Query rows per parallel task: the kernel's query block (the rows that share a pass over K and
// V; a super block of them when the kernel takes the head's keys in chunks), halved down to
// kRowsPerTask while the call would make fewer than kTasksPerThread tasks per thread: with at
// least 16 equal tasks each, the last task leaves a thread idle for at most 1/16 of the call. The
// rows are whole query blocks, so a row's arithmetic is the same.
constexpr std::size_t kTasksPerThread = 16;

inline std::size_t task_rows(const kernels::KernelCode& code, const Shape& shape,
                             const Problems& problems, std::size_t threads) {
  std::size_t rows =
      code.forward.query_block ? code.forward.query_block(shape.head_dim) : kRowsPerTask;
  if (code.forward.blocking) {
    const kernels::ForwardBlocking b = code.forward.blocking(shape.head_dim);
    if (b.chunk_keys > 0 && shape.kv_len > b.chunk_keys) rows *= b.super_blocks;
  }
  auto tasks = [&](std::size_t r) { return problems.count * ((problems.rows + r - 1) / r); };
  while (rows > kRowsPerTask && tasks(rows) < kTasksPerThread * threads) rows /= 2;
  return rows;
}

// Decoding with many keys also splits the keys into chunks of kKeyChunk and merges the chunks'
// partial results by log-sum-exp. Whether to split depends on the shape only, never on the thread
// count, so results stay bitwise equal for every thread count.
inline bool splits_keys(const kernels::KernelCode& code, const Shape& shape) {
  return folds_heads(code, shape) && shape.kv_len >= 2 * kKeyChunk;
}

// NOTE: threads computing a small head all read all of its packed K and V. Packed once and
// shared, each thread packs a part and then pulls the rest from the other cores' caches, after
// one more fork and join: at n = 1024, d = 64 on the Zen 5 guest packing cost a two-thread call
// 66 us against one thread's 30 (docs/studies/2026-12-03-threads-and-packing.md). So when the
// packed K and V of the whole call fit the L2 this CPU reports, every thread packs a copy of its
// own in its first compute task and reads only that one. Packing is deterministic: every copy has
// the same bits, and the output does not depend on which copy a row read. Never with a KvCache,
// which packs nothing per call.
inline bool replicates_packing(const kernels::KernelCode& code, const Shape& shape,
                               std::size_t threads) {
  if (threads < 2 || code.packing.pack == nullptr || splits_keys(code, shape)) return false;
  return shape.batch * shape.kv_heads *
             kernels::packed_bytes_per_head(code.packing, shape.kv_len, shape.head_dim) <=
         kernels::reported_l2_bytes();
}

}  // namespace attnbench::driver
