// Checks the forward and backward drivers share: sizes whose product must fit in 64 bits, and
// tensors that must not overlap. Internal to the library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <sstream>
#include <string>

#include "attnbench.hpp"

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
  bool overlaps(const NamedBytes& other) const { return begin < other.end && other.begin < end; }
};

inline std::string pointer_string(const void* p) {
  std::ostringstream s;
  s << p;
  return s.str();
}

// Throws when a pointer is null.
inline void require_non_null(std::initializer_list<NamedBytes> tensors) {
  for (const NamedBytes& t : tensors) {
    if (t.pointer == nullptr) throw Error(t.field, "nullptr", "must point to the tensor's data");
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

}  // namespace attnbench::driver
