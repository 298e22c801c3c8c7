// The AMX tile configuration (palette 1) that the AMX kernel (bf16_amxbf16.cpp) and the AMX peak
// probe (bench/ceilings.cpp) load with LDTILECFG: plain data, no tile instruction, so any file may
// include it.
#pragma once

#include <cstdint>

namespace attnbench::kernels {

// Tiles [0, tiles) of 16 rows of 64 bytes (16 float32 sums, or 16 pairs of bfloat16 a row), the
// rest unused.
struct alignas(64) AmxTileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t bytes_per_row[16] = {};
  std::uint8_t rows[16] = {};

  explicit AmxTileConfig(int tiles) {
    for (int t = 0; t < tiles; ++t) {
      bytes_per_row[t] = 64;
      rows[t] = 16;
    }
  }
};
static_assert(sizeof(AmxTileConfig) == 64, "LDTILECFG reads 64 bytes");

}  // namespace attnbench::kernels
