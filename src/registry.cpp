// The registry: one explicit array of every kernel, in priority order (the first available one
// is the default). Adding a kernel is one file in kernels/ plus one line here.
#include <xsimd/xsimd.hpp>

#include <array>

#include "attnbench.hpp"
#include "kernels/kernels.hpp"

namespace attnbench {

namespace {

// Run-time ISA checks: xsimd's CPUID reading, and the compiler's, which also asks the OS
// whether it saves the wider registers.
bool everywhere() { return true; }
bool has_sse4_2() {
  return xsimd::available_architectures().sse4_2 && __builtin_cpu_supports("sse4.2");
}
bool has_avx2_fma() {
  return xsimd::available_architectures().fma3_avx2 && __builtin_cpu_supports("avx2") &&
         __builtin_cpu_supports("fma");
}
bool has_avx512f() {
  return xsimd::available_architectures().avx512f && __builtin_cpu_supports("avx512f");
}

constexpr KvPacking kPackSse4_2{kernels::simd_packed_floats_sse4_2, kernels::simd_pack_sse4_2};
constexpr KvPacking kPackAvx2{kernels::simd_packed_floats_avx2, kernels::simd_pack_avx2};
constexpr KvPacking kPackAvx512f{kernels::simd_packed_floats_avx512f, kernels::simd_pack_avx512f};

// A dispatching entry is available when its most widely supported variant (SSE4.2) is.
constexpr std::array kRegistry = {
    Kernel{"tiled/simd", Strategy::tiled, has_sse4_2, nullptr, {}, true},
    Kernel{"tiled/simd/avx512f", Strategy::tiled, has_avx512f, kernels::tiled_simd_avx512f, kPackAvx512f},
    Kernel{"tiled/simd/avx2", Strategy::tiled, has_avx2_fma, kernels::tiled_simd_avx2, kPackAvx2},
    Kernel{"tiled/simd/sse4.2", Strategy::tiled, has_sse4_2, kernels::tiled_simd_sse4_2, kPackSse4_2},
    Kernel{"naive/simd", Strategy::naive, has_sse4_2, nullptr, {}, true},
    Kernel{"naive/simd/avx512f", Strategy::naive, has_avx512f, kernels::naive_simd_avx512f, kPackAvx512f},
    Kernel{"naive/simd/avx2", Strategy::naive, has_avx2_fma, kernels::naive_simd_avx2, kPackAvx2},
    Kernel{"naive/simd/sse4.2", Strategy::naive, has_sse4_2, kernels::naive_simd_sse4_2, kPackSse4_2},
    Kernel{"tiled/autovec", Strategy::tiled, has_avx2_fma, kernels::tiled_autovec},
    Kernel{"naive/autovec", Strategy::naive, has_avx2_fma, kernels::naive_autovec},
    Kernel{"tiled/scalar", Strategy::tiled, everywhere, kernels::tiled_scalar},
    Kernel{"naive/scalar", Strategy::naive, everywhere, kernels::naive_scalar},
};

}  // namespace

std::span<const Kernel> registry() { return kRegistry; }

const Kernel* find_kernel(std::string_view name) {
  for (const Kernel& k : kRegistry) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

const Kernel& resolve(const Kernel& kernel) {
  if (!kernel.dispatches) return kernel;
  for (const Kernel& k : kRegistry) {
    if (!k.dispatches && k.name.size() > kernel.name.size() && k.name.starts_with(kernel.name) &&
        k.name[kernel.name.size()] == '/' && k.available()) {
      return k;
    }
  }
  return kernel;
}

const Kernel& default_kernel() {
  for (const Kernel& k : kRegistry) {
    if (resolve(k).available()) return k;
  }
  return kRegistry.back();  // the scalar kernels run everywhere, so this is not reached
}

std::string_view to_string(Strategy strategy) {
  return strategy == Strategy::naive ? "naive" : "tiled";
}

}  // namespace attnbench
