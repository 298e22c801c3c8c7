// KvCache: one layer's K and V kept packed, in one storage type, for attention() to read as they
// are; each append packs only the new tokens, through the kernel's own KvPacking.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <attnbench/attnbench.hpp>
#include "kernels/kernel_interface.hpp"
#include "large_blocks.hpp"
#include "task_runner.hpp"
#include "tensor_checks.hpp"

namespace attnbench {

struct KvCache::Storage {
  std::byte* data = nullptr;
  Workspace ws;  // the packing threads' (they take nothing from it)
  ~Storage() { std::free(data); }
};

namespace {

const kernels::KvPacking& checked_packing(const Kernel& kernel, KvType type) {
  if (!kernel.available()) {
    throw Error("kernel", std::string(kernel.name), "this CPU lacks the instructions it needs");
  }
  driver::require_stores("type", kernel, type);
  const kernels::KernelCode* code = kernels::code(kernel, type);
  if (code->packing.pack == nullptr) {
    throw Error("kernel", std::string(kernel.name),
                "reads K and V in place, so it has no packed layout to cache; use tiled/simd or "
                "naive/simd");
  }
  return code->packing;
}

}  // namespace

KvCache::KvCache(const Kernel& kernel, std::size_t batch, std::size_t kv_heads,
                 std::size_t head_dim, std::size_t capacity, KvType type)
    : kernel_(resolve(kernel)),
      type_(type),
      batch_(batch),
      kv_heads_(kv_heads),
      head_dim_(head_dim),
      capacity_(capacity) {
  const kernels::KvPacking& packing = checked_packing(kernel_, type);
  const std::pair<const char*, std::size_t> sizes[] = {
      {"batch", batch}, {"kv_heads", kv_heads}, {"head_dim", head_dim}, {"capacity", capacity}};
  for (const auto& [field, value] : sizes) {
    if (value == 0) throw Error(field, "0", "must be at least 1");
  }
  // The largest layout first: bytes per head of a capacity x head_dim float32 head must fit.
  driver::checked_product({batch, kv_heads, capacity, head_dim, 2 * sizeof(float)}, "capacity",
                          "batch x kv_heads x capacity x head_dim x 8 bytes");
  head_bytes_ = kernels::packed_bytes_per_head(packing, capacity, head_dim);
  const std::size_t bytes =
      driver::checked_product({heads(), head_bytes_}, "capacity", "the cache's packed bytes");
  storage_ = std::make_unique<Storage>();
  std::size_t allocated = bytes;
  storage_->data = static_cast<std::byte*>(driver::allocate_large_block(allocated));
  if (storage_->data == nullptr) {
    throw Error("capacity", std::to_string(capacity),
                "cannot allocate the cache's " + std::to_string(bytes) + " bytes");
  }
  std::memset(storage_->data, 0, bytes);  // the padding keys past the length read as zeros
}

KvCache::~KvCache() = default;

std::size_t KvCache::kv_bytes() const {
  return heads() * length_ * 2 * kv_row_bytes(type_, head_dim_);
}

const void* KvCache::head_storage(std::size_t index) const {
  return storage_->data + index * head_bytes_;
}

void KvCache::truncate(std::size_t length) {
  if (length > length_) {
    throw Error("length", std::to_string(length),
                "the cache holds only " + std::to_string(length_) + " tokens");
  }
  length_ = length;  // the keys past it are overwritten by the next append, never read before
}

void KvCache::append(const float* k, const float* v, std::size_t tokens, std::size_t threads) {
  if (tokens == 0) return;
  if (tokens > capacity_ - length_) {
    throw Error("tokens", std::to_string(tokens),
                "the cache holds " + std::to_string(length_) + " of its capacity of " +
                    std::to_string(capacity_) + " tokens");
  }
  const std::size_t elements = heads() * tokens * head_dim_;
  const driver::NamedBytes k_bytes{"k", k, elements}, v_bytes{"v", v, elements};
  driver::require_non_null({k_bytes, v_bytes});
  // Every check before the first write: an error leaves the cache as it was.
  driver::require_representable("k", k, elements, type_);
  driver::require_representable("v", v, elements, type_);
  if (threads > 1024) {
    throw Error("threads", std::to_string(threads), "must be at most 1024 (0 means every core)");
  }

  const kernels::KvPacking& packing = kernels::code(kernel_, type_)->packing;
  const std::size_t first = length_, last = length_ + tokens;
  // Ranges split at multiples of kPackKeys (whole panels), so threads write disjoint panels.
  const std::size_t first_range = first / kernels::kPackKeys;
  const std::size_t ranges = (last - 1) / kernels::kPackKeys + 1 - first_range;
  Options options;
  options.threads = threads;
  driver::TaskRunner tasks(worker_threads(options), storage_->ws);
  tasks.run(heads() * ranges, [&](std::size_t t, Workspace&) {
    const std::size_t head = t / ranges, range = first_range + t % ranges;
    const std::size_t from = std::max(first, range * kernels::kPackKeys);
    const std::size_t to = std::min(last, (range + 1) * kernels::kPackKeys);
    const std::size_t offset = (head * tokens + (from - first)) * head_dim_;
    packing.pack(k + offset, v + offset, capacity_, head_dim_, from, to,
                 storage_->data + head * head_bytes_);
  });
  length_ = last;
}

}  // namespace attnbench
