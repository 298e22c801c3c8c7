// forward_counts(): the loops of a forward call walked without computing, block by block as the
// driver (attention.cpp) and the kernels (tiled_simd.hpp, naive_simd.hpp, the plain loops) walk
// them, counting instead of computing.
#include "forward_counts.hpp"

#include <algorithm>

#include "call_plan.hpp"
#include "kernels/kernel_interface.hpp"
#include "mask_band.hpp"

namespace attnbench {

namespace {

std::size_t round_up(std::size_t x, std::size_t to) { return (x + to - 1) / to * to; }
std::size_t blocks(std::size_t x, std::size_t of) { return (x + of - 1) / of; }

}  // namespace

ForwardCounts forward_counts(const Kernel& requested, const Shape& shape, const Options& options) {
  validate(shape, options);
  const Kernel& kernel = resolve(requested);
  const KvType stored = kernels::stored_type(kernel, options);
  const kernels::KernelCode* code = kernels::code(kernel, stored);
  if (code == nullptr) {
    throw Error("options.kv_type", std::string(to_string(options.kv_type)),
                "kernel " + std::string(kernel.name) + " does not store K and V in that type");
  }
  const std::size_t d = shape.head_dim;
  const kernels::ForwardBlocking b =
      code->forward.blocking
          ? code->forward.blocking(d)
          : kernels::ForwardBlocking{
                .query_block = 1, .key_block = kernels::kNoKeyBlocks, .padded_dim = d};
  const std::size_t dp = b.padded_dim;
  const bool packs = code->packing.bytes != nullptr;
  // Bytes a key costs in the stream: its K^T panel column and V row in the stored type, or the
  // float32 K and V rows a kernel reads in place.
  const double element = packs ? double(kv_row_bytes(stored, d)) / double(d) : 4.0;
  const double k_bytes = double(d) * element;
  // a quantised V row is stored unpadded (its blocks carry their own padding)
  const double v_bytes = is_quantised(stored) ? k_bytes : double(packs ? dp : d) * element;
  const double key_bytes = k_bytes + v_bytes;
  const std::size_t threads = worker_threads(options);
  const std::size_t kv_heads = shape.batch * shape.kv_heads;

  // One problem as the kernel sees it: `rows` query rows (row i being row i % head_rows of its
  // head for the mask) against keys [0, keys), in tasks of `task` rows; the counts of `copies`
  // such problems.
  ForwardCounts c;
  auto count_problem = [&](std::size_t rows, std::size_t head_rows, std::size_t keys,
                           std::size_t task, double copies) {
    // (the kernels' keys: a mask tensor's band narrows them)
    const KeyMask mask = driver::kernel_key_mask(
        Shape{shape.batch, shape.q_heads, shape.kv_heads, head_rows, shape.kv_len, shape.head_dim},
        options);
    auto visible = [&](std::size_t i) {
      const KeySpan span = mask.row(i % head_rows);
      return KeySpan{std::min(keys, span.begin), std::min(keys, span.end)};
    };
    // The keys rows [i, i + count) see, from the first's first to the last's last (a span across
    // two folded heads: all of them).
    auto span_of = [&](std::size_t i, std::size_t count) {
      if (i % head_rows + count > head_rows) return KeySpan{visible(0).begin, keys};
      return KeySpan{visible(i).begin, visible(i + count - 1).end};
    };
    const std::size_t br_max = std::min(b.query_block, task);
    for (std::size_t t0 = 0; t0 < rows; t0 += task) {
      const std::size_t t_end = std::min(t0 + task, rows);
      for (std::size_t i0 = t0; i0 < t_end; i0 += br_max) {
        const std::size_t br = std::min(br_max, t_end - i0);
        const KeySpan span = span_of(i0, br);
        // the key blocks the row block takes: from the one that holds its first key
        const std::size_t first_key =
            b.key_block == kernels::kNoKeyBlocks ? 0 : span.begin / b.key_block * b.key_block;
        const std::size_t streamed = span.end > first_key ? span.end - first_key : 0;
        // K for the keys the block scores (every key for a kernel that masks after scoring), V for
        // those it blends.
        const std::size_t scored = b.scores_masked_keys ? keys : streamed;
        c.kv_stream_bytes += copies * (double(scored) * k_bytes + double(streamed) * v_bytes);
        if (kernel.strategy == Strategy::tiled) {  // the rescale factor of each row and key block
          const double key_blocks = double(blocks(streamed, b.key_block));
          c.exps += copies * double(br) * key_blocks;
        }
        const std::size_t group = kernels::row_group(br, b.mr);
        for (std::size_t g = 0; g < br; g += group) {
          const std::size_t mr = std::min(group, br - g);
          const KeySpan seen = span_of(i0 + g, mr);
          // from the panel of the group's first key
          const std::size_t w = b.scores_masked_keys    ? keys
                                : seen.end > seen.begin ? seen.end - seen.begin / b.nr * b.nr
                                                        : 0;
          c.score_fmas += copies * double(mr) * double(round_up(w, b.nr)) * double(d);
        }
        for (std::size_t i = i0; i < i0 + br; ++i) {
          // The blend runs each row over the keys it sees (a group's shared keys, then each row's
          // ragged head and tail alone).
          const double seen = double(visible(i).size());
          c.blend_fmas += copies * seen * double(dp);
          c.exps += copies * seen;
          c.softmax_scores += copies * seen;
        }
      }
    }
    c.query_block = br_max;
  };

  const bool parallel = threads > 1;
  // Decoding folds each key/value head's query heads into one problem (driver::problems).
  const driver::Problems plan = driver::problems(*code, shape);
  bool chunked = false;  // a task passes super blocks of query blocks over chunks of keys
  if (driver::splits_keys(*code, shape)) {  // and splits its keys into chunks
    count_problem(plan.rows, shape.q_len, shape.kv_len, plan.rows, double(plan.count));
    if (parallel) {
      c.compute_tasks = double(plan.count * blocks(shape.kv_len, kernels::kKeyChunk));
      c.tasks += c.compute_tasks + double(plan.count);  // and one merge per problem
    }
  } else {
    const std::size_t task = parallel ? driver::task_rows(*code, shape, plan, threads) : plan.rows;
    count_problem(plan.rows, shape.q_len, shape.kv_len, task, double(plan.count));
    chunked = b.chunk_keys > 0 && shape.kv_len > b.chunk_keys &&
              std::min(task, plan.rows) > b.query_block;
    if (parallel) {
      c.compute_tasks = double(plan.count * blocks(plan.rows, task));
      c.tasks += c.compute_tasks;
    }
    if (kernel.strategy == Strategy::naive) {
      const std::size_t stride = round_up(shape.kv_len, b.nr);
      c.score_sweeps = double(b.score_sweeps);
      c.score_bytes = c.score_sweeps * 4.0 * c.softmax_scores;
      c.score_set_bytes = 4.0 * double(std::min(task, shape.q_len)) * double(stride);
    }
  }
  c.key_block = std::min(b.key_block, shape.kv_len);
  c.kv_head_bytes = double(shape.kv_len) * key_bytes;
  c.kv_set_bytes = chunked ? double(b.chunk_keys) * key_bytes : c.kv_head_bytes;
  if (packs) {  // a copy per thread, packed in its first compute task, or one in tasks of its own
    const bool replicated = driver::replicates_packing(*code, shape, parallel ? threads : 1);
    c.pack_bytes = pack_bytes(code->packing, shape) * double(replicated ? threads : 1);
    if (parallel && !replicated)
      c.tasks += double(kv_heads * blocks(shape.kv_len, kernels::kPackKeys));
  }
  c.io_bytes = 2.0 * double(shape.q_elements()) * 4.0;
  return c;
}

double pack_bytes(const kernels::KvPacking& packing, const Shape& shape) {
  return 2.0 * double(shape.kv_elements()) * sizeof(float) +
         double(kernels::packed_bytes(packing, shape));
}

}  // namespace attnbench
