// The backward pass's thread ordering: turns taken on the shared outputs dQ, dK and dV, so that
// every sum into them runs in one fixed order whatever the threads (the result is the same bits
// for every thread count), and the wavefront order its tasks start in.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>

#include "kernels/block_sizes.hpp"

namespace attnbench::kernels {

// Turns taken on shared outputs, so that every sum into them runs in one fixed order whatever the
// threads: one counter per slot holds the turn allowed to add next; wait(slot, turn) returns once
// it is `turn`'s, done(slot, turn) hands it to turn + 1. The backward's tiled tasks take turns on
// dQ (slot: a query head's row block of kRowsPerTask rows, turn: the key block) and on dK and dV
// (DkvOrder: the row segment, per key block). Tasks start in wavefront order (wavefront_cell,
// TaskRunner::run_in_order), and a task waits only for turns of tasks before it (the previous
// key block's on the same rows: a row that sees a key sees every earlier key; the previous
// segment's on the same keys), which have started and wait only on earlier ones still: no
// deadlock.
class Turns {
 public:
  explicit Turns(std::atomic<std::uint32_t>* next = nullptr) : next_(next) {}

  void wait(std::size_t slot, std::size_t turn) const {
    const std::atomic<std::uint32_t>& next = next_[slot];
    for (unsigned spins = 0; next.load(std::memory_order_acquire) != turn; ++spins) {
      if (spins < 64) {
        __builtin_ia32_pause();
      } else {
        std::this_thread::yield();  // more threads than cores: let the one we wait for run
      }
    }
  }
  void done(std::size_t slot, std::size_t turn) const {
    next_[slot].store(static_cast<std::uint32_t>(turn + 1), std::memory_order_release);
  }

 private:
  std::atomic<std::uint32_t>* next_;
};

// dQ's turns: key block `key_block` adds to rows [i0, i0 + kRowsPerTask) of query head `head`
// (i0 a multiple of kRowsPerTask, heads counted from the group's first).
class DqOrder {
 public:
  DqOrder(std::atomic<std::uint32_t>* next, std::size_t row_blocks)
      : turns_(next), row_blocks_(row_blocks) {}
  void wait(std::size_t head, std::size_t i0, std::size_t key_block) const {
    turns_.wait(head * row_blocks_ + i0 / kRowsPerTask, key_block);
  }
  void done(std::size_t head, std::size_t i0, std::size_t key_block) const {
    turns_.done(head * row_blocks_ + i0 / kRowsPerTask, key_block);
  }

 private:
  Turns turns_;
  std::size_t row_blocks_;
};

// dK's and dV's turns: row segment `segment` of key block `block` adds to the block's dK and dV
// rows. slots(segments) counters per key/value head, whatever kv_len (the scratch stays
// independent of it): block b takes slot b % slots, and its turns follow those of block b - slots
// on the same counter (turn (b / slots) * segments + segment), so that block b's first segment
// also waits for block b - slots to be done: a task at least 16 anti-diagonals earlier in
// wavefront order (below), which has started.
class DkvOrder {
 public:
  static constexpr std::size_t slots(std::size_t segments) { return segments + 16; }

  DkvOrder(std::atomic<std::uint32_t>* next, std::size_t segments)
      : turns_(next), segments_(segments), slots_(slots(segments)) {}
  void wait(std::size_t block, std::size_t segment) const {
    turns_.wait(block % slots_, block / slots_ * segments_ + segment);
  }
  void done(std::size_t block, std::size_t segment) const {
    turns_.done(block % slots_, block / slots_ * segments_ + segment);
  }

 private:
  Turns turns_;
  std::size_t segments_, slots_;
};

// The tiled backward's tasks of one key/value head, (key block, row segment), in the order they
// start: anti-diagonal by anti-diagonal (block + segment = 0, 1, 2, ...), each by rising segment.
// A task waits on (block - 1, segment) for dQ and (block, segment - 1) for dK and dV, both one
// anti-diagonal earlier, so the tasks that threads take at about the same time, one diagonal's,
// never wait on one another (block-major order made the thread that finished (b, s + 1) first
// wait for (b, s), whatever the other core's speed: 5-9% of two threads' time at n = 1024-4096).
struct BackwardCell {
  std::size_t block, segment;
};
inline BackwardCell wavefront_cell(std::size_t index, std::size_t blocks, std::size_t segments) {
  const std::size_t low = blocks < segments ? blocks : segments;
  const std::size_t ramp = low * (low - 1) / 2;  // cells on the first low - 1 diagonals
  const std::size_t total = blocks * segments;
  // Diagonal and rank within it of the first-ramp cell `u` (diagonal t holds t + 1 cells).
  auto in_ramp = [](std::size_t u) {
    std::size_t t = static_cast<std::size_t>((std::sqrt(8.0 * double(u) + 1.0) - 1.0) / 2.0);
    while (t * (t + 1) / 2 > u) --t;
    while ((t + 1) * (t + 2) / 2 <= u) ++t;
    return std::pair{t, u - t * (t + 1) / 2};
  };
  std::size_t diagonal, rank;
  bool mirrored = false;
  if (index < ramp) {
    std::tie(diagonal, rank) = in_ramp(index);
  } else if (index < total - ramp) {
    diagonal = low - 1 + (index - ramp) / low;
    rank = (index - ramp) % low;
  } else {  // the last diagonals: the first ones of the grid turned half round
    std::tie(diagonal, rank) = in_ramp(total - 1 - index);
    mirrored = true;
  }
  if (mirrored) {
    // Cell (block, segment) of the turned grid is (blocks - 1 - block, segments - 1 - segment).
    const std::size_t first = diagonal + 1 > blocks ? diagonal + 1 - blocks : 0;
    const std::size_t segment = first + rank;
    return {blocks - 1 - (diagonal - segment), segments - 1 - segment};
  }
  const std::size_t first = diagonal + 1 > blocks ? diagonal + 1 - blocks : 0;
  const std::size_t segment = first + rank;
  return {diagonal - segment, segment};
}

}  // namespace attnbench::kernels
