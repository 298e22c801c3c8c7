// attnbench: the scratch memory every call takes its buffers from.
#pragma once

#include <cstddef>
#include <memory>

namespace attnbench {

// Every kernel takes its scratch memory from a Workspace, which records the peak number of bytes
// it handed out at once. Memory is kept between calls, so a benchmark loop pays for page faults
// once. Not thread-safe: a multithreaded call gives each worker thread a child workspace, and
// peak_bytes() adds their peaks to this one's.
class Workspace {
 public:
  static constexpr std::size_t kAlignment = 64;  // one cache line; also the widest vector (AVX-512)

  Workspace();
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  // `count` uninitialised elements, kAlignment-aligned, valid until the enclosing Scope ends.
  template <class T>
  T* take(std::size_t count) {
    return static_cast<T*>(take_bytes(count * sizeof(T)));
  }

  // Everything taken while a Scope lives is given back when it ends.
  class Scope {
   public:
    explicit Scope(Workspace& ws) : ws_(ws), mark_(ws.in_use()) {}
    ~Scope() { ws_.give_back_to(mark_); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Workspace& ws_;
    std::size_t mark_;
  };

  std::size_t peak_bytes() const;
  void reset_peak();

  // The library's own state (blocks, worker threads' workspaces): src/workspace.hpp.
  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  void* take_bytes(std::size_t bytes);
  void give_back_to(std::size_t mark) noexcept;
  std::size_t in_use() const noexcept;

  std::unique_ptr<Impl> impl_;
};

}  // namespace attnbench
