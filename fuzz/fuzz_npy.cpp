// libFuzzer target: npy::parse and npy::read on arbitrary bytes (see npy_case.hpp), and no single
// allocation inside them larger than the file could fill: twice its size, since a float16 file's
// float32 array is twice its data.
//   scripts/fuzz.sh --target npy --seconds 60
#include <sanitizer/allocator_interface.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "npy_case.hpp"

namespace {

// The largest single allocation made while `tracking` is set, seen through the sanitizer
// allocator's hook (called for every malloc and operator new, glibc's stdio buffers included).
std::atomic<bool> tracking{false};
std::atomic<std::size_t> largest{0};

void on_malloc(const volatile void*, std::size_t size) {
  if (tracking.load(std::memory_order_relaxed) && size > largest.load(std::memory_order_relaxed)) {
    largest.store(size, std::memory_order_relaxed);
  }
}
void on_free(const volatile void*) {}

// What a reader may allocate beyond the file's own size: stdio's buffer for the file (its
// st_blksize, 4096 here). Error messages and the shape stay far below it.
constexpr std::size_t kFixedAllowance = 4096;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_npy: %s\n", what.c_str());
  std::abort();  // libFuzzer saves the input as a crash artifact
}

template <class Call>
attnbench::fuzz::NpyOutcome tracked(std::size_t file_size, const char* what, Call&& call) {
  largest = 0;
  tracking = true;
  attnbench::fuzz::NpyOutcome outcome = call();
  tracking = false;
  const std::size_t allowed = std::max(2 * file_size, kFixedAllowance);
  if (largest > allowed) {
    fail(std::string(what) + " allocated " + std::to_string(largest.load()) +
         " bytes at once for a " + std::to_string(file_size) +
         "-byte file (allowed: " + std::to_string(allowed) + ")");
  }
  return outcome;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  std::string path;
  const auto parsed =
      tracked(size, "npy::parse", [&] { return attnbench::fuzz::parse_outcome(bytes); });
  const auto read =
      tracked(size, "npy::read", [&] { return attnbench::fuzz::read_outcome(bytes, path); });
  const auto narrow = tracked(size, "npy::parse (float32 only)", [&] {
    return attnbench::fuzz::parse_outcome(bytes, attnbench::npy::Accept{});
  });
  if (const auto failure = attnbench::fuzz::check_npy_outcomes(bytes, parsed, read, narrow, path))
    fail(*failure);
  return 0;
}
