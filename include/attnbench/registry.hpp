// attnbench: the registry of kernels, each named "strategy/backend[/isa]".
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "attnbench/types.hpp"

namespace attnbench {

enum class Strategy {
  naive,  // materialise the score matrix; three passes: score, normalise, blend
  tiled,  // online softmax over key blocks; scratch independent of kv_len
};

enum class Backend {
  scalar,    // plain loops, auto-vectorisation off
  autovec,   // the same loops, vectorised by the compiler for AVX2 + FMA
  simd,      // explicit xsimd micro-kernels, one variant per ISA
  openblas,  // the naive steps with OpenBLAS's sgemm (the baseline)
};

// The instruction set a kernel needs beyond plain x86-64. `avx2` means AVX2 + FMA;
// `avx512bf16` AVX-512 F, BW, VL and BF16 (vdpbf16ps); `amxbf16` that and AMX-BF16 tiles
// (TDPBF16PS), with the OS's leave to use them.
enum class Isa { generic, sse4_2, avx2, avx512f, avx512bf16, amxbf16 };
inline constexpr std::size_t kIsas = 6;
// Does this CPU (and the OS, for the wider registers) support `isa`?
bool cpu_supports(Isa isa);

struct Kernel {
  std::string_view name;
  Strategy strategy;
  Backend backend;
  Isa isa;
  // A dispatching entry ("tiled/simd") has no code of its own: it runs its strategy and
  // backend's first available variant, the registry listing variants in ISA priority order.
  bool dispatches = false;
  // The precision of its products (types.hpp); a bf16 kernel's name says so ("tiled/simd-bf16").
  Products products = Products::f32;
  // Can this CPU run it? A dispatching entry: can it run any of its variants?
  bool available() const;
  // Does it have a backward pass (attention_backward)? A dispatching entry: does the variant
  // that runs here?
  bool has_backward() const;
  // Does it store K and V as `type` (Options::kv_type, KvCache)? A dispatching entry: does the
  // variant that runs here?
  bool stores(KvType type) const;
};

// Every kernel, in priority order: the first available one is the default.
std::span<const Kernel> registry();
// The kernel called `name`, or nullptr.
const Kernel* find_kernel(std::string_view name);
// The first available kernel of the registry.
const Kernel& default_kernel();
// The first available kernel of the registry that has a backward pass; Error if none has.
const Kernel& default_backward_kernel();
// The kernel that runs for `kernel` here: itself, or for a dispatching entry the best available
// ISA variant (itself if none is available, which validate() then reports).
const Kernel& resolve(const Kernel& kernel);
std::string_view to_string(Strategy strategy);
std::string_view to_string(Backend backend);
std::string_view to_string(Isa isa);

}  // namespace attnbench
