// The cost model's counts (forward_counts.hpp) against closed forms worked out by hand from each
// kernel's blocking: the products' FMAs, the exps, the K/V bytes streamed once per query block, the
// naive score matrix's sweeps, packing and tasks; and the errors for bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <attnbench/attnbench.hpp>
#include "call_plan.hpp"
#include "cpu_caches.hpp"
#include "forward_counts.hpp"
#include "kernels/kernel_interface.hpp"

namespace attnbench {
namespace {

std::size_t round_up(std::size_t x, std::size_t to) { return (x + to - 1) / to * to; }

std::size_t blocks(std::size_t x, std::size_t of) { return (x + of - 1) / of; }

Options with(std::size_t threads, bool causal = false, KvType type = KvType::f32) {
  Options o;
  o.threads = threads;
  o.causal = causal;
  o.kv_type = type;
  return o;
}

// The caches the blocking derives from are the ones Linux's sysfs lists for CPU 0 (what lscpu
// shows), not glibc's sysconf where the two differ
// (docs/studies/2026-12-07-zen4-onednn-and-caches.md); in ascending order, each level present where
// sysfs has it.
TEST(CpuCaches, SizesAreSysfsWhereItListsThem) {
  std::size_t listed = 0;
  for (int index = 0; index < 16; ++index) {
    const std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::ifstream level_file(dir + "level"), type_file(dir + "type"), size_file(dir + "size");
    int level = 0;
    std::string type, size;
    if (!(level_file >> level) || !(type_file >> type) || !(size_file >> size)) break;
    if (type == "Instruction") continue;
    ++listed;
    ASSERT_FALSE(size.empty());
    const std::size_t factor = size.back() == 'K' ? 1024 : size.back() == 'M' ? 1024 * 1024 : 1;
    EXPECT_EQ(reported_cache_bytes(level), std::stoull(size) * factor) << "level " << level;
  }
  if (listed == 0) GTEST_SKIP() << "no sysfs cache list on this system";
  EXPECT_GT(reported_cache_bytes(1), 0u);
  EXPECT_GE(reported_cache_bytes(2), reported_cache_bytes(1));
  if (reported_cache_bytes(3) > 0) EXPECT_GE(reported_cache_bytes(3), reported_cache_bytes(2));
  EXPECT_EQ(reported_cache_bytes(0), 0u);
  EXPECT_EQ(reported_cache_bytes(4), 0u);
}

// tiled/scalar reads K and V in place in blocks of Br = 16 rows and Bc = 64 keys.
TEST(ForwardCounts, TiledScalarStreamsKAndVOncePerQueryBlock) {
  const Kernel& k = *find_kernel("tiled/scalar");
  const Shape shape{1, 1, 1, 100, 100, 8};
  const ForwardCounts c = forward_counts(k, shape, with(1));
  EXPECT_EQ(c.query_block, 16u);
  EXPECT_EQ(c.key_block, 64u);
  EXPECT_DOUBLE_EQ(c.score_fmas, 100.0 * 100 * 8);
  EXPECT_DOUBLE_EQ(c.blend_fmas, 100.0 * 100 * 8);
  EXPECT_DOUBLE_EQ(c.softmax_scores, 100.0 * 100);
  EXPECT_DOUBLE_EQ(c.exps, 100.0 * 100 + 100.0 * 2);  // + one rescale exp per row and block
  EXPECT_DOUBLE_EQ(c.kv_stream_bytes, 7.0 * 100 * 2 * 8 * 4);  // 7 query blocks x K and V rows
  EXPECT_DOUBLE_EQ(c.kv_head_bytes, 100.0 * 2 * 8 * 4);
  EXPECT_DOUBLE_EQ(c.pack_bytes, 0.0);
  EXPECT_DOUBLE_EQ(c.score_bytes, 0.0);
  EXPECT_DOUBLE_EQ(c.tasks, 0.0);
  EXPECT_DOUBLE_EQ(c.io_bytes, 2.0 * 100 * 8 * 4);
}

// The SIMD kernels: MR x NR micro-tiles (keys padded to whole NR panels), V and the accumulator
// padded to dp, packed K and V, blocks from the kernel's own blocking.
TEST(ForwardCounts, SimdKernelsCountTheirPaddedTiles) {
  for (const Kernel& k : registry()) {
    // (bf16 products: pairs of columns and keys, counted by the float32 kernels' model for now)
    if (k.backend != Backend::simd || k.dispatches || !k.available() ||
        k.products != Products::f32) {
      continue;
    }
    SCOPED_TRACE(std::string(k.name));
    const kernels::KernelCode& code = *kernels::code(k);
    const std::size_t q = 300, n = 500, d = 24;
    const kernels::ForwardBlocking b = code.forward.blocking(d);
    const ForwardCounts c = forward_counts(k, Shape{1, 1, 1, q, n, d}, with(1));
    EXPECT_EQ(c.query_block, b.query_block);
    EXPECT_EQ(c.key_block, std::min(b.key_block, n));
    EXPECT_DOUBLE_EQ(c.score_fmas, double(q) * double(round_up(n, b.nr)) * double(d));
    EXPECT_DOUBLE_EQ(c.blend_fmas, double(q) * double(n) * double(b.padded_dim));
    EXPECT_DOUBLE_EQ(c.softmax_scores, double(q) * double(n));
    const double key_bytes = double(d + b.padded_dim) * 4;
    EXPECT_DOUBLE_EQ(c.kv_stream_bytes, double(blocks(q, b.query_block)) * double(n) * key_bytes);
    EXPECT_DOUBLE_EQ(
        c.pack_bytes,
        2.0 * double(n * d) * 4 + double(kernels::packed_bytes(code.packing, {1, 1, 1, q, n, d})));
    if (k.strategy == Strategy::naive) {
      EXPECT_DOUBLE_EQ(c.exps, double(q) * double(n));                   // no rescale factors
      EXPECT_DOUBLE_EQ(c.score_bytes, 5.0 * 4 * double(q) * double(n));  // write, read, both, read
      EXPECT_DOUBLE_EQ(c.score_set_bytes, 4.0 * double(q) * double(round_up(n, b.nr)));
    } else {
      EXPECT_DOUBLE_EQ(c.exps, double(q) * double(n) + double(q) * double(blocks(n, b.key_block)));
      EXPECT_DOUBLE_EQ(c.score_bytes, 0.0);
    }
  }
}

// Under the causal mask a row scores only its visible keys, and a query block streams only the
// keys its last row sees.
TEST(ForwardCounts, CausalCountsOnlyVisibleKeys) {
  const Kernel& k = *find_kernel("tiled/scalar");
  const Shape shape{1, 1, 1, 64, 64, 4};
  const ForwardCounts c = forward_counts(k, shape, with(1, true));
  EXPECT_DOUBLE_EQ(c.softmax_scores, scored_pairs(shape, true));
  // Query blocks of 16 rows: the last rows see 16, 32, 48, 64 keys.
  EXPECT_DOUBLE_EQ(c.kv_stream_bytes, (16.0 + 32 + 48 + 64) * 2 * 4 * 4);
  const ForwardCounts full = forward_counts(k, shape, with(1, false));
  EXPECT_LT(c.score_fmas, 0.6 * full.score_fmas);
}

// Two threads: tasks of whole query blocks (fewer rows per pass over K and V when a head is cut
// into tasks smaller than the kernel's query block), packing in tasks of kPackKeys keys.
TEST(ForwardCounts, ThreadsCountTasksAndTheirQueryBlocks) {
  const Kernel& k = resolve(*find_kernel("tiled/simd"));
  if (!k.available()) GTEST_SKIP() << "no SIMD kernel on this CPU";
  const Shape shape{1, 1, 1, 2048, 2048, 64};
  const ForwardCounts one = forward_counts(k, shape, with(1));
  const ForwardCounts two = forward_counts(k, shape, with(2));
  EXPECT_DOUBLE_EQ(one.tasks, 0.0);
  EXPECT_LE(two.query_block, one.query_block);
  EXPECT_GE(two.query_block, kernels::kRowsPerTask);
  const double compute_tasks = double(blocks(2048, two.query_block));
  EXPECT_DOUBLE_EQ(two.compute_tasks, compute_tasks);
  // Packing tasks of their own, unless each thread packs a copy (whether this CPU's L2 holds it)
  const bool replicated = driver::replicates_packing(*kernels::code(k), shape, 2);
  EXPECT_DOUBLE_EQ(two.tasks,
                   compute_tasks + (replicated ? 0.0 : double(blocks(2048, kernels::kPackKeys))));
  EXPECT_DOUBLE_EQ(two.pack_bytes, one.pack_bytes * (replicated ? 2.0 : 1.0));
  const double per_pass = one.kv_stream_bytes / double(blocks(2048, one.query_block));
  EXPECT_DOUBLE_EQ(two.kv_stream_bytes, compute_tasks * per_pass);
  EXPECT_DOUBLE_EQ(two.score_fmas, one.score_fmas);
}

// A call whose packed K and V fit the L2 gets a copy per thread, packed in the compute tasks: twice
// the packing bytes on two threads and no packing tasks; a call whose K and V do not, one copy.
TEST(ForwardCounts, SmallCallsPackACopyPerThread) {
  const Kernel& k = resolve(*find_kernel("tiled/simd"));
  if (!k.available()) GTEST_SKIP() << "no SIMD kernel on this CPU";
  const Shape small{1, 2, 2, 128, 128, 64}, large{1, 1, 1, 128, 1 << 16, 64};
  EXPECT_TRUE(driver::replicates_packing(*kernels::code(k), small, 2));
  EXPECT_FALSE(driver::replicates_packing(*kernels::code(k), small, 1));
  EXPECT_FALSE(driver::replicates_packing(*kernels::code(k), large, 2));  // 32 MiB packed
  const ForwardCounts one = forward_counts(k, small, with(1)),
                      two = forward_counts(k, small, with(2));
  EXPECT_DOUBLE_EQ(two.pack_bytes, 2 * one.pack_bytes);
  EXPECT_DOUBLE_EQ(two.tasks, two.compute_tasks);
  const ForwardCounts wide = forward_counts(k, large, with(2));
  EXPECT_DOUBLE_EQ(wide.pack_bytes, forward_counts(k, large, with(1)).pack_bytes);
  EXPECT_GT(wide.tasks, wide.compute_tasks);
}

// A head whose K and V outgrow one key chunk is read, one chunk at a time, by a super block of
// query blocks: the stream still passes once per query block, from a working set of one chunk.
TEST(ForwardCounts, KeyChunksAreTheStreamsWorkingSet) {
  const Kernel& k = resolve(*find_kernel("tiled/simd"));
  if (!k.available()) GTEST_SKIP() << "no SIMD kernel on this CPU";
  const kernels::ForwardBlocking b = kernels::code(k)->forward.blocking(256);
  ASSERT_GT(b.chunk_keys, 0u);
  const double key_bytes = (256.0 + double(b.padded_dim)) * 4;
  const std::size_t q_len = b.query_block * b.super_blocks * 2;
  const Shape long_head{1, 1, 1, q_len, 2 * b.chunk_keys + 37, 256};
  const ForwardCounts c = forward_counts(k, long_head, with(1));
  EXPECT_DOUBLE_EQ(c.kv_head_bytes, double(long_head.kv_len) * key_bytes);
  EXPECT_DOUBLE_EQ(c.kv_set_bytes,
                   b.super_blocks > 1 ? double(b.chunk_keys) * key_bytes : c.kv_head_bytes);
  EXPECT_DOUBLE_EQ(c.kv_stream_bytes,
                   double(blocks(q_len, b.query_block)) * double(long_head.kv_len) * key_bytes);
  const Shape one_chunk{1, 1, 1, q_len, b.chunk_keys, 256};
  const ForwardCounts short_head = forward_counts(k, one_chunk, with(1));
  EXPECT_DOUBLE_EQ(short_head.kv_set_bytes, short_head.kv_head_bytes);
}

// Decoding folds each key/value head's query heads into one problem: K and V stream once per
// key/value head, in the stored type's bytes, whether the keys are split into chunks (8192) or
// not (2048, under two chunks).
TEST(ForwardCounts, DecodingStreamsEachKeyValueHeadOnce) {
  const Kernel& k = resolve(*find_kernel("tiled/simd"));
  if (!k.available()) GTEST_SKIP() << "no SIMD kernel on this CPU";
  const kernels::ForwardBlocking b = kernels::code(k)->forward.blocking(128);
  for (const std::size_t kv_len : {8192, 2048}) {
    const Shape shape{1, 32, 8, 1, kv_len, 128};
    const double keys = 8.0 * double(kv_len) * double(128 + b.padded_dim);
    EXPECT_DOUBLE_EQ(forward_counts(k, shape, with(1)).kv_stream_bytes, keys * 4) << kv_len;
    EXPECT_DOUBLE_EQ(forward_counts(k, shape, with(1, false, KvType::f16)).kv_stream_bytes,
                     keys * 2)
        << kv_len;
    // A task per (key/value head, chunk) and a merge per key/value head; unsplit, a task per
    // key/value head. Then the packing's tasks.
    const double compute =
        kv_len >= 2 * kernels::kKeyChunk ? 8.0 * double(kv_len / kernels::kKeyChunk + 1) : 8.0;
    EXPECT_DOUBLE_EQ(forward_counts(k, shape, with(2)).tasks,
                     compute + 8.0 * double(kv_len / kernels::kPackKeys))
        << kv_len;
  }
}

// A SIMD kernel under the causal mask: a micro-tile scores the keys of its widest (last) row in
// whole panels; the blend runs each row over its own keys.
TEST(ForwardCounts, CausalSimdTilesScoreTheirWidestRowAndBlendEachRowsKeys) {
  const Kernel& k = resolve(*find_kernel("tiled/simd"));
  if (!k.available()) GTEST_SKIP() << "no SIMD kernel on this CPU";
  const std::size_t d = 16;
  const kernels::ForwardBlocking b = kernels::code(k)->forward.blocking(d);
  // The row groups the kernel makes (kernels::row_group), written out: 64 rows of 12-row tiles
  // are 5 x 11 + 9, not 5 x 12 + 4; of 6-row tiles 10 x 6 + 4; 100 rows 8 x 12 + 4 and 16 x 6 + 4.
  const std::map<std::pair<std::size_t, std::size_t>, std::vector<std::size_t>> groups = {
      {{64, 12}, {11, 11, 11, 11, 11, 9}},
      {{64, 6}, {6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 4}},
      {{100, 12}, {12, 12, 12, 12, 12, 12, 12, 12, 4}},
      {{100, 6}, {6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 4}}};
  for (const std::size_t n : {std::size_t{64}, std::size_t{100}}) {
    SCOPED_TRACE(n);
    const auto expected = groups.find({n, b.mr});
    if (expected == groups.end()) GTEST_SKIP() << "no written-out groups for MR = " << b.mr;
    const Shape shape{1, 1, 1, n, n, d};
    const ForwardCounts c = forward_counts(k, shape, with(1, true));
    double score = 0;
    std::size_t last = 0;  // rows [first, last) of a group: its widest row sees `last` keys
    for (const std::size_t rows : expected->second) {
      last += rows;
      score += double(rows) * double(round_up(last, b.nr)) * double(d);
    }
    ASSERT_EQ(last, n);
    EXPECT_DOUBLE_EQ(c.score_fmas, score);
    EXPECT_DOUBLE_EQ(c.blend_fmas, scored_pairs(shape, true) * double(b.padded_dim));
  }
}

// Each naive kernel's sweeps of its score matrix, as its passes make them; OpenBLAS scores every
// key under the causal mask too (one sgemm per row block, the mask applied afterwards).
TEST(ForwardCounts, NaiveKernelsSweepTheirScoreMatrixAsTheirPassesDo) {
  const Shape shape{1, 1, 1, 96, 96, 8};
  const std::pair<const char*, double> sweeps[] = {
      {"naive/scalar", 7}, {"naive/autovec", 7}, {"naive/openblas", 8}, {"naive/simd", 5}};
  for (auto [name, expected] : sweeps) {
    const Kernel& k = resolve(*find_kernel(name));
    if (!k.available()) continue;
    SCOPED_TRACE(name);
    const ForwardCounts c = forward_counts(k, shape, with(1));
    EXPECT_DOUBLE_EQ(c.score_sweeps, expected);
    EXPECT_DOUBLE_EQ(c.score_bytes, expected * 4 * 96 * 96);
  }
  const Kernel& blas = *find_kernel("naive/openblas");
  const ForwardCounts causal = forward_counts(blas, shape, with(1, true));
  EXPECT_DOUBLE_EQ(causal.score_fmas, 96.0 * 96 * 8);  // every key
  EXPECT_DOUBLE_EQ(causal.blend_fmas, scored_pairs(shape, true) * 8);
  // Two row blocks of 48: K of every key, V of the keys each block's last row sees (48 and 96).
  EXPECT_DOUBLE_EQ(causal.kv_stream_bytes, 2 * 96.0 * 8 * 4 + (48.0 + 96) * 8 * 4);
}

TEST(ForwardCounts, BadInputIsAnErrorNamingTheField) {
  const Kernel& scalar = *find_kernel("naive/scalar");
  try {
    forward_counts(scalar, Shape{1, 1, 1, 8, 8, 8}, with(1, false, KvType::f16));
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.field(), "options.kv_type");
    EXPECT_EQ(e.value(), "f16");
  }
  EXPECT_THROW(forward_counts(scalar, Shape{1, 1, 1, 0, 8, 8}, with(1)), Error);
}

}  // namespace
}  // namespace attnbench
