// The bf16-products kernels for AVX-512 with AVX512_BF16. This file alone is compiled with
// -mavx512bf16 (src/CMakeLists.txt).
#include "kernels/tiled_bf16.hpp"
#include "kernels/tiled_bf16_backward.hpp"

namespace attnbench::kernels {

using Bf16Avx512 = TiledBf16<xsimd::avx512bw>;
constexpr Bf16Table bf16_avx512bf16{
    .isa = Isa::avx512bf16,
    .tiled = tiled_bf16_code<xsimd::avx512bw, Bf16Avx512>(),
    .phases = {Bf16Avx512::phase_rows<kScorePhase>, Bf16Avx512::phase_rows<kSoftmaxPhase>,
               Bf16Avx512::phase_rows<kBlendPhase>}};

}  // namespace attnbench::kernels
