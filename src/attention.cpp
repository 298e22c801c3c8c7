// attention(): validation, then the loop over (batch, query head, query block) that hands each
// piece to a kernel, inline or on oneTBB worker threads.
#include <oneapi/tbb/info.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <attnbench/attnbench.hpp>
#include "call_plan.hpp"
#include "kernels/common.hpp"
#include "kernels/storage.hpp"
#include "mask_band.hpp"
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

std::vector<float> alibi_slopes(std::size_t heads) {
  auto powers = [](std::size_t n) {  // n a power of two: 2^(-8 (h + 1) / n)
    std::vector<float> s(n);
    for (std::size_t h = 0; h < n; ++h) s[h] = float(std::exp2(-8.0 * double(h + 1) / double(n)));
    return s;
  };
  if (heads == 0) return {};
  std::size_t closest = 1;
  while (closest * 2 <= heads) closest *= 2;
  std::vector<float> slopes = powers(closest);
  const std::vector<float> twice = powers(2 * closest);
  for (std::size_t h = 0; slopes.size() < heads; h += 2) slopes.push_back(twice[h]);
  return slopes;
}

std::string_view to_string(Alignment alignment) {
  return alignment == Alignment::top_left ? "top_left" : "bottom_right";
}
std::optional<Alignment> alignment_from_string(std::string_view name) {
  if (name == "bottom_right") return Alignment::bottom_right;
  if (name == "top_left") return Alignment::top_left;
  return std::nullopt;
}

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

namespace {

// Options::mask: one kind, and sizes that broadcast over the call's.
void validate_mask(const Shape& shape, const MaskTensor& mask) {
  if (mask.empty()) return;
  if (mask.keep != nullptr && mask.bias != nullptr) {
    throw Error("options.mask", "keep and bias",
                "is boolean (keep) or additive (bias), not both; set one");
  }
  const std::pair<const char*, std::size_t> full[] = {{"shape.batch", shape.batch},
                                                      {"shape.q_heads", shape.q_heads},
                                                      {"shape.q_len", shape.q_len},
                                                      {"shape.kv_len", shape.kv_len}};
  for (std::size_t x = 0; x < 4; ++x) {
    const auto [name, size] = full[x];
    const bool keys = x == 3;  // the key dimension does not broadcast
    if (mask.sizes[x] != size && (keys || mask.sizes[x] != 1)) {
      throw Error("options.mask.sizes[" + std::to_string(x) + "]", std::to_string(mask.sizes[x]),
                  std::string("must be ") + name + " = " + std::to_string(size) +
                      (keys ? "" : " or 1 (broadcast)"));
    }
  }
  driver::checked_product({mask.sizes[0], mask.sizes[1], mask.sizes[2], mask.sizes[3], 4},
                          "options.mask", "the mask's elements x 4 bytes");
}

}  // namespace

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
  if (options.softcap && !(std::isfinite(*options.softcap) && *options.softcap > 0.0f)) {
    throw Error("options.softcap", std::to_string(*options.softcap), "must be finite and above 0");
  }
  if (!options.alibi_slopes.empty()) {
    if (options.alibi_slopes.size() != shape.q_heads) {
      throw Error(
          "options.alibi_slopes", std::to_string(options.alibi_slopes.size()) + " slopes",
          "must hold one per query head (shape.q_heads = " + std::to_string(shape.q_heads) + ")");
    }
    for (std::size_t h = 0; h < shape.q_heads; ++h) {
      if (!std::isfinite(options.alibi_slopes[h])) {
        throw Error("options.alibi_slopes[" + std::to_string(h) + "]",
                    std::to_string(options.alibi_slopes[h]), "must be finite");
      }
    }
  }
  if (options.alignment != Alignment::bottom_right && options.alignment != Alignment::top_left) {
    throw Error("options.alignment", std::to_string(int(options.alignment)),
                "must be bottom_right or top_left");
  }
  if (options.window_left && *options.window_left == 0) {
    throw Error("options.window_left", "0",
                "a window holds at least its diagonal key (1); unset it for no window");
  }
  if (options.causal && options.window_right) {
    throw Error("options.window_right", std::to_string(*options.window_right),
                "is set with causal = true, which sees no key after the diagonal; unset one");
  }
  validate_mask(shape, options.mask);
  if (options.threads > kMaxThreads) {
    throw Error("options.threads", std::to_string(options.threads),
                "must be at most " + std::to_string(kMaxThreads) + " (0 means every core)");
  }
}

namespace {

// A call on a KvCache: the cache holds this shape's K and V in this kernel's layout.
void validate_cache(const Kernel& kernel, const Shape& shape, const Options& options,
                    const Tensors& tensors) {
  const KvCache& cache = *tensors.kv_cache;
  if (tensors.k != nullptr || tensors.v != nullptr) {
    throw Error(tensors.k ? "tensors.k" : "tensors.v", "set",
                "must be null when tensors.kv_cache holds K and V");
  }
  const std::pair<const char*, std::pair<std::size_t, std::size_t>> sizes[] = {
      {"shape.batch", {shape.batch, cache.batch()}},
      {"shape.kv_heads", {shape.kv_heads, cache.kv_heads()}},
      {"shape.head_dim", {shape.head_dim, cache.head_dim()}},
      {"shape.kv_len", {shape.kv_len, cache.length()}}};
  for (const auto& [field, sizes] : sizes) {
    if (sizes.first != sizes.second) {
      throw Error(field, std::to_string(sizes.first),
                  "tensors.kv_cache holds " + std::to_string(sizes.second));
    }
  }
  if (options.kv_type != KvType::f32 && options.kv_type != cache.type()) {
    throw Error("options.kv_type", std::string(to_string(options.kv_type)),
                "tensors.kv_cache stores " + std::string(to_string(cache.type())));
  }
  const kernels::KernelCode* code = kernels::code(resolve(kernel), cache.type());
  if (code == nullptr ||
      code->packing.pack != kernels::code(cache.kernel(), cache.type())->packing.pack) {
    throw Error("tensors.kv_cache", std::string(cache.kernel().name),
                "is packed in that kernel's layout, which kernel " + std::string(kernel.name) +
                    " does not read");
  }
}

}  // namespace

void validate(const Kernel& kernel, const Shape& shape, const Options& options,
              const Tensors& tensors) {
  driver::require_available(kernel);
  validate(shape, options);
  const std::size_t q_elements = shape.q_elements();
  const std::size_t kv_elements = shape.kv_elements();
  const driver::NamedBytes q{"tensors.q", tensors.q, q_elements},
      k{"tensors.k", tensors.k, tensors.kv_cache ? 0 : kv_elements},
      v{"tensors.v", tensors.v, tensors.kv_cache ? 0 : kv_elements},
      o{"tensors.o", tensors.o, q_elements};
  if (tensors.kv_cache != nullptr) {
    validate_cache(kernel, shape, options, tensors);
    driver::require_non_null({q, o});
  } else {
    driver::require_non_null({q, k, v, o});
    const KvType stored = kernels::stored_type(resolve(kernel), options);
    driver::require_stores("options.kv_type", resolve(kernel), stored);
    driver::require_representable("tensors.k", tensors.k, kv_elements, stored);
    driver::require_representable("tensors.v", tensors.v, kv_elements, stored);
  }
  driver::require_outputs_disjoint(o, tensors.lse, q_elements / shape.head_dim,
                                   {q, k, v, driver::mask_bytes(options.mask)});
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
  if (options.quantise_query) {
    const KvType stored = tensors.kv_cache != nullptr
                              ? tensors.kv_cache->type()
                              : kernels::stored_type(resolve(kernel), options);
    if (!is_quantised(stored)) {
      throw Error("options.quantise_query", "true",
                  "needs K stored quantised (kv_type q8_0 or q4_0); K is stored as " +
                      std::string(to_string(stored)));
    }
    driver::require_representable("tensors.q", tensors.q, q_elements, KvType::q8_0);
  }
  // Last, once the extents are checked: Q is rounded to bfloat16 too by a bf16-products kernel.
  if (resolve(kernel).products == Products::bf16) {
    driver::require_representable("tensors.q", tensors.q, q_elements, KvType::bf16);
  }
}

namespace {

using driver::splits_keys;
using driver::task_rows;
using kernels::HeadProblem;
using kernels::KeyRange;
using kernels::kKeyChunk;
using kernels::kPackKeys;
using kernels::kRowsPerTask;
using kernels::PartialRows;
using kernels::RowRange;

// Options::quantise_query: the q8_0 blocks of every query row (HeadProblem's q_codes, q_scales,
// q_sums from row 0 of Q), or none.
struct QueryCodes {
  std::int8_t* codes = nullptr;
  float* scales = nullptr;
  std::int32_t* sums = nullptr;
};

// The (batch, query head) slice of the problem with the key/value head it reads (its packed copy
// `packed` when the kernel packs), or with fold > 1 the `fold` query heads from `q_head` on,
// which share that key/value head, as one problem of fold x q_len rows.
HeadProblem head_problem(const Shape& shape, float scale, float softcap, const float* alibi,
                         const KeyMask& mask, const MaskTensor& tensor, const Tensors& t,
                         const void* packed, std::size_t capacity, std::size_t batch,
                         std::size_t q_head, std::size_t fold, const QueryCodes& codes) {
  const HeadOffsets at = head_offsets(shape, batch, q_head);
  const bool in_place = t.kv_cache == nullptr;
  const std::size_t row = at.q / shape.head_dim, blocks = kernels::query_blocks(shape.head_dim);
  return HeadProblem{.q = t.q + at.q,
                     .k = in_place ? t.k + at.kv : nullptr,
                     .v = in_place ? t.v + at.kv : nullptr,
                     .o = t.o + at.q,
                     .q_len = fold * shape.q_len,
                     .kv_len = shape.kv_len,
                     .head_dim = shape.head_dim,
                     .scale = scale,
                     .softcap = softcap,
                     .alibi = alibi ? alibi + q_head : nullptr,
                     .mask = mask,
                     .tensor = kernels::mask_rows(tensor, batch, q_head),
                     .kv_packed = packed,
                     .kv_capacity = capacity,
                     .lse = t.lse ? t.lse + at.q / shape.head_dim : nullptr,
                     .head_rows = shape.q_len,
                     .q_codes = codes.codes ? codes.codes + row * blocks * 32 : nullptr,
                     .q_scales = codes.scales ? codes.scales + row * blocks : nullptr,
                     .q_sums = codes.sums ? codes.sums + row * blocks : nullptr};
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
  const std::size_t kv_heads = shape.batch * shape.kv_heads;
  const KvCache* cache = tensors.kv_cache;
  const kernels::KernelCode& code =
      *kernels::code(kernel, cache ? cache->type() : kernels::stored_type(kernel, options));
  ws.reset_peak();
  Workspace::Scope call(ws);
  driver::TaskRunner tasks(worker_threads(options), ws);

  // Pack every (batch, key/value head) once, unless a cache holds them packed already; the query
  // heads that share it all read the copy. Tasks of kPackKeys keys, so that a single long head
  // (decoding) packs on every thread. Or, for a call whose packed K and V fit the L2, one copy per
  // thread, which each thread packs in its first compute task (call_plan.hpp).
  std::byte* packed = nullptr;
  std::size_t per_head = 0;  // bytes
  const bool replicated =
      cache == nullptr && driver::replicates_packing(code, shape, tasks.threads());
  unsigned char* copied = nullptr;  // per thread slot: has it packed its copy yet
  auto pack_copy = [&](std::size_t slot) {
    for (std::size_t kv = 0; kv < kv_heads; ++kv) {
      const std::size_t offset = kv * shape.kv_len * d;
      code.packing.pack(tensors.k + offset, tensors.v + offset, shape.kv_len, d, 0, shape.kv_len,
                        packed + (slot * kv_heads + kv) * per_head);
    }
    copied[slot] = 1;
  };
  if (replicated) {
    per_head = kernels::packed_bytes_per_head(code.packing, shape.kv_len, d);
    packed = ws.take<std::byte>(tasks.threads() * kv_heads * per_head);
    copied = ws.take<unsigned char>(tasks.threads());
    for (std::size_t slot = 0; slot < tasks.threads(); ++slot) copied[slot] = 0;
  } else if (cache == nullptr && code.packing.pack != nullptr) {
    per_head = kernels::packed_bytes_per_head(code.packing, shape.kv_len, d);
    packed = ws.take<std::byte>(kv_heads * per_head);
    const std::size_t ranges = (shape.kv_len + kPackKeys - 1) / kPackKeys;
    tasks.run(kv_heads * ranges, [&](std::size_t t, Workspace&) {
      const std::size_t kv = t / ranges, first = (t % ranges) * kPackKeys;
      const std::size_t offset = (kv * shape.kv_len + first) * d;
      code.packing.pack(tensors.k + offset, tensors.v + offset, shape.kv_len, d, first,
                        std::min(first + kPackKeys, shape.kv_len), packed + kv * per_head);
    });
  }
  const std::size_t capacity = cache ? cache->capacity() : shape.kv_len;
  auto packed_head = [&](std::size_t kv_head, std::size_t slot) -> const void* {
    if (cache) return cache->head_storage(kv_head);
    return packed ? packed + ((replicated ? slot * kv_heads : 0) + kv_head) * per_head : nullptr;
  };
  // NOTE: decoding folds the `group` query heads that read one key/value head into one problem
  // of group x q_len rows (contiguous in Q and O), so that K and V stream once per key/value head,
  // not once per query head, and feed up to MR rows per load (call_plan.hpp: problems). A row's
  // arithmetic is the same as unfolded. Problem p is batch p / per_batch, query heads from
  // (p % per_batch) x group on (group 1: one query head).
  const driver::Problems plan = driver::problems(code, shape);
  const KeyMask mask = driver::kernel_key_mask(
      shape, options, [&](std::size_t count, const std::function<void(std::size_t)>& task) {
        tasks.run(count, [&](std::size_t t, Workspace&) { task(t); });
      });
  // Options::quantise_query: every query row quantised once, in tasks of rows; the kernels then
  // read the rounded rows as Q, and may read the blocks' codes.
  Tensors used = tensors;
  QueryCodes codes;
  if (options.quantise_query) {
    const std::size_t rows = shape.q_elements() / d, blocks = kernels::query_blocks(d);
    float* rounded = ws.take<float>(shape.q_elements());
    codes = {ws.take<std::int8_t>(rows * blocks * 32), ws.take<float>(rows * blocks),
             ws.take<std::int32_t>(rows * blocks)};
    constexpr std::size_t kRowsPerTask = 256;
    tasks.run((rows + kRowsPerTask - 1) / kRowsPerTask, [&](std::size_t t, Workspace&) {
      for (std::size_t r = t * kRowsPerTask; r < std::min(rows, (t + 1) * kRowsPerTask); ++r) {
        kernels::quantise_query_row(tensors.q + r * d, d, codes.codes + r * blocks * 32,
                                    codes.scales + r * blocks, codes.sums + r * blocks,
                                    rounded + r * d);
      }
    });
    used.q = rounded;
  }
  const std::size_t per_batch = shape.q_heads / plan.group;
  auto problem = [&](std::size_t p, std::size_t slot = 0) {
    const std::size_t b = p / per_batch, h = p % per_batch * plan.group;
    return head_problem(shape, scale, options.softcap.value_or(0.0f),
                        options.alibi_slopes.empty() ? nullptr : options.alibi_slopes.data(), mask,
                        options.mask, used, packed_head(head_offsets(shape, b, h).kv_head, slot),
                        capacity, b, h, plan.group, codes);
  };

  if (splits_keys(code, shape)) {
    // Task (problem, chunk) leaves the chunk's (o, m, l) for every row; one merge per problem
    // then combines the chunks in order.
    const std::size_t chunks = (shape.kv_len + kKeyChunk - 1) / kKeyChunk;
    const std::size_t rows = plan.rows;
    float* buffer = ws.take<float>(plan.count * chunks * rows * (d + 2));
    std::vector<PartialRows> parts(plan.count * chunks);
    for (std::size_t p = 0; p < parts.size(); ++p) {
      float* base = buffer + p * rows * (d + 2);
      parts[p] = PartialRows{base, base + rows * d, base + rows * (d + 1)};
    }
    tasks.run(plan.count * chunks, [&](std::size_t t, Workspace& local) {
      const std::size_t c = t % chunks;
      Workspace::Scope scope(local);
      code.forward.partial(problem(t / chunks), RowRange{0, rows},
                           KeyRange{c * kKeyChunk, std::min((c + 1) * kKeyChunk, shape.kv_len)},
                           parts[t], local);
    });
    tasks.run(plan.count, [&](std::size_t p, Workspace&) {
      const HeadProblem h = problem(p);
      for (std::size_t i = 0; i < rows; ++i)
        merge_row(chunks, d, &parts[p * chunks], i, h.o + i * d, h.lse ? h.lse + i : nullptr);
    });
    return kernel;
  }

  // NOTE: every task is (problem, block of query rows); inline, a task is a whole problem. Rows
  // are independent, and a row's arithmetic does not depend on which task or thread computes it,
  // so the output is the same for every thread count.
  const std::size_t block =
      tasks.parallel() ? task_rows(code, shape, plan, tasks.threads()) : plan.rows;
  const std::size_t blocks_per_problem = (plan.rows + block - 1) / block;
  tasks.run(plan.count * blocks_per_problem, [&](std::size_t t, Workspace& local) {
    const std::size_t first = (t % blocks_per_problem) * block;
    const std::size_t slot = tasks.slot();
    if (replicated && !copied[slot]) pack_copy(slot);
    Workspace::Scope scope(local);
    code.forward.rows(problem(t / blocks_per_problem, slot),
                      RowRange{first, std::min(first + block, plan.rows)}, local);
  });
  return kernel;
}

}  // namespace attnbench
