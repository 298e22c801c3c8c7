// The bf16-products kernels for AVX-512 with AVX512_BF16. This file alone is compiled with
// -mavx512bf16 (src/CMakeLists.txt).
#include "kernels/tiled_bf16.hpp"
#include "kernels/tiled_bf16_backward.hpp"

namespace attnbench::kernels {

namespace {

template <class Arch>
constexpr KernelCode tiled_bf16_code() {
  using F = TiledBf16<Arch>;
  using Bw = TiledBf16Backward<Arch>;
  return KernelCode{.forward = {.rows = F::rows,
                                .partial = F::partial_rows,
                                .query_block = F::query_block,
                                .blocking = F::blocking},
                    .packing = {F::packed_bytes, F::pack},
                    .backward = {.key_block = SimdBackward<Arch>::key_block,
                                 .keys = Bw::keys,
                                 .packing = {Bw::packed_bytes, Bw::pack},
                                 .row_packing = {Bw::row_bytes, Bw::pack_rows}}};
}

}  // namespace

using Bf16Avx512 = TiledBf16<xsimd::avx512bw>;
constexpr Bf16Table bf16_avx512bf16{
    .isa = Isa::avx512bf16,
    .tiled = tiled_bf16_code<xsimd::avx512bw>(),
    .phases = {Bf16Avx512::phase_rows<kScorePhase>, Bf16Avx512::phase_rows<kSoftmaxPhase>,
               Bf16Avx512::phase_rows<kBlendPhase>}};

}  // namespace attnbench::kernels
