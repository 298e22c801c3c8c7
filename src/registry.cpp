// The registry: one explicit array of every kernel, in priority order (the first available one
// is the default). Adding a kernel is one file in kernels/ plus one line here.
#include <array>

#include "attnbench.hpp"
#include "kernels/kernels.hpp"

namespace attnbench {

namespace {

bool everywhere() { return true; }

constexpr std::array kRegistry = {
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

const Kernel& default_kernel() {
  for (const Kernel& k : kRegistry) {
    if (k.available()) return k;
  }
  return kRegistry.back();  // the scalar kernels run everywhere, so this is not reached
}

std::string_view to_string(Strategy strategy) {
  return strategy == Strategy::naive ? "naive" : "tiled";
}

}  // namespace attnbench
