// The bf16-products kernels on AMX tiles (Sapphire Rapids and later). This file alone is compiled
// with -mamx-tile -mamx-bf16 (src/CMakeLists.txt); registry.cpp lists it only where the CPU has
// AMX-BF16 and Linux let the process use the tile state (arch_prctl, 5.16 or newer).
//
// The forward is tiled_bf16.hpp's, arithmetic and all (bfloat16 products summed in float32, the
// online softmax in float32 on AVX-512, P rounded to bfloat16 once), with its two products on
// tiles: TDPBF16PS multiplies a 16 x 16 tile of pairs (16 rows of 32 bfloat16) by another into
// 16 x 16 float32 sums, 16,384 FLOPs an instruction against vdpbf16ps's 64.
//
// A group is 16 query rows, one tile's. Groups start where the driver's row blocks do (multiples
// of 48) whatever the threads, so a row meets the same tiles on every thread count (groups of 32,
// whose K and V tiles feed two row tiles, were faster at d = 256 but would not:
// docs/studies/2026-12-07-amx-tiles.md). Its scores are tiles of 16 keys: Q as rows of pairs, the
// K^T panels as tiled_bf16.hpp packs them (pairs of d down a panel), padded to whole tiles of 16
// pairs. O += P V runs over the whole tiles of 16 pairs of keys that every row of the group sees,
// the accumulator rows loaded into the tile and stored back (rescaled on AVX-512 first). A row's
// keys outside them, and a group of few rows (decoding's), take the vdpbf16ps micro-kernels. The
// backward is the avx512bf16 one.
#include <immintrin.h>

#include "kernels/amx_tiles.hpp"
#include "kernels/tiled_bf16.hpp"
#include "kernels/tiled_bf16_backward.hpp"

namespace attnbench::kernels {
namespace {

template <class Arch>
struct TiledAmx : TiledBf16<Arch, TiledAmx<Arch>> {
  using B = TiledBf16<Arch, TiledAmx>;
  using B::MR;
  using B::NR;
  using B::pairs;
  using typename B::Pair;

  static constexpr std::size_t T = 16;  // rows of a tile, and pairs (of 64 bytes) in a row
  // Whole tiles of rows but the block's last group, whose tile rows past the block are spare
  // accumulator rows: a tile never writes another group's rows.
  static constexpr std::size_t kGroup = T;
  static std::size_t group_rows(std::size_t) { return kGroup; }
  static constexpr std::size_t kSpareRows = kGroup - 1;
  static_assert(kRowsPerTask % kGroup == 0, "a row block must start a group");
  // A group of fewer rows wastes most of a tile: vdpbf16ps instead.
  static constexpr std::size_t kMinTileRows = 4;
  static_assert(NR % T == 0, "a K^T panel must be whole tiles of keys");

  static std::size_t panel_height(std::size_t d) { return round_up(pairs(d), T); }

  // The tile state of one call: five tiles of 16 rows of 64 bytes (T pairs). Tile 0: Q or P;
  // 1, 2: K^T or V; 3, 4: the sums. Released at the end, so the thread does not keep the state.
  static_assert(T * sizeof(Pair) == 64, "a tile row is T pairs");
  struct TileState {
    TileState() {
      const AmxTileConfig config(5);
      _tile_loadconfig(&config);
    }
    TileState(const TileState&) = delete;
    TileState& operator=(const TileState&) = delete;
    ~TileState() { _tile_release(); }
  };
  static TileState enter_tiles() { return {}; }

  // Q's rows in groups of `group`, each group at out + g / group * kGroup * ph: a tile group as
  // kGroup rows of ph pairs (rows past the group's zero), a group of few rows as tiled_bf16.hpp
  // packs it.
  static void pack_q(const float* q, std::size_t rows, std::size_t group, std::size_t d, Pair* out,
                     std::size_t ph) {
    for (std::size_t g = 0; g < rows; g += group) {
      const std::size_t mr = min_of(group, rows - g);
      Pair* packed = out + g / group * kGroup * ph;
      if (mr < kMinTileRows) {
        B::pack_q(q + g * d, mr, mr, d, packed, ph);
        continue;
      }
      for (std::size_t r = 0; r < kGroup; ++r) {
        auto* row = reinterpret_cast<BFloat16*>(packed + r * ph);
        std::size_t c = 0;
        if (r < mr) {  // the row rounded, then zeros to the padded height
          B::S::round_array(q + (g + r) * d, row, d);
          c = d;
        }
        for (; c < 2 * ph; ++c) row[c] = BFloat16{};
      }
    }
  }

  // S[0..16)[keys of the panels) = Q K^T for a tile group, panel by panel (32 keys: two tiles).
  template <std::size_t Ss>
  static void score_rows(std::size_t rows, const Pair* q, std::size_t ph, const Pair* kt,
                         std::size_t panels, float* s) {
    if (rows < kMinTileRows) return B::template score_rows<Ss>(rows, q, ph, kt, panels, s);
    const std::size_t q_bytes = ph * sizeof(Pair), k_bytes = NR * sizeof(Pair);
    for (std::size_t x = 0; x < panels; ++x) {
      const Pair* panel = kt + x * NR * ph;
      _tile_zero(3);
      _tile_zero(4);
      for (std::size_t c = 0; c < ph; c += T) {
        _tile_loadd(0, q + c, q_bytes);
        _tile_loadd(1, panel + c * NR, k_bytes);
        _tile_loadd(2, panel + c * NR + T, k_bytes);
        _tile_dpbf16ps(3, 0, 1);
        _tile_dpbf16ps(4, 0, 2);
      }
      _tile_stored(3, s + x * NR, Ss * sizeof(float));
      _tile_stored(4, s + x * NR + T, Ss * sizeof(float));
    }
  }

  // O = O * alpha + P V over `pairs` pairs of keys every row sees: the whole tiles of 16 pairs on
  // AMX (O rescaled first), the rest on vdpbf16ps, MR rows at a time.
  template <std::size_t Ps>
  static void blend_shared(std::size_t mr, const Pair* p, const Pair* v, std::size_t dp,
                           std::size_t pairs, const float* alpha, float* o) {
    const auto by_rows = [&](std::size_t from, std::size_t count, const float* a) {
      for (std::size_t r0 = 0; r0 < mr; r0 += MR) {
        B::template blend_rows<Ps>(min_of(MR, mr - r0), p + r0 * Ps + from, v + from * dp, dp,
                                   count, false, false, a == nullptr ? nullptr : a + r0,
                                   o + r0 * dp);
      }
    };
    const std::size_t tiled = mr >= kMinTileRows ? pairs / T * T : 0;
    if (tiled == 0) return by_rows(0, pairs, alpha);
    if (alpha != nullptr) by_rows(0, 0, alpha);
    const std::size_t o_bytes = dp * sizeof(float), v_bytes = dp * sizeof(Pair);
    for (std::size_t c = 0; c < dp; c += 2 * T) {  // two tiles of 16 columns (dp: whole vectors)
      const bool two = c + T < dp;
      _tile_loadd(3, o + c, o_bytes);
      if (two) _tile_loadd(4, o + c + T, o_bytes);
      for (std::size_t jp = 0; jp < tiled; jp += T) {
        _tile_loadd(0, p + jp, Ps * sizeof(Pair));
        _tile_loadd(1, v + jp * dp + c, v_bytes);
        _tile_dpbf16ps(3, 0, 1);
        if (two) {
          _tile_loadd(2, v + jp * dp + c + T, v_bytes);
          _tile_dpbf16ps(4, 0, 2);
        }
      }
      _tile_stored(3, o + c, o_bytes);
      if (two) _tile_stored(4, o + c + T, o_bytes);
    }
    if (tiled < pairs) by_rows(tiled, pairs - tiled, nullptr);
  }
};

}  // namespace

using Bf16Amx = TiledAmx<xsimd::avx512bw>;
constexpr Bf16Table bf16_amxbf16{
    .isa = Isa::amxbf16,
    .tiled = tiled_bf16_code<xsimd::avx512bw, Bf16Amx>(),
    .phases = {Bf16Amx::phase_rows<kScorePhase>, Bf16Amx::phase_rows<kSoftmaxPhase>,
               Bf16Amx::phase_rows<kBlendPhase>}};

}  // namespace attnbench::kernels
