// Workspace: a bump allocator over a list of aligned blocks, kept between calls, that records its
// peak use.
#include <algorithm>
#include <cstdlib>
#include <new>

#include "workspace.hpp"

#include "large_blocks.hpp"

namespace attnbench {

Workspace::Workspace() : impl_(std::make_unique<Impl>()) {}
Workspace::~Workspace() = default;

Workspace::Impl::~Impl() {
  for (Block& b : blocks) std::free(b.data);
}

std::size_t Workspace::in_use() const noexcept { return impl_->in_use; }

static std::size_t round_up(std::size_t bytes, std::size_t to) {
  return (bytes + to - 1) / to * to;
}

// Blocks are used in order, like one stack cut into pieces: a take goes to the newest block in
// use, or to the first later block with room. Blocks are never merged or given back to the
// system, so a call that repeats an earlier call's takes lands on the same, already touched
// memory: from the second call of a shape on, no allocation and no page fault.
void* Workspace::take_bytes(std::size_t bytes) {
  Impl& w = *impl_;
  bytes = round_up(std::max<std::size_t>(bytes, 1), kAlignment);
  // The newest block in use; the blocks after it are empty.
  std::size_t at = w.blocks.size();
  while (at > 0 && w.blocks[at - 1].used == 0) --at;
  if (at > 0) --at;
  while (at < w.blocks.size() && w.blocks[at].capacity - w.blocks[at].used < bytes) ++at;
  if (at == w.blocks.size()) {
    // A new block at least twice the last one, so a growing caller settles after a few calls.
    const std::size_t last = w.blocks.empty() ? 0 : w.blocks.back().capacity;
    std::size_t capacity = std::max(bytes, 2 * last);
    void* data = driver::allocate_large_block(capacity);
    if (data == nullptr) throw std::bad_alloc();
    w.blocks.push_back(Impl::Block{static_cast<std::byte*>(data), capacity, 0});
  }
  Impl::Block& b = w.blocks[at];
  void* p = b.data + b.used;
  b.used += bytes;
  w.in_use += bytes;
  w.peak = std::max(w.peak, w.in_use);
  return p;
}

void Workspace::give_back_to(std::size_t mark) noexcept {
  Impl& w = *impl_;
  // Release from the newest block backwards until only `mark` bytes remain in use.
  std::size_t excess = w.in_use - mark;
  for (auto b = w.blocks.rbegin(); b != w.blocks.rend() && excess > 0; ++b) {
    const std::size_t freed = std::min(excess, b->used);
    b->used -= freed;
    excess -= freed;
  }
  w.in_use = mark;
}

std::size_t Workspace::peak_bytes() const {
  std::size_t total = impl_->peak;
  for (const auto& w : impl_->workers) total += w->peak_bytes();
  return total;
}

void Workspace::reset_peak() {
  impl_->peak = impl_->in_use;
  for (auto& w : impl_->workers) w->reset_peak();
}

void Workspace::Impl::reserve_workers(std::size_t count) {
  while (workers.size() < count) workers.push_back(std::make_unique<Workspace>());
}

}  // namespace attnbench
