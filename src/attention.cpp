// attention(): validation, then the loop over (batch, query head, query block) that hands each
// piece to a kernel, inline or on oneTBB worker threads.
#include <oneapi/tbb/info.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "attnbench.hpp"
#include "kernels/common.hpp"
#include "task_runner.hpp"
#include "tensor_checks.hpp"

namespace attnbench {

using driver::checked_product;

Error::Error(std::string field, std::string value, const std::string& why)
    : std::invalid_argument(field + " = " + value + ": " + why),
      field_(std::move(field)),
      value_(std::move(value)) {}

namespace {

// Most worker threads a call may ask for; far above any core count this study targets.
constexpr std::size_t kMaxThreads = 1024;

}  // namespace

float effective_scale(const Shape& shape, const Options& options) {
  return options.scale ? *options.scale
                       : static_cast<float>(1.0 / std::sqrt(static_cast<double>(shape.head_dim)));
}

std::size_t worker_threads(const Options& options) {
  return options.threads ? options.threads
                         : static_cast<std::size_t>(tbb::info::default_concurrency());
}

std::size_t naive_score_bytes(const Shape& shape) {
  return checked_product({shape.q_len, shape.kv_len, sizeof(float)}, "naive score matrix",
                         "q_len x kv_len x 4 bytes");
}

std::size_t default_memory_budget() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return std::size_t{1} << 32;  // unknown: assume 8 GiB RAM
  return static_cast<std::size_t>(pages) / 2 * static_cast<std::size_t>(page_size);
}

void validate(const Shape& shape, const Options& options) {
  const std::pair<const char*, std::size_t> sizes[] = {
      {"shape.batch", shape.batch},       {"shape.q_heads", shape.q_heads},
      {"shape.kv_heads", shape.kv_heads}, {"shape.q_len", shape.q_len},
      {"shape.kv_len", shape.kv_len},     {"shape.head_dim", shape.head_dim}};
  for (const auto& [field, value] : sizes) {
    if (value == 0) throw Error(field, "0", "must be at least 1");
  }
  if (shape.q_heads % shape.kv_heads != 0) {
    throw Error("shape.q_heads", std::to_string(shape.q_heads),
                "must be a multiple of shape.kv_heads = " + std::to_string(shape.kv_heads));
  }
  checked_product({shape.batch, shape.q_heads, shape.q_len, shape.head_dim, sizeof(float)}, "shape",
                  "batch x q_heads x q_len x head_dim x 4 bytes");
  checked_product({shape.batch, shape.kv_heads, shape.kv_len, shape.head_dim, sizeof(float)},
                  "shape", "batch x kv_heads x kv_len x head_dim x 4 bytes");
  if (options.scale && !std::isfinite(*options.scale)) {
    throw Error("options.scale", std::to_string(*options.scale), "must be finite");
  }
  if (options.threads > kMaxThreads) {
    throw Error("options.threads", std::to_string(options.threads),
                "must be at most " + std::to_string(kMaxThreads) + " (0 means every core)");
  }
}

void validate(const Kernel& kernel, const Shape& shape, const Options& options,
              const Tensors& tensors) {
  if (!kernel.available()) {
    throw Error("kernel", std::string(kernel.name), "this CPU lacks the instructions it needs");
  }
  validate(shape, options);
  const std::size_t q_elements = shape.q_elements();
  const std::size_t kv_elements = shape.kv_elements();
  const driver::NamedBytes q{"tensors.q", tensors.q, q_elements},
      k{"tensors.k", tensors.k, kv_elements}, v{"tensors.v", tensors.v, kv_elements},
      o{"tensors.o", tensors.o, q_elements};
  driver::require_non_null({q, k, v, o});
  if (tensors.lse != nullptr) {
    driver::require_disjoint({o, {"tensors.lse", tensors.lse, q_elements / shape.head_dim}},
                             {q, k, v});
  } else {
    driver::require_disjoint({o}, {q, k, v});
  }
  if (kernel.strategy == Strategy::naive) {
    const std::size_t budget =
        options.memory_budget_bytes ? options.memory_budget_bytes : default_memory_budget();
    const std::size_t needed = naive_score_bytes(shape);
    if (needed > budget) {
      throw Error("options.memory_budget_bytes", std::to_string(budget),
                  "the naive score matrix needs " + std::to_string(needed) + " bytes (q_len " +
                      std::to_string(shape.q_len) + " x kv_len " + std::to_string(shape.kv_len) +
                      " x 4); use a tiled kernel or raise the budget");
    }
  }
}

namespace {

using kernels::HeadProblem;
using kernels::KeyRange;
using kernels::kKeyChunk;
using kernels::kPackKeys;
using kernels::kRowsPerTask;
using kernels::PartialRows;
using kernels::RowRange;

// The (batch, query head) slice of the problem with the key/value head it reads, and that head's
// packed copy when the kernel packs.
HeadProblem head_problem(const Shape& shape, float scale, bool causal, const Tensors& t,
                         const float* packed, std::size_t packed_per_head, std::size_t batch,
                         std::size_t q_head) {
  const HeadOffsets at = head_offsets(shape, batch, q_head);
  return HeadProblem{t.q + at.q,
                     t.k + at.kv,
                     t.v + at.kv,
                     t.o + at.q,
                     shape.q_len,
                     shape.kv_len,
                     shape.head_dim,
                     scale,
                     causal,
                     packed ? packed + at.kv_head * packed_per_head : nullptr,
                     t.lse ? t.lse + at.q / shape.head_dim : nullptr};
}

// Decoding (few query rows, many keys) splits the keys into chunks of kKeyChunk and merges the
// chunks' partial results by log-sum-exp. Whether to split depends on the shape only, never on
// the thread count, so results stay bitwise equal for every thread count.
constexpr std::size_t kDecodeRows = kRowsPerTask;

bool splits_keys(const kernels::KernelCode& code, const Shape& shape) {
  return code.forward.partial != nullptr && shape.q_len <= kDecodeRows &&
         shape.kv_len >= 2 * kKeyChunk;
}

// O = sum_c exp(m_c - m) o_c / sum_c exp(m_c - m) l_c with m = max_c m_c, over the chunks' partial
// results of one row, in chunk order.
void merge_row(std::size_t chunks, std::size_t d, const PartialRows* parts, std::size_t row,
               float* out, float* lse) {
  float m = kernels::kMinusInf;
  for (std::size_t c = 0; c < chunks; ++c) m = parts[c].m[row] > m ? parts[c].m[row] : m;
  const float m_ref = kernels::max_reference(m);
  float l = 0.0f;
  for (std::size_t x = 0; x < d; ++x) out[x] = 0.0f;
  for (std::size_t c = 0; c < chunks; ++c) {
    const float weight = std::exp(parts[c].m[row] - m_ref);
    l += parts[c].l[row] * weight;
    for (std::size_t x = 0; x < d; ++x) out[x] += parts[c].o[row * d + x] * weight;
  }
  if (lse != nullptr) *lse = kernels::log_sum_exp(m, l);
  const float inv_l = kernels::inverse_sum(l);
  for (std::size_t x = 0; x < d; ++x)
    out[x] = l == 0.0f ? 0.0f : out[x] * inv_l;  // l = 0: a zero row
}

}  // namespace

const Kernel& attention(const Kernel& requested, const Shape& shape, const Options& options,
                        const Tensors& tensors, Workspace& ws) {
  const Kernel& kernel = resolve(requested);
  validate(kernel, shape, options, tensors);
  const float scale = effective_scale(shape, options);
  const std::size_t d = shape.head_dim;
  const std::size_t heads = shape.batch * shape.q_heads;
  const std::size_t kv_heads = shape.batch * shape.kv_heads;
  const kernels::KernelCode& code = *kernel.code;
  ws.reset_peak();
  Workspace::Scope call(ws);
  driver::TaskRunner tasks(worker_threads(options), ws);

  // Pack every (batch, key/value head) once; the query heads that share it all read the copy.
  // Tasks of kPackKeys keys, so that a single long head (decoding) packs on every thread.
  float* packed = nullptr;
  std::size_t per_head = 0;
  if (code.packing.pack != nullptr) {
    per_head = kernels::packed_floats_per_head(code.packing, shape);
    packed = ws.take<float>(kv_heads * per_head);
    const std::size_t ranges = (shape.kv_len + kPackKeys - 1) / kPackKeys;
    tasks.run(kv_heads * ranges, [&](std::size_t t, Workspace&) {
      const std::size_t kv = t / ranges, first = (t % ranges) * kPackKeys;
      const std::size_t offset = kv * shape.kv_len * d;
      code.packing.pack(tensors.k + offset, tensors.v + offset, shape.kv_len, d, first,
                        std::min(first + kPackKeys, shape.kv_len), packed + kv * per_head);
    });
  }
  auto head = [&](std::size_t bh) {
    return head_problem(shape, scale, options.causal, tensors, packed, per_head, bh / shape.q_heads,
                        bh % shape.q_heads);
  };

  if (splits_keys(code, shape)) {
    // NOTE: task (head, chunk) leaves the chunk's (o, m, l) for every query row of the head; one
    // merge per head then combines the chunks in order.
    const std::size_t chunks = (shape.kv_len + kKeyChunk - 1) / kKeyChunk;
    const std::size_t rows = shape.q_len;
    float* buffer = ws.take<float>(heads * chunks * rows * (d + 2));
    std::vector<PartialRows> parts(heads * chunks);
    for (std::size_t p = 0; p < parts.size(); ++p) {
      float* base = buffer + p * rows * (d + 2);
      parts[p] = PartialRows{base, base + rows * d, base + rows * (d + 1)};
    }
    tasks.run(heads * chunks, [&](std::size_t t, Workspace& local) {
      const std::size_t c = t % chunks;
      Workspace::Scope scope(local);
      code.forward.partial(head(t / chunks), RowRange{0, rows},
                           KeyRange{c * kKeyChunk, std::min((c + 1) * kKeyChunk, shape.kv_len)},
                           parts[t], local);
    });
    tasks.run(heads, [&](std::size_t bh, Workspace&) {
      const HeadProblem h = head(bh);
      for (std::size_t i = 0; i < rows; ++i)
        merge_row(chunks, d, &parts[bh * chunks], i, h.o + i * d, h.lse ? h.lse + i : nullptr);
    });
    return kernel;
  }

  // NOTE: every task is (batch, query head, block of query rows); inline, a task is a whole head.
  // Rows are independent, and a row's arithmetic does not depend on which task or thread
  // computes it, so the output is the same for every thread count.
  const std::size_t block = tasks.parallel() ? kRowsPerTask : shape.q_len;
  const std::size_t blocks_per_head = (shape.q_len + block - 1) / block;
  tasks.run(heads * blocks_per_head, [&](std::size_t t, Workspace& local) {
    const std::size_t first = (t % blocks_per_head) * block;
    Workspace::Scope scope(local);
    code.forward.rows(head(t / blocks_per_head),
                      RowRange{first, std::min(first + block, shape.q_len)}, local);
  });
  return kernel;
}

}  // namespace attnbench
