// attention_backward(): validation, then the passes that hand each piece of the backward pass to
// a kernel, inline or on oneTBB worker threads:
//   1. in one parallel pass: zero dQ, dK, dV; D = rowsum(dO * O) for every query row (what
//      ds = P (dP - D) needs); pack every (batch, key/value head) in the kernel's backward
//      layout, if it has one;
//   2. tiled: one task per (key/value head, key block, segment of query rows), started in
//      wavefront order, each adding to dQ in key block order and to dK, dV in segment order
//      (kernels::Turns);
//      naive: per query head, its P and dS rows (tasks over row blocks), then dK and dV (tasks
//      over key blocks, every row in order).
// No float is ever added by two threads, and every sum runs in an order fixed by the shape and
// the kernel: the gradients are the same bits for every thread count.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <new>
#include <tuple>

#include <attnbench/attnbench.hpp>
#include "kernels/kernel_interface.hpp"
#include "mask_band.hpp"
#include "task_runner.hpp"
#include "tensor_checks.hpp"

namespace attnbench {

namespace {

// Floats per row of the naive backward's P and dS.
std::size_t naive_row_floats(const Shape& shape) {
  return (shape.kv_len + kernels::kNaiveRowAlign - 1) / kernels::kNaiveRowAlign *
         kernels::kNaiveRowAlign;
}

// x . y over n floats in eight running sums (the compiler makes them one vector), summed
// pairwise at the end: the same for every thread count, as each row is one task's.
// x . y, x rounded to bfloat16 first when `bf16`.
float dot_product(const float* x, const float* y, std::size_t n, bool bf16) {
  auto in = [bf16](float v) { return bf16 ? round_to(KvType::bf16, v) : v; };
  float acc[8] = {};
  std::size_t c = 0;
  for (; c + 8 <= n; c += 8) {
    for (std::size_t l = 0; l < 8; ++l) acc[l] += in(x[c + l]) * y[c + l];
  }
  for (std::size_t l = 0; c < n; ++c, ++l) acc[l] += in(x[c]) * y[c];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

}  // namespace

void validate_backward(const Kernel& requested, const Shape& shape, const Options& options,
                       const Tensors& forward, const Gradients& gradients) {
  const Kernel& kernel = resolve(requested);
  driver::require_available(kernel);
  if (!kernel.has_backward()) {
    throw Error("kernel", std::string(kernel.name),
                "has no backward pass (attnbench list shows the kernels that do)");
  }
  validate(shape, options);
  if (options.kv_type != KvType::f32) {
    throw Error("options.kv_type", std::string(to_string(options.kv_type)),
                "the backward pass reads K and V as f32 only");
  }
  if (forward.kv_cache != nullptr) {
    throw Error("tensors.kv_cache", "set",
                "the backward pass reads K and V from tensors.k and tensors.v, not a cache");
  }
  const std::size_t q_elements = shape.q_elements(), kv_elements = shape.kv_elements();
  const std::size_t rows = q_elements / shape.head_dim;
  const driver::NamedBytes q{"tensors.q", forward.q, q_elements},
      k{"tensors.k", forward.k, kv_elements}, v{"tensors.v", forward.v, kv_elements},
      o{"tensors.o", forward.o, q_elements}, lse{"tensors.lse", forward.lse, rows},
      d_o{"gradients.d_o", gradients.d_o, q_elements}, dq{"gradients.dq", gradients.dq, q_elements},
      dk{"gradients.dk", gradients.dk, kv_elements}, dv{"gradients.dv", gradients.dv, kv_elements};
  driver::require_non_null({q, k, v, o, lse, d_o, dq, dk, dv});
  driver::require_disjoint({dq, dk, dv}, {q, k, v, o, lse, d_o, driver::mask_bytes(options.mask)});
  if (kernel.strategy == Strategy::naive) {
    const std::size_t budget =
        options.memory_budget_bytes ? options.memory_budget_bytes : default_memory_budget();
    const std::size_t row = naive_row_floats(shape);
    const std::size_t needed = driver::checked_product({2, shape.q_len, row, sizeof(float)},
                                                       "naive P and dS", "2 x q_len x kv_len x 4");
    if (needed > budget) {
      throw Error("options.memory_budget_bytes", std::to_string(budget),
                  "the naive backward's P and dS need " + std::to_string(needed) +
                      " bytes (2 x q_len " + std::to_string(shape.q_len) + " x kv_len " +
                      std::to_string(shape.kv_len) + " padded to " + std::to_string(row) +
                      " x 4); use a tiled kernel or raise the budget");
    }
  }
  // Last: the tensors are read only once every other check has passed (their extents among them).
  if (kernel.products == Products::bf16) {  // every input is rounded to bfloat16
    for (const auto& [field, x, n] : {std::tuple{"tensors.q", forward.q, q_elements},
                                      {"tensors.k", forward.k, kv_elements},
                                      {"tensors.v", forward.v, kv_elements},
                                      {"gradients.d_o", gradients.d_o, q_elements}}) {
      driver::require_representable(field, x, n, KvType::bf16);
    }
  }
}

const Kernel& attention_backward(const Kernel& requested, const Shape& shape,
                                 const Options& options, const Tensors& forward,
                                 const Gradients& gradients, Workspace& ws) {
  const Kernel& kernel = resolve(requested);
  validate_backward(kernel, shape, options, forward, gradients);
  const kernels::Backward& code =
      kernels::code(kernel, kernels::stored_type(kernel, options))->backward;
  // bf16 products: D = dO . O from dO rounded as dP = dO V^T takes it, so that dP - D cancels as
  // it does in exact arithmetic
  const bool bf16 = kernel.products == Products::bf16;
  const std::size_t d = shape.head_dim;
  const std::size_t heads = shape.batch * shape.q_heads;
  const std::size_t kv_heads = shape.batch * shape.kv_heads;
  const std::size_t group = shape.q_heads / shape.kv_heads;
  const std::size_t q_head_floats = shape.q_len * d, kv_head_floats = shape.kv_len * d;
  ws.reset_peak();
  Workspace::Scope call(ws);
  driver::TaskRunner tasks(worker_threads(options), ws);

  // Before the tiled tasks, one parallel pass: every (batch, key/value head) packed in the
  // kernel's backward layout, in ranges of kPackKeys keys; dQ, dK and dV zeroed and
  // D_i = dO_i . O_i computed for every query row (heads * q_len floats), and Q and dO packed
  // where the kernel has a layout for them, in chunks of kChunkRows rows (whole row blocks). One
  // pass, not one per kind, and chunks, not one task per head: at n = 1024, d = 128 they took
  // 0.5 ms of a 2-thread call's 8 ms as three passes of one task per head.
  constexpr std::size_t kChunkRows = 5 * kernels::kRowsPerTask;
  float* delta = ws.take<float>(heads * shape.q_len);
  const std::size_t rows_per_head =
      code.row_packing.pack != nullptr ? code.row_packing.bytes(shape.q_len, d) / sizeof(float) : 0;
  float* rows_packed = rows_per_head ? ws.take<float>(heads * rows_per_head) : nullptr;
  float* packed = nullptr;
  std::size_t per_head = 0;  // floats
  std::size_t ranges = 0;    // packing tasks per key/value head
  if (code.packing.pack != nullptr) {
    per_head =
        kernels::packed_bytes_per_head(code.packing, shape.kv_len, shape.head_dim) / sizeof(float);
    packed = ws.take<float>(kv_heads * per_head);
    ranges = (shape.kv_len + kernels::kPackKeys - 1) / kernels::kPackKeys;
  }
  const std::size_t q_chunks = (shape.q_len + kChunkRows - 1) / kChunkRows;
  const std::size_t kv_chunks = (shape.kv_len + kChunkRows - 1) / kChunkRows;
  const std::size_t pack_tasks = kv_heads * ranges, q_tasks = heads * q_chunks;
  tasks.run(pack_tasks + q_tasks + kv_heads * kv_chunks, [&](std::size_t t, Workspace&) {
    if (t < pack_tasks) {
      const std::size_t kv = t / ranges, first = (t % ranges) * kernels::kPackKeys;
      const std::size_t offset = kv * kv_head_floats + first * d;
      code.packing.pack(forward.k + offset, forward.v + offset, shape.kv_len, d, first,
                        std::min(first + kernels::kPackKeys, shape.kv_len), packed + kv * per_head);
    } else if (t < pack_tasks + q_tasks) {
      t -= pack_tasks;
      const std::size_t bh = t / q_chunks, first = t % q_chunks * kChunkRows;
      const std::size_t last = std::min(first + kChunkRows, shape.q_len);
      const std::size_t at = bh * q_head_floats;
      std::fill(gradients.dq + at + first * d, gradients.dq + at + last * d, 0.0f);
      for (std::size_t i = first; i < last; ++i) {
        delta[bh * shape.q_len + i] =
            dot_product(gradients.d_o + at + i * d, forward.o + at + i * d, d, bf16);
      }
      if (rows_packed != nullptr) {
        code.row_packing.pack(forward.q + at, gradients.d_o + at, shape.q_len, d, first, last,
                              rows_packed + bh * rows_per_head);
      }
    } else {
      t -= pack_tasks + q_tasks;
      const std::size_t first = t % kv_chunks * kChunkRows;
      const std::size_t last = std::min(first + kChunkRows, shape.kv_len);
      const std::size_t at = t / kv_chunks * kv_head_floats;
      std::fill(gradients.dk + at + first * d, gradients.dk + at + last * d, 0.0f);
      std::fill(gradients.dv + at + first * d, gradients.dv + at + last * d, 0.0f);
    }
  });

  const std::size_t key_block = code.key_block(d);
  const std::size_t key_blocks = (shape.kv_len + key_block - 1) / key_block;
  // The turns on dQ (one counter per query head and row block, starting at key block 0) and on
  // dK and dV (DkvOrder::slots per key/value head, starting at turn 0).
  const std::size_t row_blocks = (shape.q_len + kernels::kRowsPerTask - 1) / kernels::kRowsPerTask;
  const std::size_t segments =
      (shape.q_len + kernels::kBackwardSegmentRows - 1) / kernels::kBackwardSegmentRows;
  const std::size_t dkv_slots = kernels::DkvOrder::slots(segments);
  const std::size_t counters = heads * row_blocks + kv_heads * dkv_slots;
  auto* next = ws.take<std::atomic<std::uint32_t>>(counters);
  for (std::size_t x = 0; x < counters; ++x) new (next + x) std::atomic<std::uint32_t>(0);
  std::atomic<std::uint32_t>* next_dkv = next + heads * row_blocks;

  // The key/value head kv (batch * kv_heads + its index) and its group of query heads, which are
  // consecutive: query head h of batch b reads key/value head h / group.
  const KeyMask mask = driver::kernel_key_mask(
      shape, options, [&](std::size_t count, const std::function<void(std::size_t)>& task) {
        tasks.run(count, [&](std::size_t t, Workspace&) { task(t); });
      });
  auto problem = [&](std::size_t kv) {
    const std::size_t first_head = kv * group;  // = batch * q_heads + (kv % kv_heads) * group
    const std::size_t q_at = first_head * q_head_floats, kv_at = kv * kv_head_floats;
    return kernels::BackwardProblem{
        .q = forward.q + q_at,
        .d_o = gradients.d_o + q_at,
        .lse = forward.lse + first_head * shape.q_len,
        .delta = delta + first_head * shape.q_len,
        .dq = gradients.dq + q_at,
        .k = forward.k + kv_at,
        .v = forward.v + kv_at,
        .dk = gradients.dk + kv_at,
        .dv = gradients.dv + kv_at,
        .kv_packed = packed ? packed + kv * per_head : nullptr,
        .rows_packed = rows_packed ? rows_packed + first_head * rows_per_head : nullptr,
        .rows_packed_floats = rows_per_head,
        .group = group,
        .q_len = shape.q_len,
        .kv_len = shape.kv_len,
        .head_dim = d,
        .scale = effective_scale(shape, options),
        .softcap = options.softcap.value_or(0.0f),
        .alibi = options.alibi_slopes.empty()
                     ? nullptr
                     : options.alibi_slopes.data() + first_head % shape.q_heads,
        .mask = mask,
        .tensor = kernels::mask_rows(options.mask, first_head / shape.q_heads,
                                     first_head % shape.q_heads),
        .key_block = key_block,
        .dq_order = kernels::DqOrder(next + first_head * row_blocks, row_blocks),
        .dkv_order = kernels::DkvOrder(next_dkv + kv * dkv_slots, segments),
    };
  };
  auto key_range = [&](std::size_t block) {
    return kernels::KeyRange{block * key_block, std::min((block + 1) * key_block, shape.kv_len)};
  };

  if (code.keys != nullptr) {
    // Pass 2, tiled: tasks (key/value head, key block, row segment), a head's in wavefront order.
    const std::size_t cells = key_blocks * segments;
    tasks.run_in_order(kv_heads * cells, [&](std::size_t t, Workspace& local) {
      Workspace::Scope scope(local);
      const kernels::BackwardCell cell = kernels::wavefront_cell(t % cells, key_blocks, segments);
      const std::size_t first = cell.segment * kernels::kBackwardSegmentRows;
      code.keys(
          problem(t / cells), key_range(cell.block),
          kernels::RowRange{first, std::min(first + kernels::kBackwardSegmentRows, shape.q_len)},
          local);
    });
    return kernel;
  }

  // Pass 2, naive: one query head at a time, its P and dS materialised.
  const std::size_t p_stride = naive_row_floats(shape);
  float* p = ws.take<float>(shape.q_len * p_stride);
  float* ds = ws.take<float>(shape.q_len * p_stride);
  const std::size_t block = tasks.parallel() ? kernels::kRowsPerTask : shape.q_len;
  const std::size_t blocks_per_head = (shape.q_len + block - 1) / block;
  for (std::size_t kv = 0; kv < kv_heads; ++kv) {
    kernels::BackwardProblem head = problem(kv);
    head.p = p;
    head.ds = ds;
    head.p_stride = p_stride;
    for (std::size_t g = 0; g < group; ++g) {
      tasks.run(blocks_per_head, [&](std::size_t b, Workspace& local) {
        Workspace::Scope scope(local);
        code.rows(head, g, kernels::RowRange{b * block, std::min((b + 1) * block, shape.q_len)},
                  local);
      });
      tasks.run(key_blocks, [&](std::size_t b, Workspace& local) {
        Workspace::Scope scope(local);
        code.key_rows(head, g, key_range(b), local);
      });
    }
  }
  return kernel;
}

}  // namespace attnbench
