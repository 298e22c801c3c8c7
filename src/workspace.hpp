// The state behind a Workspace (include/attnbench/workspace.hpp): its blocks, the child
// workspaces of a multithreaded call's worker threads, and the oneTBB arena it keeps.
#pragma once

#include <oneapi/tbb/task_arena.h>

#include <cstddef>
#include <memory>
#include <vector>

#include <attnbench/workspace.hpp>

namespace attnbench {

struct Workspace::Impl {
  struct Block {
    std::byte* data;
    std::size_t capacity;
    std::size_t used;
  };
  // The arena of the last multithreaded call, kept for the next call with as many threads
  // (driver::TaskRunner says why); it lives and dies with the workspace, so its owner decides.
  struct Arena {
    explicit Arena(std::size_t threads) : threads(threads), arena(static_cast<int>(threads)) {}
    std::size_t threads;
    tbb::task_arena arena;
  };

  ~Impl();
  // Child workspace `index` of a multithreaded call; children are created by reserve_workers()
  // before the threads start and kept for reuse.
  void reserve_workers(std::size_t count);
  Workspace& worker(std::size_t index) { return *workers[index]; }

  std::vector<Block> blocks;
  std::vector<std::unique_ptr<Workspace>> workers;
  std::unique_ptr<Arena> arena;
  std::size_t in_use = 0;
  std::size_t peak = 0;
};

}  // namespace attnbench
