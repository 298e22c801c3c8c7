// attnbench's context-parallel (ring) attention over MPI: the sequence split over the ranks of a
// communicator, each rank keeping its query rows and passing its K and V blocks around the ring
// while it attends to the block it holds (Liu et al., Ring Attention, 2023), the partial results
// merged by their log-sum-exp. A separate library (attnbench_ring), built when CMake finds MPI:
// the core library keeps no MPI dependency. docs/ring.md says how to run it.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <vector>

#include "attnbench/attention.hpp"

namespace attnbench::ring {

// The sequence positions one rank holds, as spans of the global sequence, in the rank's local
// order (its local rows are the spans' rows one after the other). Without a causal mask, rank r of
// P holds the r-th of P near-equal contiguous pieces. With one, the sequence is cut into 2P
// near-equal chunks and rank r holds chunks r and 2P - 1 - r (the zigzag layout), so that every
// rank scores about the same number of causal pairs. The same for K, V and Q.
std::vector<KeySpan> local_spans(std::size_t seq_len, std::size_t ranks, std::size_t rank,
                                 bool causal);
// The rows rank `rank` holds: the sum of its spans.
std::size_t local_len(std::size_t seq_len, std::size_t ranks, std::size_t rank, bool causal);

// Rank `rank`'s rows of a whole [heads][seq_len][width] tensor (Q, K, V, O, dO; LSE with width
// 1), in its local order: what it passes to ring_attention. place_rows puts them back: the local
// rows `local` of rank `rank` into their places in `whole`.
std::vector<float> local_rows(const float* whole, std::size_t heads, std::size_t seq_len,
                              std::size_t width, std::size_t ranks, std::size_t rank, bool causal);
void place_rows(const float* local, std::size_t heads, std::size_t seq_len, std::size_t width,
                std::size_t ranks, std::size_t rank, bool causal, float* whole);

// Runs f on every rank of `comm`, a collective call: when f throws on any rank, every rank throws
// the lowest such rank's exception (an Error keeps its field, prefixed "rank R: ", and value; any
// other exception becomes a std::runtime_error "rank R: <message>"), so that no rank is left
// waiting for the others. ring_attention checks its input this way; a program reading its input
// (the CLI's .npy files) can too.
void on_every_rank(MPI_Comm comm, const std::function<void()>& f);

// The global problem every rank takes part in: batch, heads and head dim as attention()'s Shape,
// and the whole sequence's length (query rows and keys alike: self-attention).
struct RingShape {
  std::size_t batch = 1;
  std::size_t q_heads = 1;
  std::size_t kv_heads = 1;
  std::size_t seq_len = 0;
  std::size_t head_dim = 0;
};

// What one call measured on this rank, per ring step: the seconds it computed, and the seconds it
// then waited for the next block (the transfer the compute did not hide).
struct RingTimings {
  std::vector<double> compute;
  std::vector<double> wait;
  double total = 0;
};

// The forward over the ring: each rank passes its local Q, K, V ([batch][heads][local_len]
// [head_dim], rows in local_spans' order) and gets its rows of O (and of LSE, [batch][q_heads]
// [local_len], when tensors.lse is set). Every rank must call it with the same shape, options and
// kernel. Options: causal, scale, softcap, threads (per rank) and kv_type; a window, ALiBi, a mask
// tensor or a KV cache are an Error (they need the keys' global positions or a layout of their
// own). The result is the same bits for every thread count and every run with the same number of
// ranks. Bad input on any rank: every rank throws the same Error (its message naming the rank, the
// field and the value), none hangs. Returns the kernel that ran.
const Kernel& ring_attention(MPI_Comm comm, const Kernel& kernel, const RingShape& shape,
                             const Options& options, const Tensors& local, Workspace& ws,
                             RingTimings* timings = nullptr);

// The backward over the ring: dQ stays on its rank, dK and dV travel with their blocks and come
// home after the last step. `forward` holds this rank's Q, K, V, O and LSE as ring_attention left
// them (O and LSE required); `gradients` this rank's dO in, and its dQ, dK, dV out. The same
// determinism and errors as ring_attention.
const Kernel& ring_attention_backward(MPI_Comm comm, const Kernel& kernel, const RingShape& shape,
                                      const Options& options, const Tensors& forward,
                                      const Gradients& gradients, Workspace& ws,
                                      RingTimings* timings = nullptr);

}  // namespace attnbench::ring
