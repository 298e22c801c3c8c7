// attnbench: the persistent KV cache a decode loop appends to and attends through.
#pragma once

#include <cstddef>
#include <memory>

#include "attnbench/registry.hpp"
#include "attnbench/types.hpp"

namespace attnbench {

// One layer's keys and values for batch x kv_heads heads, up to `capacity` tokens, kept in the
// packed layout a kernel reads, in one storage type. Prefill appends a block of tokens, decoding
// one at a time; each append packs (and rounds) only the new tokens, and attention() on
// Tensors::kv_cache then reads the cache as it is, with no copy. The layout is the resolved
// kernel's: a cache made for "tiled/simd" on an AVX-512 machine serves tiled/simd/avx512f and
// naive/simd/avx512f (the same layout), no other kernel. Not thread-safe while appending.
class KvCache {
 public:
  // Throws Error: a kernel that reads K and V in place (no packed layout to keep), a type it does
  // not store, a zero size, sizes whose bytes overflow.
  KvCache(const Kernel& kernel, std::size_t batch, std::size_t kv_heads, std::size_t head_dim,
          std::size_t capacity, KvType type);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  // Appends `tokens` tokens of every head: k and v are [batch][kv_heads][tokens][head_dim]
  // float32, rounded to the cache's type. Packs on `threads` threads (0: every core). Throws
  // Error, with the cache unchanged, for a null k or v, more tokens than the capacity has left,
  // or a finite value the type would turn into an infinity.
  void append(const float* k, const float* v, std::size_t tokens, std::size_t threads = 1);
  // Keeps the first `length` tokens and forgets the rest (a rejected speculative step rolled
  // back, or a benchmark's decode loop restarted); Error if the cache holds fewer.
  void truncate(std::size_t length);
  // Forgets every token (capacity and storage kept).
  void clear() { length_ = 0; }

  const Kernel& kernel() const { return kernel_; }
  KvType type() const { return type_; }
  std::size_t batch() const { return batch_; }
  std::size_t kv_heads() const { return kv_heads_; }
  std::size_t head_dim() const { return head_dim_; }
  std::size_t capacity() const { return capacity_; }
  std::size_t length() const { return length_; }
  // Bytes of K and V a call over the cache's `length()` tokens reads: 2 x length x
  // kv_row_bytes(type, head_dim) per head (the float layout's padding aside).
  std::size_t kv_bytes() const;
  // Bytes the cache holds, padding included.
  std::size_t storage_bytes() const { return heads() * head_bytes_; }
  // Head `index` (batch * kv_heads + key/value head)'s packed storage; for the driver.
  const void* head_storage(std::size_t index) const;

 private:
  std::size_t heads() const { return batch_ * kv_heads_; }

  const Kernel& kernel_;
  KvType type_;
  std::size_t batch_, kv_heads_, head_dim_, capacity_;
  std::size_t length_ = 0;
  std::size_t head_bytes_ = 0;
  struct Storage;
  std::unique_ptr<Storage> storage_;
};

}  // namespace attnbench
