// Block sizes the driver and the kernels agree on (and the benchmark's cost counters read).
#pragma once

#include <cstddef>

namespace attnbench::kernels {

// ---------------------------------------------------------------------------------------------
// Block sizes the driver and the kernels agree on. Each kernel checks its own blocks against
// these with a static_assert beside its block constants.
// ---------------------------------------------------------------------------------------------

// Query rows per parallel task when a call runs on more than one thread (one thread takes each
// head whole): the SIMD kernels' query block Br (8 groups of 6 rows, 4 of 12 with AVX-512). Small
// enough that a single head of moderate length makes many tasks, so work stealing balances two
// threads to within one block; large enough that a task's work (48 x kv_len x d x 4 FLOPs) dwarfs
// the cost of scheduling it. Kernels whose rounding depends on how rows are grouped
// (naive/openblas) group them in blocks that divide it, so a row's result is the same for every
// thread count.
inline constexpr std::size_t kRowsPerTask = 48;

// Keys per packing task: a multiple of every packed panel's width, so tasks write whole panels
// and one long head (decoding) packs on every thread.
inline constexpr std::size_t kPackKeys = 256;

// Keys per chunk of split-key decoding: a multiple of every key block, so a chunk is whole key
// blocks and a row's arithmetic within it is the same as in an unsplit call's blocks.
inline constexpr std::size_t kKeyChunk = 2048;

// Floats a row of the naive backward's materialised P and dS is padded to: the widest panel of
// NR keys (AVX-512: 32).
inline constexpr std::size_t kNaiveRowAlign = 32;

// Query rows per backward task of a tiled kernel: a task is one key block over one segment of
// rows, so that a short head still makes enough tasks for every thread (1024 rows: three
// segments per key block), while each task's dK and dV are added once per segment. A multiple of
// kRowsPerTask, so segments are whole row blocks.
inline constexpr std::size_t kBackwardSegmentRows = 8 * kRowsPerTask;

}  // namespace attnbench::kernels
