// The driver's one way to run work: task(i, workspace) for i in [0, count), inline on the
// caller's thread and workspace when a call has one thread, otherwise on a oneTBB arena of that
// many threads, each worker thread with a child workspace of its own. Packing and compute (and
// any later pass) all go through it.
#pragma once

#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/partitioner.h>

#include <atomic>
#include <cstddef>
#include <memory>

#include "workspace.hpp"

namespace attnbench::driver {

class TaskRunner {
 public:
  // NOTE: the arena is the workspace's, made on its first call of this many threads and kept for
  // the next (a call of another thread count replaces it). An arena made anew at every call had
  // its worker join it afresh for each run (packing, then compute): on a 2-core KVM guest that
  // was most of a short two-thread call (docs/studies/2026-12-03-threads-and-packing.md). A
  // workspace serves one caller at a time, so concurrent callers never share an arena, and its
  // owner decides when the arena (and the reference it holds on oneTBB's scheduler) goes.
  TaskRunner(std::size_t threads, Workspace& ws) : ws_(ws), threads_(threads) {
    if (threads > 1) {
      Workspace::Impl& impl = ws.impl();
      impl.reserve_workers(threads);
      if (!impl.arena || impl.arena->threads != threads)
        impl.arena = std::make_unique<Workspace::Impl::Arena>(threads);
      arena_ = &impl.arena->arena;
    }
  }

  bool parallel() const { return arena_ != nullptr; }
  std::size_t threads() const { return threads_; }
  // The calling thread's slot in the arena, below threads() (0 inline): within one run, the tasks
  // one thread computes share it, and no two threads have the same.
  std::size_t slot() const {
    return arena_ ? static_cast<std::size_t>(tbb::this_task_arena::current_thread_index()) : 0;
  }

  template <class Task>
  void run(std::size_t count, Task&& task) {
    if (!arena_) {
      for (std::size_t i = 0; i < count; ++i) task(i, ws_);
      return;
    }
    arena_->execute([&] {
      tbb::parallel_for(std::size_t{0}, count, [&](std::size_t i) {
        const int thread = tbb::this_task_arena::current_thread_index();
        task(i, ws_.impl().worker(static_cast<std::size_t>(thread)));
      });
    });
  }

  // The same, but tasks start in index order: every thread takes the next index from one
  // counter, so a task may wait for an earlier one (which has started, and waits only on earlier
  // ones still) without deadlock. For the backward pass's ordered dQ additions (kernels::DqOrder).
  template <class Task>
  void run_in_order(std::size_t count, Task&& task) {
    if (!arena_) {
      for (std::size_t i = 0; i < count; ++i) task(i, ws_);
      return;
    }
    std::atomic<std::size_t> next{0};
    arena_->execute([&] {
      tbb::parallel_for(
          tbb::blocked_range<std::size_t>(0, threads_, 1),
          [&](const tbb::blocked_range<std::size_t>&) {
            const int thread = tbb::this_task_arena::current_thread_index();
            Workspace& local = ws_.impl().worker(static_cast<std::size_t>(thread));
            for (std::size_t i = next++; i < count; i = next++) task(i, local);
          },
          tbb::simple_partitioner());
    });
  }

 private:
  Workspace& ws_;
  std::size_t threads_;
  tbb::task_arena* arena_ = nullptr;
};

}  // namespace attnbench::driver
