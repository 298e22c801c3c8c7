// Workspace: a bump allocator over a list of aligned blocks, kept between calls, that records its
// peak use.
#include <algorithm>
#include <cstdlib>
#include <new>

#include "attnbench.hpp"
#include "large_blocks.hpp"
#include "task_runner.hpp"  // Workspace::Arena

namespace attnbench {

struct Workspace::Block {
  std::byte* data;
  std::size_t capacity;
  std::size_t used;
};

Workspace::Workspace() = default;

Workspace::~Workspace() {
  for (Block& b : blocks_) std::free(b.data);
}

static std::size_t round_up(std::size_t bytes, std::size_t to) {
  return (bytes + to - 1) / to * to;
}

// Blocks are used in order, like one stack cut into pieces: a take goes to the newest block in
// use, or to the first later block with room. Blocks are never merged or given back to the
// system, so a call that repeats an earlier call's takes lands on the same, already touched
// memory: from the second call of a shape on, no allocation and no page fault.
void* Workspace::take_bytes(std::size_t bytes) {
  bytes = round_up(std::max<std::size_t>(bytes, 1), kAlignment);
  // The newest block in use; the blocks after it are empty.
  std::size_t at = blocks_.size();
  while (at > 0 && blocks_[at - 1].used == 0) --at;
  if (at > 0) --at;
  while (at < blocks_.size() && blocks_[at].capacity - blocks_[at].used < bytes) ++at;
  if (at == blocks_.size()) {
    // A new block at least twice the last one, so a growing caller settles after a few calls.
    const std::size_t last = blocks_.empty() ? 0 : blocks_.back().capacity;
    std::size_t capacity = std::max(bytes, 2 * last);
    void* data = driver::allocate_large_block(capacity);
    if (data == nullptr) throw std::bad_alloc();
    blocks_.push_back(Block{static_cast<std::byte*>(data), capacity, 0});
  }
  Block& b = blocks_[at];
  void* p = b.data + b.used;
  b.used += bytes;
  in_use_ += bytes;
  peak_ = std::max(peak_, in_use_);
  return p;
}

void Workspace::give_back_to(std::size_t mark) noexcept {
  // Release from the newest block backwards until only `mark` bytes remain in use.
  std::size_t excess = in_use_ - mark;
  for (auto b = blocks_.rbegin(); b != blocks_.rend() && excess > 0; ++b) {
    const std::size_t freed = std::min(excess, b->used);
    b->used -= freed;
    excess -= freed;
  }
  in_use_ = mark;
}

std::size_t Workspace::peak_bytes() const {
  std::size_t total = peak_;
  for (const auto& w : workers_) total += w->peak_bytes();
  return total;
}

void Workspace::reset_peak() {
  peak_ = in_use_;
  for (auto& w : workers_) w->reset_peak();
}

void Workspace::reserve_workers(std::size_t count) {
  while (workers_.size() < count) workers_.push_back(std::make_unique<Workspace>());
}

}  // namespace attnbench
