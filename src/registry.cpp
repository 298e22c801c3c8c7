// The registry: every kernel, in priority order (the first available one is the default), built
// from the kernels' descriptors. Adding an ISA is one simd_<isa>.cpp file and one line in
// kSimdByPriority; adding a portable kernel is one file and one line in the list below.
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <xsimd/xsimd.hpp>

#include <array>
#include <cassert>
#include <deque>
#include <string>
#include <vector>

#include <attnbench/attnbench.hpp>
#include "kernels/kernel_interface.hpp"

namespace attnbench {

namespace {

// Widest ISA first: the order a dispatching entry tries its variants in.
constexpr const kernels::SimdTable* kSimdByPriority[] = {
    &kernels::simd_avx512f, &kernels::simd_avx2, &kernels::simd_sse4_2};
// The bf16-products SIMD kernels (Products::bf16), likewise.
constexpr const kernels::Bf16Table* kBf16ByPriority[] = {&kernels::bf16_amxbf16,
                                                         &kernels::bf16_avx512bf16};

}  // namespace

namespace {

// CPUID leaf 1, ECX bit 29 (clang 14's __builtin_cpu_supports does not know "f16c").
bool has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}

// AMX-BF16 and AMX-TILE (CPUID leaf 7, EDX bits 22 and 24), the OS saving the tile state (XCR0
// bits 17 and 18), and Linux's leave for this process to use it, asked for here once: the tile
// data is a dynamic XSAVE feature (Linux 5.16+), and a tile instruction before the request
// kills the process with SIGILL.
bool amx_usable() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || (d & (1u << 22)) == 0 || (d & (1u << 24)) == 0)
    return false;
  if (!__get_cpuid(1, &a, &b, &c, &d) || (c & bit_OSXSAVE) == 0) return false;
  unsigned xcr0 = 0, high = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0), "=d"(high) : "c"(0));
  if ((xcr0 & (3u << 17)) != (3u << 17)) return false;
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;  // <asm/prctl.h>
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

// Run-time ISA checks: xsimd's CPUID reading, and the compiler's, which also asks the OS
// whether it saves the wider registers.
bool read_cpu_supports(Isa isa) {
  switch (isa) {
    case Isa::generic: return true;
    case Isa::sse4_2:
      return xsimd::available_architectures().sse4_2 && __builtin_cpu_supports("sse4.2");
    case Isa::avx2:
      // F16C too: the avx2 kernels widen float16 K/V with vcvtph2ps (every AVX2 CPU has it).
      return xsimd::available_architectures().fma3_avx2 && __builtin_cpu_supports("avx2") &&
             __builtin_cpu_supports("fma") && has_f16c();
    case Isa::avx512f:
      // DQ too: the softmax's exp2 takes vreduceps (every AVX-512 CPU but Xeon Phi has it).
      return xsimd::available_architectures().avx512f && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512dq");
    case Isa::avx512bf16:
      return read_cpu_supports(Isa::avx512f) && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
    case Isa::amxbf16: return read_cpu_supports(Isa::avx512bf16) && amx_usable();
  }
  return false;
}

}  // namespace

// Read once per process: every call checks its kernel (validation, dispatch), and under a
// hypervisor each CPUID instruction traps to it, which made these checks most of a short call's
// time (a decode call over 16 keys on a KVM guest: docs/studies/2026-12-02-decode.md).
bool cpu_supports(Isa isa) {
  static const std::array<bool, kIsas> supported = [] {
    std::array<bool, kIsas> read{};
    for (std::size_t i = 0; i < kIsas; ++i) read[i] = read_cpu_supports(static_cast<Isa>(i));
    return read;
  }();
  return supported[static_cast<std::size_t>(isa)];
}

namespace {

struct Registry {
  std::deque<std::string> names;  // what each Kernel::name views (a deque never moves them)
  std::vector<Kernel> kernels;
  // kernels[i]'s code per KvType (indexed by KvType): null where it does not store that type,
  // all null for a dispatching entry. Kept beside the public Kernel, which users see.
  std::vector<std::array<const kernels::KernelCode*, kKvTypes>> codes;

  // `codes`: the kernel's code per KvType (f32 first), empty for a dispatching entry. A bf16
  // kernel has one code, which stores bf16.
  void add(Strategy strategy, Backend backend, Isa isa, bool isa_in_name,
           std::span<const kernels::KernelCode> codes, Products products = Products::f32,
           bool dispatches = false) {
    std::string name(to_string(strategy));
    name.append("/").append(to_string(backend));
    if (products != Products::f32) name.append("-").append(to_string(products));
    if (isa_in_name) name.append("/").append(to_string(isa));
    names.push_back(std::move(name));
    Kernel kernel{.name = names.back(),
                  .strategy = strategy,
                  .backend = backend,
                  .isa = isa,
                  .dispatches = dispatches || codes.empty(),
                  .products = products};
    std::array<const kernels::KernelCode*, kKvTypes> by_type{};
    if (products == Products::bf16) {
      if (!codes.empty()) by_type[static_cast<std::size_t>(KvType::bf16)] = &codes[0];
    } else {
      for (std::size_t t = 0; t < codes.size(); ++t) {
        if (codes[t].forward.rows != nullptr) by_type[t] = &codes[t];  // else not stored
      }
    }
    kernels.push_back(kernel);
    this->codes.push_back(by_type);
  }

  // "strategy/simd", then one variant per ISA.
  void add_simd(Strategy strategy) {
    add(strategy, Backend::simd, Isa::generic, false, {});
    for (const kernels::SimdTable* table : kSimdByPriority) {
      add(strategy, Backend::simd, table->isa, true,
          strategy == Strategy::tiled ? table->tiled : table->naive);
    }
  }
};

const Registry& the_registry() {
  static const Registry registry = [] {
    Registry r;
    r.add_simd(Strategy::tiled);
    r.add_simd(Strategy::naive);
    r.add(Strategy::tiled, Backend::autovec, Isa::avx2, false, {&kernels::tiled_autovec, 1});
    r.add(Strategy::naive, Backend::autovec, Isa::avx2, false, {&kernels::naive_autovec, 1});
    r.add(Strategy::naive, Backend::openblas, Isa::generic, false, {&kernels::naive_openblas, 1});
    r.add(Strategy::tiled, Backend::scalar, Isa::generic, false, {&kernels::tiled_scalar, 1});
    r.add(Strategy::naive, Backend::scalar, Isa::generic, false, {&kernels::naive_scalar, 1});
    // bf16 products, after every float32 kernel: never a default.
    r.add(Strategy::tiled, Backend::simd, Isa::generic, false, {}, Products::bf16);
    for (const kernels::Bf16Table* table : kBf16ByPriority) {
      r.add(Strategy::tiled, Backend::simd, table->isa, true, {&table->tiled, 1}, Products::bf16);
    }
    r.add(Strategy::tiled, Backend::scalar, Isa::generic, false, {&kernels::tiled_scalar_bf16, 1},
          Products::bf16);
    return r;
  }();
  return registry;
}

}  // namespace

std::span<const kernels::SimdTable* const> kernels::simd_tables() { return kSimdByPriority; }
std::span<const kernels::Bf16Table* const> kernels::bf16_tables() { return kBf16ByPriority; }

const kernels::KernelCode* kernels::code(const Kernel& kernel, KvType type) {
  const Registry& r = the_registry();
  const auto index = static_cast<std::size_t>(&kernel - r.kernels.data());
  // Every Kernel a caller holds is a reference into registry().
  assert(index < r.kernels.size());
  return r.codes[index][static_cast<std::size_t>(type)];
}

bool Kernel::has_backward() const {
  const Kernel& variant = resolve(*this);
  const kernels::KernelCode* runs =
      kernels::code(variant, kernels::stored_type(variant, Options{}));
  return runs != nullptr && runs->backward.key_block != nullptr;
}

bool Kernel::stores(KvType type) const { return kernels::code(resolve(*this), type) != nullptr; }

KvType kernels::stored_type(const Kernel& kernel, const Options& options) {
  return kernel.products == Products::bf16 && options.kv_type == KvType::f32 ? KvType::bf16
                                                                             : options.kv_type;
}

bool Kernel::available() const {
  return dispatches ? !resolve(*this).dispatches : cpu_supports(isa);
}

std::span<const Kernel> registry() { return the_registry().kernels; }

const Kernel* find_kernel(std::string_view name) {
  for (const Kernel& k : registry()) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

const Kernel& resolve(const Kernel& kernel) {
  if (!kernel.dispatches) return kernel;
  for (const Kernel& k : registry()) {
    if (!k.dispatches && k.strategy == kernel.strategy && k.backend == kernel.backend &&
        k.products == kernel.products && k.available()) {
      return k;
    }
  }
  return kernel;
}

const Kernel& default_kernel() {
  for (const Kernel& k : registry()) {
    if (k.available()) return k;
  }
  return registry().back();  // the scalar kernels run everywhere, so this is not reached
}

const Kernel& default_backward_kernel() {
  for (const Kernel& k : registry()) {
    if (k.available() && k.has_backward()) return k;
  }
  throw Error("kernel", "(default)", "no kernel available on this CPU has a backward pass");
}

std::string_view to_string(Strategy strategy) {
  return strategy == Strategy::naive ? "naive" : "tiled";
}

std::string_view to_string(Backend backend) {
  switch (backend) {
    case Backend::scalar: return "scalar";
    case Backend::autovec: return "autovec";
    case Backend::simd: return "simd";
    case Backend::openblas: return "openblas";
  }
  return "?";
}

std::string_view to_string(Products products) { return products == Products::f32 ? "f32" : "bf16"; }

std::string_view to_string(Isa isa) {
  switch (isa) {
    case Isa::generic: return "generic";
    case Isa::sse4_2: return "sse4.2";
    case Isa::avx2: return "avx2";
    case Isa::avx512f: return "avx512f";
    case Isa::avx512bf16: return "avx512bf16";
    case Isa::amxbf16: return "amxbf16";
  }
  return "?";
}

}  // namespace attnbench
