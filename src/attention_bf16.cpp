// attention() on bfloat16 tensors (Bf16Tensors): Q, K and V widened to float32 copies, the float32
// call on them, O rounded to bfloat16 where the caller asks for it.
#include <cstdint>

#include <attnbench/attnbench.hpp>

#include "kernels/storage.hpp"
#include "tensor_checks.hpp"

namespace attnbench {
namespace {

driver::NamedBytes bf16_bytes(const char* field, const std::uint16_t* p, std::size_t elements) {
  return {field, p, p ? elements * sizeof(std::uint16_t) : 0, std::byte{}};
}

// The storage conversions, inline (the loops vectorise), which the public bf16_to_float and
// float_to_bf16 also are.
void widen(const std::uint16_t* in, float* out, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) out[i] = kernels::bfloat16_value(in[i]);
}

}  // namespace

void validate(const Kernel& kernel, const Shape& shape, const Options& options,
              const Bf16Tensors& tensors) {
  driver::require_available(kernel);
  validate(shape, options);
  const std::size_t q_elements = shape.q_elements();
  const std::size_t kv_elements = tensors.kv_cache ? 0 : shape.kv_elements();
  if (tensors.o == nullptr && tensors.o_f32 == nullptr) {
    throw Error("tensors.o", "nullptr",
                "set tensors.o (bfloat16 output) or tensors.o_f32 (float32 output)");
  }
  if (tensors.o != nullptr && tensors.o_f32 != nullptr) {
    throw Error("tensors.o_f32", driver::pointer_string(tensors.o_f32),
                "tensors.o is set too: the output is bfloat16 (o) or float32 (o_f32), not both");
  }
  const driver::NamedBytes q = bf16_bytes("tensors.q", tensors.q, q_elements),
                           k = bf16_bytes("tensors.k", tensors.k, kv_elements),
                           v = bf16_bytes("tensors.v", tensors.v, kv_elements);
  const driver::NamedBytes o = tensors.o
                                   ? bf16_bytes("tensors.o", tensors.o, q_elements)
                                   : driver::NamedBytes{"tensors.o_f32", tensors.o_f32, q_elements};
  driver::require_non_null({q});
  if (tensors.kv_cache == nullptr) driver::require_non_null({k, v});
  driver::require_outputs_disjoint(o, tensors.lse, q_elements / shape.head_dim,
                                   {q, k, v, driver::mask_bytes(options.mask)});
  // The rest (the kernel's K/V types, the cache, the naive budget) is the float32 call's to check.
}

const Kernel& attention(const Kernel& kernel, const Shape& shape, const Options& options,
                        const Bf16Tensors& tensors, Workspace& ws) {
  validate(kernel, shape, options, tensors);
  Workspace::Scope scope(ws);  // the float32 call's peak_bytes() counts the copies too
  const std::size_t q_elements = shape.q_elements();
  Tensors wide{.lse = tensors.lse, .kv_cache = tensors.kv_cache};
  float* q = ws.take<float>(q_elements);
  widen(tensors.q, q, q_elements);
  wide.q = q;
  if (tensors.kv_cache == nullptr) {
    const std::size_t kv_elements = shape.kv_elements();
    float* k = ws.take<float>(kv_elements);
    float* v = ws.take<float>(kv_elements);
    widen(tensors.k, k, kv_elements);
    widen(tensors.v, v, kv_elements);
    wide.k = k;
    wide.v = v;
  }
  wide.o = tensors.o_f32 ? tensors.o_f32 : ws.take<float>(q_elements);
  const Kernel& ran = attention(kernel, shape, options, wide, ws);
  if (tensors.o != nullptr) {
    for (std::size_t i = 0; i < q_elements; ++i) tensors.o[i] = kernels::bfloat16_bits(wide.o[i]);
  }
  return ran;
}

}  // namespace attnbench
