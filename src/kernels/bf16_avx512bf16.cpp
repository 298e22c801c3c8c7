// The bf16-products kernels for AVX-512 with AVX512_BF16. This file alone is compiled with
// -mavx512bf16 (src/CMakeLists.txt).
#include "kernels/tiled_bf16.hpp"

namespace attnbench::kernels {

constexpr Bf16Table bf16_avx512bf16{.isa = Isa::avx512bf16,
                                    .tiled = TiledBf16<xsimd::avx512bw>::code()};

}  // namespace attnbench::kernels
