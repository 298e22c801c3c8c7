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
    Kernel{.name = "tiled/simd", .strategy = Strategy::tiled, .available = has_sse4_2,
           .compute = nullptr, .dispatches = true},
    Kernel{.name = "tiled/simd/avx512f", .strategy = Strategy::tiled, .available = has_avx512f,
           .compute = kernels::tiled_simd_avx512f, .packing = kPackAvx512f,
           .partial = kernels::tiled_simd_avx512f_partial},
    Kernel{.name = "tiled/simd/avx2", .strategy = Strategy::tiled, .available = has_avx2_fma,
           .compute = kernels::tiled_simd_avx2, .packing = kPackAvx2,
           .partial = kernels::tiled_simd_avx2_partial},
    Kernel{.name = "tiled/simd/sse4.2", .strategy = Strategy::tiled, .available = has_sse4_2,
           .compute = kernels::tiled_simd_sse4_2, .packing = kPackSse4_2,
           .partial = kernels::tiled_simd_sse4_2_partial},
    Kernel{.name = "naive/simd", .strategy = Strategy::naive, .available = has_sse4_2,
           .compute = nullptr, .dispatches = true},
    Kernel{.name = "naive/simd/avx512f", .strategy = Strategy::naive, .available = has_avx512f,
           .compute = kernels::naive_simd_avx512f, .packing = kPackAvx512f},
    Kernel{.name = "naive/simd/avx2", .strategy = Strategy::naive, .available = has_avx2_fma,
           .compute = kernels::naive_simd_avx2, .packing = kPackAvx2},
    Kernel{.name = "naive/simd/sse4.2", .strategy = Strategy::naive, .available = has_sse4_2,
           .compute = kernels::naive_simd_sse4_2, .packing = kPackSse4_2},
    Kernel{.name = "tiled/autovec", .strategy = Strategy::tiled, .available = has_avx2_fma,
           .compute = kernels::tiled_autovec, .partial = kernels::tiled_autovec_partial},
    Kernel{.name = "naive/autovec", .strategy = Strategy::naive, .available = has_avx2_fma,
           .compute = kernels::naive_autovec},
    Kernel{.name = "naive/openblas", .strategy = Strategy::naive, .available = everywhere,
           .compute = kernels::naive_openblas},
    Kernel{.name = "tiled/scalar", .strategy = Strategy::tiled, .available = everywhere,
           .compute = kernels::tiled_scalar, .partial = kernels::tiled_scalar_partial},
    Kernel{.name = "naive/scalar", .strategy = Strategy::naive, .available = everywhere,
           .compute = kernels::naive_scalar},
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
