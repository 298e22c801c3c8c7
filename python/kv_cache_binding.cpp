// The extension module's class KvCache (attnbench.KvCache): one layer's keys and values kept packed
// between calls, appended to, rolled back, and attended through (module_support.hpp says what it
// shares with attnbench_module.cpp).
#include "module_support.hpp"

namespace attnbench::python {
namespace {

std::unique_ptr<PyKvCache> make_cache(long long kv_heads, long long head_dim, long long capacity,
                                      long long batch, const py::handle& kv_dtype_arg,
                                      const std::optional<std::string>& kernel_name) {
  const std::size_t sizes[] = {count_of(kv_heads, "kv_heads", 1), count_of(head_dim, "head_dim", 1),
                               count_of(capacity, "capacity", 1), count_of(batch, "batch", 1)};
  const attnbench::KvType type = kv_type_of(kv_dtype_arg, "kv_dtype");
  const attnbench::Kernel& kernel = kernel_named(kernel_name);
  auto made = std::make_unique<PyKvCache>();
  constexpr Rename kRenames[] = {{"type", "kv_dtype"}};
  with_argument_names(kRenames, [&] {
    made->cache =
        std::make_unique<attnbench::KvCache>(kernel, sizes[3], sizes[0], sizes[1], sizes[2], type);
  });
  return made;
}

void append_tokens(PyKvCache& self, const py::handle& k_arg, const py::handle& v_arg,
                   std::optional<long long> threads) {
  const py::array k = float32_input(k_arg, "k");
  const py::array v = float32_input(v_arg, "v");
  require_shape(v, "v", shape_vector(k), "k's");
  if (threads && *threads < 0) bad_value("threads: " + std::to_string(*threads) + " must be >= 0");
  const std::string k_shape = shape_string(k);
  WriteLock lock = lock_without_gil<WriteLock>(self);
  attnbench::KvCache& cache = *self.cache;
  const Dims dk = dims_of(k);
  const std::pair<const char*, std::pair<std::size_t, std::size_t>> sizes[] = {
      {"batch", {dk.batch, cache.batch()}},
      {"kv_heads", {dk.heads, cache.kv_heads()}},
      {"head_dim", {dk.dim, cache.head_dim()}}};
  for (const auto& [field, sizes] : sizes) {
    if (sizes.first != sizes.second) {
      bad_value(std::string("k: ") + field + " " + std::to_string(sizes.first) + " (shape " +
                k_shape + ") must equal the cache's " + field + " " + std::to_string(sizes.second));
    }
  }
  if (dk.len > cache.capacity() - cache.length()) {
    bad_value("k: " + std::to_string(dk.len) + " tokens exceed the cache's room: it holds " +
              std::to_string(cache.length()) + " of its capacity of " +
              std::to_string(cache.capacity()) + " tokens");
  }
  const std::size_t packing_threads = threads ? static_cast<std::size_t>(*threads) : 0;
  py::gil_scoped_release unlocked;
  cache.append(floats(k), floats(v), dk.len, packing_threads);
}

void truncate_cache(PyKvCache& self, long long length) {
  if (length < 0) bad_value("length: " + std::to_string(length) + " must be >= 0");
  WriteLock lock = lock_without_gil<WriteLock>(self);
  self.cache->truncate(static_cast<std::size_t>(length));
}

// The length and the bytes it reads, while no append changes them.
std::size_t length_of(const PyKvCache& self) {
  const ReadLock lock = lock_without_gil<ReadLock>(self);
  return self.cache->length();
}
std::size_t kv_bytes_of(const PyKvCache& self) {
  const ReadLock lock = lock_without_gil<ReadLock>(self);
  return self.cache->kv_bytes();
}

void clear_cache(PyKvCache& self) {
  WriteLock lock = lock_without_gil<WriteLock>(self);
  self.cache->clear();
}

}  // namespace

void bind_kv_cache(py::module_& m) {
  py::class_<PyKvCache>(
      m, "KvCache", R"(One layer's keys and values, kept packed for attention() to read as they are.

The cache holds up to `capacity` tokens for batch x kv_heads key/value heads of head_dim elements,
stored as kv_dtype in the layout of `kernel`. Prefill appends a block of tokens, decoding one at a
time; each append packs (and rounds) only the new tokens, and attention(q, cache=cache) then reads
them with no copy. The result equals, bit for bit, attention(q, k, v, kv_dtype=cache.dtype) on the
K and V appended so far. Safe to share between Python threads (appends wait for calls, and calls
for appends).)")
      .def(py::init(&make_cache), py::arg("kv_heads"), py::arg("head_dim"), py::arg("capacity"),
           py::arg("batch") = 1, py::kw_only(), py::arg("kv_dtype") = "f32",
           py::arg("kernel") = py::none(),
           R"(An empty cache for batch x kv_heads heads of head_dim elements, up to capacity tokens.

Args:
    kv_heads: key/value heads per batch entry (>= 1); the queries' heads must be a multiple.
    head_dim: elements per key and value row (>= 1); the queries' last axis.
    capacity: most tokens the cache holds (>= 1); its storage is allocated now.
    batch: batch entries (>= 1), the queries' first axis when they have rank 4.
    kv_dtype: how K and V are stored: "f32", "f16" or "bf16" (or np.float32, np.float16,
        ml_dtypes.bfloat16); 16-bit types halve the bytes a call reads, rounding each value once;
        "q8_0" and "q4_0" (ggml's blocks of 32 values with a float16 scale, tiled/simd only) cut
        them to 34 or 18 bytes per 32 values.
    kernel: a name from kernels() with a packed layout (tiled/simd, naive/simd or one of their
        ISA variants), default the first kernel of the registry that runs here. Calls on the cache
        run it, or another kernel that reads the same layout.

Raises:
    attnbench.Error: a size below 1, sizes whose bytes overflow, a kernel that reads K and V in
        place, or a kv_dtype the kernel does not store.
    ValueError: an unknown kernel or kv_dtype name. TypeError: a kv_dtype of another type.)")
      .def("append", &append_tokens, py::arg("k"), py::arg("v"), py::kw_only(),
           py::arg("threads") = py::none(),
           R"(Appends K and V rows of new tokens, rounded to the cache's dtype.

Args:
    k: float32 keys of shape (tokens, head_dim), (kv_heads, tokens, head_dim) or
        (batch, kv_heads, tokens, head_dim), C-contiguous; batch, kv_heads and head_dim must be the
        cache's (a missing axis counts as 1).
    v: float32 values of k's shape.
    threads: packing threads, None for every core.

Raises:
    TypeError: k or v not a float32 ndarray.
    ValueError: shapes that differ from each other or from the cache's, more tokens than the
        capacity has left (the cache is then unchanged).
    attnbench.Error: a finite value the cache's 16-bit dtype would turn into an infinity (the
        cache is then unchanged).)")
      .def("truncate", &truncate_cache, py::arg("length"),
           R"(Keeps the first `length` tokens and forgets the rest (a rejected speculative step).

Args:
    length: tokens to keep, at most the cache's length.

Raises:
    ValueError: a negative length. attnbench.Error: more tokens than the cache holds.)")
      .def("clear", &clear_cache, "Forgets every token; the capacity and the storage are kept.")
      .def(
          "attention",
          [](const py::object& self, const py::handle& q, const py::handle& causal,
             const py::handle& window, const py::handle& alignment, std::optional<double> scale,
             std::optional<double> softcap, const py::handle& alibi,
             const std::optional<std::string>& kernel, std::optional<long long> threads,
             bool return_lse, const py::handle& mask, bool quantise_query,
             const py::handle& out_dtype) {
            return attention(q, py::none(), py::none(), causal, window, alignment, scale, softcap,
                             alibi, kernel, threads, return_lse, py::none(), self, mask,
                             quantise_query, out_dtype);
          },
          py::arg("q"), py::kw_only(), py::arg("causal") = false, py::arg("window") = py::none(),
          py::arg("alignment") = py::none(), py::arg("scale") = py::none(),
          py::arg("softcap") = py::none(), py::arg("alibi_slopes") = py::none(),
          py::arg("kernel") = py::none(), py::arg("threads") = py::none(),
          py::arg("return_lse") = false, py::arg("mask") = py::none(),
          py::arg("quantise_query") = false, py::arg("out_dtype") = py::none(),
          "attention(q, cache=self, ...): the same call, on this cache's K and V.")
      .def_property_readonly("length", &length_of, "Tokens the cache holds now.")
      .def("__len__", &length_of, "Tokens the cache holds now (its length).")
      .def_property_readonly(
          "capacity", [](const PyKvCache& c) { return c.cache->capacity(); },
          "Most tokens the cache holds.")
      .def_property_readonly(
          "dtype",
          [](const PyKvCache& c) { return std::string(attnbench::to_string(c.cache->type())); },
          "How K and V are stored: 'f32', 'f16', 'bf16', 'q8_0' or 'q4_0'.")
      .def_property_readonly(
          "batch", [](const PyKvCache& c) { return c.cache->batch(); }, "Batch entries.")
      .def_property_readonly(
          "kv_heads", [](const PyKvCache& c) { return c.cache->kv_heads(); },
          "Key/value heads per batch entry.")
      .def_property_readonly(
          "head_dim", [](const PyKvCache& c) { return c.cache->head_dim(); },
          "Elements per key and value row.")
      .def_property_readonly(
          "kernel", [](const PyKvCache& c) { return std::string(c.cache->kernel().name); },
          "The kernel whose layout the cache keeps (the one that runs here, e.g. "
          "'tiled/simd/avx2' for 'tiled/simd').")
      .def_property_readonly(
          "kv_bytes", &kv_bytes_of,
          "Bytes of K and V a call over the cache's length reads: 2 x batch x kv_heads x length x "
          "head_dim x element bytes.")
      .def_property_readonly(
          "storage_bytes", [](const PyKvCache& c) { return c.cache->storage_bytes(); },
          "Bytes the cache holds, padding included.")
      .def("__repr__", [](const PyKvCache& c) {
        const attnbench::KvCache& k = *c.cache;
        return "KvCache(kv_heads=" + std::to_string(k.kv_heads()) +
               ", head_dim=" + std::to_string(k.head_dim()) +
               ", capacity=" + std::to_string(k.capacity()) +
               ", batch=" + std::to_string(k.batch()) + ", kv_dtype='" +
               std::string(attnbench::to_string(k.type())) + "', kernel='" +
               std::string(k.kernel().name) + "'; length " + std::to_string(length_of(c)) + ")";
      });
}

}  // namespace attnbench::python
