// Memory for the large buffers the kernels stream (a Workspace's blocks, a KvCache's storage).
// A block of 2 MiB or more is 2 MiB-aligned, its size rounded up to whole 2 MiB, and asked for
// transparent huge pages (madvise; the kernel grants them where THP is "always" or "madvise",
// and ignores the advice where it is "never"). The packed K and V of one head at n = 16384,
// d = 256 then span 16 pages, not 8192, so streaming them past the L2 costs no page walks: one
// thread of tiled/simd ran 3-19% faster at n = 8192-32768, interleaved call by call (the
// docs/studies/2026-12-01-l2-blocking.md). Smaller blocks keep the one-cache-line alignment.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>

#include <attnbench/attnbench.hpp>

namespace attnbench::driver {

inline constexpr std::size_t kHugePage = std::size_t{2} << 20;

// At least `bytes` (updated to what was allocated), or nullptr. Free with std::free.
inline void* allocate_large_block(std::size_t& bytes) {
  if (bytes < kHugePage) {
    bytes = (bytes + Workspace::kAlignment - 1) / Workspace::kAlignment * Workspace::kAlignment;
    return std::aligned_alloc(Workspace::kAlignment, bytes);
  }
  bytes = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* data = std::aligned_alloc(kHugePage, bytes);
  if (data != nullptr) madvise(data, bytes, MADV_HUGEPAGE);  // advice only: failure is harmless
  return data;
}

}  // namespace attnbench::driver
