// Checks the forward and backward drivers share: sizes whose product must fit in 64 bits, and
// tensors that must not overlap. Internal to the library.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <string>

#include <attnbench/attnbench.hpp>
#include "kernels/kernel_interface.hpp"

namespace attnbench::driver {

inline std::size_t checked_product(std::initializer_list<std::size_t> factors, const char* field,
                                   const char* what) {
  std::size_t product = 1;
  for (std::size_t f : factors) {
    if (__builtin_mul_overflow(product, f, &product)) {
      throw Error(field, "overflow", std::string(what) + " does not fit in 64 bits");
    }
  }
  return product;
}

// The bytes of one tensor, named for error messages.
struct NamedBytes {
  const char* field;
  const void* pointer;
  std::uintptr_t begin;
  std::uintptr_t end;

  NamedBytes(const char* name, const float* p, std::size_t elements)
      : field(name),
        pointer(p),
        begin(reinterpret_cast<std::uintptr_t>(p)),
        end(begin + elements * sizeof(float)) {}
  NamedBytes(const char* name, const void* p, std::size_t bytes, std::byte)  // raw bytes
      : field(name), pointer(p), begin(reinterpret_cast<std::uintptr_t>(p)), end(begin + bytes) {}
  bool overlaps(const NamedBytes& other) const { return begin < other.end && other.begin < end; }
};

inline std::string pointer_string(const void* p) {
  std::ostringstream s;
  s << p;
  return s.str();
}

// Options::mask's bytes (none without a mask).
inline NamedBytes mask_bytes(const MaskTensor& m) {
  const std::size_t elements = m.sizes[0] * m.sizes[1] * m.sizes[2] * m.sizes[3];
  if (m.bias != nullptr) return {"options.mask.bias", m.bias, elements};
  return {"options.mask.keep", m.keep, m.keep ? elements : 0, std::byte{}};
}

// Throws when a pointer is null.
inline void require_non_null(std::initializer_list<NamedBytes> tensors) {
  for (const NamedBytes& t : tensors) {
    if (t.pointer == nullptr) throw Error(t.field, "nullptr", "must point to the tensor's data");
  }
}

// Throws, as `kernel`, when this CPU cannot run it.
inline void require_available(const Kernel& kernel) {
  if (!kernel.available()) {
    throw Error("kernel", std::string(kernel.name), "this CPU lacks the instructions it needs");
  }
}

// Throws when an output overlaps an input or another output.
inline void require_disjoint(std::initializer_list<NamedBytes> outputs,
                             std::initializer_list<NamedBytes> inputs) {
  for (auto out = outputs.begin(); out != outputs.end(); ++out) {
    for (const NamedBytes& in : inputs) {
      if (out->overlaps(in)) {
        throw Error(
            out->field, pointer_string(out->pointer),
            std::string("output overlaps input ") + in.field + " at " + pointer_string(in.pointer));
      }
    }
    for (auto other = outputs.begin(); other != out; ++other) {
      if (out->overlaps(*other)) {
        throw Error(out->field, pointer_string(out->pointer),
                    std::string("output overlaps output ") + other->field + " at " +
                        pointer_string(other->pointer));
      }
    }
  }
}

// Throws when O, or the optional LSE ([rows] floats), overlaps one of `inputs` or the other.
inline void require_outputs_disjoint(const NamedBytes& o, const float* lse, std::size_t rows,
                                     std::initializer_list<NamedBytes> inputs) {
  if (lse != nullptr) {
    require_disjoint({o, {"tensors.lse", lse, rows}}, inputs);
  } else {
    require_disjoint({o}, inputs);
  }
}

// Throws, as `field`, when `kernel` (resolved) does not store K and V as `type`.
inline void require_stores(const char* field, const Kernel& kernel, KvType type) {
  if (kernels::code(kernel, type) == nullptr) {
    std::string stores;
    for (KvType t : kAllKvTypes) {
      if (kernels::code(kernel, t) != nullptr)
        stores += (stores.empty() ? "" : ", ") + std::string(to_string(t));
    }
    throw Error(field, std::string(to_string(type)),
                "kernel " + std::string(kernel.name) + " stores K and V as " + stores +
                    " only (tiled/simd stores f32, f16, bf16, q8_0 and q4_0; naive/simd f32, f16 "
                    "and bf16)");
  }
}

// Throws when a finite element of x would become an infinity stored as `type` (float16 beyond
// 65504, bfloat16 beyond about 3.39e38, a quantised block's scale beyond float16's range), or, for
// a quantised type, when an element is not finite (one NaN or infinity would take its whole block
// of 32 with it), naming the first such index and its value. Scans in blocks with no branch
// inside (the compiler vectorises them), then finds the index.
inline void require_representable(const char* field, const float* x, std::size_t count,
                                  KvType type) {
  if (type == KvType::f32) return;
  const bool quantised = is_quantised(type);
  // On the magnitude's bits: limit <= |x| < inf (any |x| >= limit, NaN included, quantised) is
  // one unsigned comparison.
  const std::uint32_t low = __builtin_bit_cast(std::uint32_t, kv_overflow_threshold(type));
  const std::uint32_t span = (quantised ? 0x80000000u : 0x7F800000u) - low;
  const auto* bits = reinterpret_cast<const std::uint32_t*>(x);
  constexpr std::size_t kBlock = 1024;
  for (std::size_t b = 0; b < count; b += kBlock) {
    const std::size_t end = b + kBlock < count ? b + kBlock : count;
    std::uint32_t hits = 0;
    for (std::size_t i = b; i < end; ++i) hits |= ((bits[i] & 0x7FFFFFFFu) - low) < span;
    if (hits == 0) continue;
    for (std::size_t i = b; i < end; ++i) {
      const bool finite = std::isfinite(x[i]);
      if (finite ? !rounds_to_infinity(type, x[i]) : !quantised) continue;
      std::ostringstream value;
      value.precision(9);
      value << "[" << i << "] " << x[i];
      const std::string name(to_string(type));
      if (!finite) {
        throw Error(field, value.str(),
                    name + " stores finite values only (a block of 32 shares one scale)");
      }
      const char* largest = type == KvType::f16    ? "largest float16: 65504"
                            : type == KvType::bf16 ? "largest bfloat16: 3.39e38"
                            : type == KvType::q8_0
                                ? "|x| must stay below 65520 x 127, its block scale a float16"
                                : "|x| must stay below 65520 x 8, its block scale a float16";
      throw Error(
          field, value.str(),
          "a finite value that " + name + " storage would turn into an infinity (" + largest + ")");
    }
  }
}

}  // namespace attnbench::driver
