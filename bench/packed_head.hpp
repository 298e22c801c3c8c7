// One head of a tiled SIMD kernel's problem with its K and V packed by the kernel's own packing
// (float32), for the benchmark's measurements that call the kernel's row functions directly: the
// cost model's constants (machine_constants.cpp) and the phases window (phases_window.cpp).
#pragma once

#include <cmath>
#include <cstdlib>
#include <memory>
#include <vector>

#include <attnbench/attnbench.hpp>
#include "kernels/kernel_interface.hpp"
#include "large_blocks.hpp"

namespace attnbench::bench {

class PackedHead {
 public:
  // q_len x kv_len x d, not causal; q, k and v must outlive it. Packs once.
  PackedHead(const kernels::SimdTable& table, const float* q, const float* k, const float* v,
             std::size_t q_len, std::size_t kv_len, std::size_t d)
      : PackedHead(table.tiled[static_cast<std::size_t>(KvType::f32)], q, k, v, q_len, kv_len, d) {}
  // The same for a kernel's code (a bf16-products kernel's: Bf16Table::tiled), which must outlive
  // it.
  PackedHead(const kernels::KernelCode& code, const float* q, const float* k, const float* v,
             std::size_t q_len, std::size_t kv_len, std::size_t d)
      : code_(code),
        o_(q_len * d),
        packed_(allocate(code_, kv_len, d), &std::free),
        head_{.q = q,
              .k = k,
              .v = v,
              .o = o_.data(),
              .q_len = q_len,
              .kv_len = kv_len,
              .head_dim = d,
              .scale = 1.0f / std::sqrt(float(d)),
              .softcap = 0.0f,
              .alibi = nullptr,
              .mask = KeyMask(q_len, kv_len, Options{}),
              .tensor = {},
              .kv_packed = packed_.get(),
              .kv_capacity = kv_len,
              .head_rows = q_len} {
    pack();
  }

  const kernels::HeadProblem& head() const { return head_; }
  const kernels::KernelCode& code() const { return code_; }
  const float* output() const { return o_.data(); }
  // Packs K and V again (what a call without a KvCache does before computing).
  void pack() {
    code_.packing.pack(head_.k, head_.v, head_.kv_len, head_.head_dim, 0, head_.kv_len,
                       packed_.get());
  }

 private:
  static void* allocate(const kernels::KernelCode& code, std::size_t keys, std::size_t d) {
    std::size_t bytes = code.packing.bytes(keys, d);
    return driver::allocate_large_block(bytes);
  }

  const kernels::KernelCode& code_;
  std::vector<float> o_;
  std::unique_ptr<void, decltype(&std::free)> packed_;
  kernels::HeadProblem head_;
};

}  // namespace attnbench::bench
