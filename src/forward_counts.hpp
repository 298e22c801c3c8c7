// What one forward call does, counted from the kernel's own blocking (kernels::ForwardBlocking)
// and the driver's plan (call_plan.hpp): the operations and bytes the cost model
// (python/attnbench_report/model.py) prices with the machine's measured constants. The benchmark
// writes them as counters of each point; this file is the one place their formulas live.
#pragma once

#include <cstddef>

#include <attnbench/attnbench.hpp>

namespace attnbench {
namespace kernels {
struct KvPacking;
}

struct ForwardCounts {
  // Multiply-adds of S = Q K^T: per micro-tile (kernels::row_group rows), the keys its widest row
  // sees rounded up to whole NR panels (every key for a kernel that masks after scoring), times d.
  double score_fmas = 0;
  // Multiply-adds of O += P V: per row, the keys it sees, times the padded d.
  double blend_fmas = 0;
  // Exponentials: one per scored (query, key) pair, and for the tiled kernels one per row and key
  // block (the rescale factor exp(m_old - m_new)).
  double exps = 0;
  // Scores the softmax's other sweep reads and writes (scale and running max): one per pair.
  double softmax_scores = 0;
  // Packed K and V bytes the products read, summed over query blocks: K and V stream past once
  // per query block of Br rows (once per row for kernels that have no blocks), K for the keys the
  // block scores, V for those it blends.
  double kv_stream_bytes = 0;
  // The packed K and V of one key/value head.
  double kv_head_bytes = 0;
  // The working set the stream is read from: the head's K and V, or one key chunk's when a task
  // passes a super block of query blocks over each chunk (ForwardBlocking::chunk_keys).
  double kv_set_bytes = 0;
  // Naive kernels: the sweeps their passes make of the materialised score matrix
  // (ForwardBlocking::score_sweeps: the score pass's write, each pass's reads and writes, the
  // blend's read), the bytes those sweeps move, and the score matrix one task holds at a time.
  double score_sweeps = 0;
  double score_bytes = 0;
  double score_set_bytes = 0;
  // Bytes read and written packing K and V (0 for a kernel that reads them in place).
  double pack_bytes = 0;
  // Q read and O written.
  double io_bytes = 0;
  // Parallel tasks of the call, packing and compute (and the decode merge); 0 when it runs
  // inline on one thread.
  double tasks = 0;
  // The compute tasks among them: near-equal pieces of work, so that on t threads the last round
  // of ceil(compute_tasks / t) leaves threads idle when t does not divide their number.
  double compute_tasks = 0;
  // The blocking they were counted with: query rows per pass over K and V (after the driver's
  // split into tasks) and keys per block.
  std::size_t query_block = 0;
  std::size_t key_block = 0;
};

// The counts of one forward call of `kernel` (a dispatching entry counts as the kernel it
// resolves to) on `shape` with `options` (threads, causal, kv_type), K and V packed inside the
// call. Validates the shape and options first (throws Error).
ForwardCounts forward_counts(const Kernel& kernel, const Shape& shape, const Options& options);

// Bytes packing `shape`'s K and V with `packing` moves: the fp32 K and V read, the packed copy
// written (ForwardCounts::pack_bytes; the benchmark measures the packing rate in the same bytes).
double pack_bytes(const kernels::KvPacking& packing, const Shape& shape);

}  // namespace attnbench
