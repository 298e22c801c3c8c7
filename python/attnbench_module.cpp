// The extension module `attnbench._core` (re-exported by the package python/attnbench/):
// attention() and its backward pass on float32 NumPy arrays, the persistent KvCache, and the
// registry.
//
//   import attnbench, numpy as np
//   o = attnbench.attention(q, k, v, causal=False, scale=None, kernel=None, threads=None,
//                           kv_dtype=None)
//   o, lse = attnbench.attention(q, k, v, return_lse=True)
//   dq, dk, dv = attnbench.attention_backward(q, k, v, o, lse, d_o)
//   cache = attnbench.KvCache(kv_heads, head_dim, capacity, kv_dtype="bf16")
//   cache.append(k, v); o = attnbench.attention(q, cache=cache)
//
// Q of shape (n, d), (h, n, d) or (b, h, n, d); K and V of Q's rank, possibly with fewer heads
// (grouped-query attention). Inputs are read where they are (C-contiguous float32, no copy) and the
// GIL is released while the kernels run. Every error is a ValueError or TypeError that names the
// argument; the library's own Error keeps its message (field and value) as attnbench.Error, a
// ValueError, with the library's field renamed to the Python argument where one corresponds
// (tensors.k -> k, options.kv_type -> kv_dtype, tensors.kv_cache -> cache). The stubs in
// python/attnbench/_core.pyi mirror these signatures: change both together.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <attnbench/attnbench.hpp>

namespace py = pybind11;

namespace {

[[noreturn]] void bad_value(const std::string& message) { throw py::value_error(message); }

std::vector<py::ssize_t> shape_vector(const py::array& a) {
  return std::vector<py::ssize_t>(a.shape(), a.shape() + a.ndim());
}

// "(2, 3)", as NumPy prints a shape.
std::string shape_string(const py::array& a) {
  return py::str(py::tuple(py::cast(shape_vector(a))));
}

// `arg` as a C-contiguous float32 array, without copying it.
py::array float32_array(const py::handle& arg, const char* name) {
  if (!py::isinstance<py::array>(arg)) {
    throw py::type_error(std::string(name) + ": expected a numpy.ndarray of float32, got " +
                         std::string(py::str(py::type::of(arg).attr("__name__"))));
  }
  auto a = py::reinterpret_borrow<py::array>(arg);
  if (!a.dtype().is(py::dtype::of<float>())) {
    throw py::type_error(std::string(name) + ": dtype " + std::string(py::str(a.dtype())) +
                         ", expected float32 (convert with " + name + ".astype(np.float32))");
  }
  if (!(a.flags() & py::array::c_style)) {
    bad_value(std::string(name) + ": not C-contiguous (strides " +
              std::string(py::str(py::tuple(
                  py::cast(std::vector<py::ssize_t>(a.strides(), a.strides() + a.ndim()))))) +
              "); pass np.ascontiguousarray(" + name + ")");
  }
  return a;
}

// `arg` as a C-contiguous float32 array of rank 2 to 4, without copying it.
py::array float32_input(const py::handle& arg, const char* name) {
  py::array a = float32_array(arg, name);
  if (a.ndim() < 2 || a.ndim() > 4) {
    bad_value(std::string(name) + ": shape " + shape_string(a) + " has rank " +
              std::to_string(a.ndim()) + ", expected (n, d), (h, n, d) or (b, h, n, d)");
  }
  return a;
}

// `a`'s shape must be `want`, the shape of `other`'s (or, for LSE, of its rows).
void require_shape(const py::array& a, const char* name, const std::vector<py::ssize_t>& want,
                   const std::string& what) {
  if (shape_vector(a) != want) {
    bad_value(std::string(name) + ": shape " + shape_string(a) + " must equal " + what + " " +
              std::string(py::str(py::tuple(py::cast(want)))));
  }
}

// (batch, heads, length, head_dim) of a rank-2..4 array.
struct Dims {
  std::size_t batch = 1, heads = 1, len = 0, dim = 0;
};
Dims dims_of(const py::array& a) {
  const auto n = static_cast<std::size_t>(a.ndim());
  Dims d;
  d.dim = static_cast<std::size_t>(a.shape(n - 1));
  d.len = static_cast<std::size_t>(a.shape(n - 2));
  if (n >= 3) d.heads = static_cast<std::size_t>(a.shape(n - 3));
  if (n == 4) d.batch = static_cast<std::size_t>(a.shape(0));
  return d;
}

std::vector<std::size_t> dims_vector(const py::array& a) {
  return std::vector<std::size_t>(a.shape(), a.shape() + a.ndim());
}

// The library's shape_from_dims, as the CLI uses it: attnbench.Error naming q, k or v.
attnbench::Shape shape_of(const py::array& q, const py::array& k, const py::array& v) {
  return attnbench::shape_from_dims(dims_vector(q), dims_vector(k), dims_vector(v));
}

const attnbench::Kernel& kernel_named(const std::optional<std::string>& name) {
  if (!name) return attnbench::default_kernel();
  if (const attnbench::Kernel* k = attnbench::find_kernel(*name)) return *k;
  bad_value("kernel: '" + *name + "' is no registry kernel (attnbench.kernels() lists them)");
}

// One workspace per Python thread, kept between calls as a benchmark loop keeps it: a repeated
// call of a shape reuses its scratch and pays no page faults (released at thread exit).
attnbench::Workspace& thread_workspace() {
  thread_local attnbench::Workspace ws;
  return ws;
}

attnbench::Options options_of(bool causal, std::optional<double> scale,
                              std::optional<long long> threads) {
  attnbench::Options options;
  options.causal = causal;
  if (scale) options.scale = static_cast<float>(*scale);
  if (threads && *threads < 0) bad_value("threads: " + std::to_string(*threads) + " must be >= 0");
  options.threads = threads ? static_cast<std::size_t>(*threads) : 0;  // None: every core
  return options;
}

const float* floats(const py::array& a) { return static_cast<const float*>(a.data()); }

std::string type_name(const py::handle& arg) { return py::str(py::type::of(arg).attr("__name__")); }

// A K/V storage type given as "f32", "f16", "bf16", or as a NumPy dtype or scalar type of
// float32, float16 or bfloat16 (np.float16, ml_dtypes.bfloat16, np.dtype("float32")).
attnbench::KvType kv_type_of(const py::handle& arg, const char* name) {
  std::string text;
  if (py::isinstance<py::str>(arg)) {
    text = arg.cast<std::string>();
  } else if (py::isinstance<py::dtype>(arg) || PyType_Check(arg.ptr())) {
    try {
      text = py::str(py::dtype::from_args(py::reinterpret_borrow<py::object>(arg)).attr("name"));
    } catch (const py::error_already_set&) {
      text.clear();  // not a NumPy type: reported below
    }
  }
  if (text.empty()) {
    throw py::type_error(std::string(name) + ": expected 'f32', 'f16' or 'bf16', got " +
                         std::string(py::repr(arg)) + " (" + type_name(arg) + ")");
  }
  static const std::pair<std::string_view, std::string_view> numpy_names[] = {
      {"float32", "f32"}, {"float16", "f16"}, {"bfloat16", "bf16"}};
  for (const auto& [numpy_name, short_name] : numpy_names) {
    if (text == numpy_name) text = short_name;
  }
  if (const auto type = attnbench::kv_type_from_string(text)) return *type;
  bad_value(std::string(name) + ": '" + text + "' is no K/V storage type, expected 'f32', 'f16' " +
            "or 'bf16'");
}

// A count argument as a size: Error (field and value) when it is below `least`.
std::size_t count_of(long long value, const char* name, long long least) {
  if (value < least) {
    throw attnbench::Error(name, std::to_string(value),
                           "must be at least " + std::to_string(least));
  }
  return static_cast<std::size_t>(value);
}

// Runs `call`, renaming the library's field in an Error to the Python argument it came from
// (`renames`: library field -> argument), the rest of the message kept.
using Rename = std::pair<std::string_view, const char*>;
template <class Call>
decltype(auto) with_argument_names(std::span<const Rename> renames, Call&& call) {
  try {
    return call();
  } catch (const attnbench::Error& e) {
    for (const auto& [field, argument] : renames) {
      if (e.field() != field) continue;
      // what() is "<field> = <value>: <why>"
      const std::string why = std::string(e.what()).substr(field.size() + 3 + e.value().size() + 2);
      throw attnbench::Error(argument, e.value(), why);
    }
    throw;
  }
}

// One layer's K/V cache as Python holds it. The lock makes a cache safe to share between Python
// threads (the C++ KvCache is not thread-safe while appending): calls read under a shared lock,
// append, truncate and clear write under an exclusive one. A thread waits for the lock only with
// the GIL released, so a lock holder that waits for the GIL cannot deadlock with it.
struct PyKvCache {
  std::unique_ptr<attnbench::KvCache> cache;
  mutable std::shared_mutex mutex;
};

template <class Lock>
Lock lock_without_gil(const PyKvCache& cache) {
  Lock lock(cache.mutex, std::defer_lock);
  py::gil_scoped_release unlocked;
  lock.lock();
  return lock;
}
using ReadLock = std::shared_lock<std::shared_mutex>;
using WriteLock = std::unique_lock<std::shared_mutex>;

// The calls' own names for the library's fields.
constexpr Rename kCallRenames[] = {{"tensors.k", "k"},
                                   {"tensors.v", "v"},
                                   {"tensors.kv_cache", "cache"},
                                   {"options.kv_type", "kv_dtype"}};

// Q's batch, heads and head dim against the cache's (the library would name shape fields).
attnbench::Shape shape_on_cache(const py::array& q, const attnbench::KvCache& cache) {
  const Dims dq = dims_of(q);
  if (dq.batch != cache.batch()) {
    bad_value("q: batch " + std::to_string(dq.batch) + " (shape " + shape_string(q) +
              ") must equal the cache's batch " + std::to_string(cache.batch()));
  }
  if (dq.dim != cache.head_dim()) {
    bad_value("q: head dim " + std::to_string(dq.dim) + " must equal the cache's head_dim " +
              std::to_string(cache.head_dim()));
  }
  if (dq.heads % cache.kv_heads() != 0) {
    bad_value("q: " + std::to_string(dq.heads) + " heads (shape " + shape_string(q) +
              ") must be a multiple of the cache's kv_heads " + std::to_string(cache.kv_heads()));
  }
  if (cache.length() == 0) {
    bad_value("cache: holds no tokens (length 0); append K and V first");
  }
  return attnbench::Shape{dq.batch, dq.heads, cache.kv_heads(), dq.len, cache.length(), dq.dim};
}

// O, or (O, LSE) with return_lse: LSE of Q's shape without its last axis. K and V from the arrays
// k and v, or from `cache` (then k and v are None).
py::object attention(const py::handle& q_arg, const py::handle& k_arg, const py::handle& v_arg,
                     bool causal, std::optional<double> scale,
                     const std::optional<std::string>& kernel_name,
                     std::optional<long long> threads, bool return_lse,
                     const py::handle& kv_dtype_arg, const py::handle& cache_arg) {
  const py::array q = float32_input(q_arg, "q");
  attnbench::Options options = options_of(causal, scale, threads);
  if (!kv_dtype_arg.is_none()) options.kv_type = kv_type_of(kv_dtype_arg, "kv_dtype");
  const PyKvCache* py_cache = nullptr;
  ReadLock lock;
  std::optional<py::array> k, v;
  attnbench::Shape shape;
  const attnbench::Kernel* kernel = nullptr;
  if (cache_arg.is_none()) {
    if (k_arg.is_none() || v_arg.is_none()) {
      throw py::type_error(std::string(k_arg.is_none() ? "k" : "v") +
                           ": None; pass K and V as arrays, or cache=KvCache");
    }
    k = float32_input(k_arg, "k");
    v = float32_input(v_arg, "v");
    shape = shape_of(q, *k, *v);
    kernel = &kernel_named(kernel_name);
  } else {
    if (!py::isinstance<PyKvCache>(cache_arg)) {
      throw py::type_error("cache: expected an attnbench.KvCache, got " + type_name(cache_arg));
    }
    if (!k_arg.is_none() || !v_arg.is_none()) {
      throw py::type_error(std::string(!k_arg.is_none() ? "k" : "v") + ": got " +
                           type_name(!k_arg.is_none() ? k_arg : v_arg) +
                           ", must be None when cache= holds K and V");
    }
    py_cache = &cache_arg.cast<const PyKvCache&>();
    lock = lock_without_gil<ReadLock>(*py_cache);
    const attnbench::KvCache& cache = *py_cache->cache;
    if (!kv_dtype_arg.is_none() && options.kv_type != cache.type()) {
      bad_value("kv_dtype: '" + std::string(attnbench::to_string(options.kv_type)) +
                "', but the cache stores " + std::string(attnbench::to_string(cache.type())));
    }
    options.kv_type = cache.type();
    shape = shape_on_cache(q, cache);
    kernel = kernel_name ? &kernel_named(kernel_name) : &cache.kernel();
  }
  const attnbench::KvCache* cache = py_cache ? py_cache->cache.get() : nullptr;
  const float* k_data = k ? floats(*k) : nullptr;
  const float* v_data = v ? floats(*v) : nullptr;
  // Validate before allocating the output, so a huge or empty shape fails with its field, not
  // with a MemoryError.
  float placeholder = 0.0f;  // a distinct output address for validation only
  attnbench::Tensors tensors{floats(q), k_data, v_data, &placeholder, nullptr, cache};
  with_argument_names(kCallRenames, [&] {
    attnbench::validate(attnbench::resolve(*kernel), shape, options, tensors);
  });
  const std::vector<py::ssize_t> q_shape = shape_vector(q);
  py::array_t<float> out(q_shape);
  std::optional<py::array_t<float>> lse;
  if (return_lse) lse.emplace(std::vector<py::ssize_t>(q_shape.begin(), q_shape.end() - 1));
  tensors.o = out.mutable_data();
  tensors.lse = lse ? lse->mutable_data() : nullptr;
  {
    py::gil_scoped_release unlocked;
    with_argument_names(kCallRenames, [&] {
      attnbench::attention(*kernel, shape, options, tensors, thread_workspace());
    });
  }
  if (lse) return py::make_tuple(out, *lse);
  return out;
}

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

// `kernel`, or by default the first available kernel of the registry that has a backward pass.
const attnbench::Kernel& backward_kernel_named(const std::optional<std::string>& name) {
  if (!name) return attnbench::default_backward_kernel();
  const attnbench::Kernel& kernel = kernel_named(name);
  if (!kernel.has_backward()) {
    bad_value("kernel: '" + *name + "' has no backward pass (kernels() lists has_backward)");
  }
  return kernel;
}

py::tuple attention_backward(const py::handle& q_arg, const py::handle& k_arg,
                             const py::handle& v_arg, const py::handle& o_arg,
                             const py::handle& lse_arg, const py::handle& d_o_arg, bool causal,
                             std::optional<double> scale,
                             const std::optional<std::string>& kernel_name,
                             std::optional<long long> threads) {
  const py::array q = float32_input(q_arg, "q");
  const py::array k = float32_input(k_arg, "k");
  const py::array v = float32_input(v_arg, "v");
  const py::array o = float32_array(o_arg, "o");
  const py::array lse = float32_array(lse_arg, "lse");
  const py::array d_o = float32_array(d_o_arg, "d_o");
  const attnbench::Shape shape = shape_of(q, k, v);
  const std::vector<py::ssize_t> q_shape = shape_vector(q);
  require_shape(o, "o", q_shape, "q's");
  require_shape(d_o, "d_o", q_shape, "q's");
  require_shape(lse, "lse", std::vector<py::ssize_t>(q_shape.begin(), q_shape.end() - 1),
                "q's without its last axis,");
  const attnbench::Kernel& kernel = backward_kernel_named(kernel_name);
  const attnbench::Options options = options_of(causal, scale, threads);
  // Sizes and options first, so a huge or empty shape fails with its field, not a MemoryError;
  // the gradients are then no larger than the inputs the caller holds, and the call itself
  // checks the rest (the naive budget, overlaps) before it computes anything.
  attnbench::validate(shape, options);
  py::array_t<float> dq(q_shape), dk(shape_vector(k)), dv(shape_vector(v));
  const attnbench::Tensors forward{
      floats(q), floats(k), floats(v), const_cast<float*>(floats(o)),
      const_cast<float*>(floats(lse))};  // the backward only reads them
  const attnbench::Gradients gradients{floats(d_o), dq.mutable_data(), dk.mutable_data(),
                                       dv.mutable_data()};
  {
    py::gil_scoped_release unlocked;
    attnbench::attention_backward(kernel, shape, options, forward, gradients, thread_workspace());
  }
  return py::make_tuple(dq, dk, dv);
}

py::list kernels() {
  py::list list;
  for (const attnbench::Kernel& k : attnbench::registry()) {
    py::dict entry;
    entry["name"] = std::string(k.name);
    entry["strategy"] = std::string(attnbench::to_string(k.strategy));
    entry["backend"] = std::string(attnbench::to_string(k.backend));
    entry["isa"] = std::string(attnbench::to_string(k.isa));
    entry["available"] = k.available();
    entry["dispatches"] = k.dispatches;
    entry["has_backward"] = k.has_backward();
    entry["runs"] = std::string(attnbench::resolve(k).name);
    py::list kv_dtypes;
    for (const attnbench::KvType type :
         {attnbench::KvType::f32, attnbench::KvType::f16, attnbench::KvType::bf16}) {
      if (k.stores(type)) kv_dtypes.append(std::string(attnbench::to_string(type)));
    }
    entry["kv_dtypes"] = kv_dtypes;
    list.append(entry);
  }
  return list;
}

}  // namespace

#ifndef ATTNBENCH_VERSION
#error "ATTNBENCH_VERSION: python/CMakeLists.txt defines it from project(VERSION)"
#endif

PYBIND11_MODULE(_core, m) {
  m.doc() = "attnbench: scaled dot-product attention on the CPU, O = softmax(Q K^T * scale) V";
  m.attr("__version__") = ATTNBENCH_VERSION;
  py::register_exception<attnbench::Error>(m, "Error", PyExc_ValueError);
  m.attr("Error").attr("__doc__") =
      "An invalid shape, option, size or value, as the library reports it: the message names the "
      "field (or the argument) and its value, e.g. 'shape.q_len = 0: must be at least 1'. A "
      "ValueError.";

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
        ml_dtypes.bfloat16); 16-bit types halve the bytes a call reads, rounding each value once.
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
          [](const py::object& self, const py::handle& q, bool causal, std::optional<double> scale,
             const std::optional<std::string>& kernel, std::optional<long long> threads,
             bool return_lse) {
            return attention(q, py::none(), py::none(), causal, scale, kernel, threads, return_lse,
                             py::none(), self);
          },
          py::arg("q"), py::kw_only(), py::arg("causal") = false, py::arg("scale") = py::none(),
          py::arg("kernel") = py::none(), py::arg("threads") = py::none(),
          py::arg("return_lse") = false,
          "attention(q, cache=self, ...): the same call, on this cache's K and V.")
      .def_property_readonly("length", &length_of, "Tokens the cache holds now.")
      .def("__len__", &length_of, "Tokens the cache holds now (its length).")
      .def_property_readonly(
          "capacity", [](const PyKvCache& c) { return c.cache->capacity(); },
          "Most tokens the cache holds.")
      .def_property_readonly(
          "dtype",
          [](const PyKvCache& c) { return std::string(attnbench::to_string(c.cache->type())); },
          "How K and V are stored: 'f32', 'f16' or 'bf16'.")
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

  m.def(
      "attention", &attention, py::arg("q"), py::arg("k") = py::none(), py::arg("v") = py::none(),
      py::kw_only(), py::arg("causal") = false, py::arg("scale") = py::none(),
      py::arg("kernel") = py::none(), py::arg("threads") = py::none(),
      py::arg("return_lse") = false, py::arg("kv_dtype") = py::none(),
      py::arg("cache") = py::none(),
      R"(O = softmax(Q K^T * scale) V for float32 arrays of shape (n, d), (h, n, d) or (b, h, n, d).

Args:
    q: float32 queries, C-contiguous, of shape (n, d), (h, n, d) or (b, h, n, d).
    k: float32 keys of q's rank and head dim, possibly fewer heads (grouped-query attention:
        query head h reads key/value head h // (q_heads // kv_heads)); None with cache.
    v: float32 values of k's shape; None with cache.
    causal: bottom-right causal mask (query i sees keys j <= i + kv_len - q_len).
    scale: multiplies every score, default 1/sqrt(d).
    kernel: a name from kernels(), default the first that runs here (with cache: the cache's).
    threads: worker threads, None for every core.
    return_lse: also return each query row's log-sum-exp of its scaled scores.
    kv_dtype: how the call stores K and V where the kernel reads them: "f32", "f16" or "bf16"
        (or np.float32, np.float16, ml_dtypes.bfloat16); default "f32", with cache the cache's.
        Inputs, outputs and every accumulation stay float32; a 16-bit type rounds K and V once.
    cache: an attnbench.KvCache holding K and V (then k and v are None): q's batch and head dim
        must be the cache's and its heads a multiple of the cache's kv_heads; kv_len is its length.

Returns:
    A new float32 array of q's shape; with return_lse=True the pair (O, LSE), LSE of q's shape
    without its last axis (-inf for a row that sees no key), what attention_backward() takes.

Raises:
    TypeError: an input not a float32 ndarray, k/v given with cache (or missing without), a bad
        kv_dtype or cache type. ValueError: shapes that do not fit, an unknown kernel or kv_dtype,
        negative threads. attnbench.Error (a ValueError): what the library rejects, e.g. a
        kv_dtype the kernel does not store, a K value f16 turns into an infinity, a kernel that
        cannot read the cache's layout.)");
  m.def("attention_backward", &attention_backward, py::arg("q"), py::arg("k"), py::arg("v"),
        py::arg("o"), py::arg("lse"), py::arg("d_o"), py::kw_only(), py::arg("causal") = false,
        py::arg("scale") = py::none(), py::arg("kernel") = py::none(),
        py::arg("threads") = py::none(),
        R"((dQ, dK, dV) of the loss whose gradient with respect to O is d_o.

Args:
    q, k, v: float32 arrays as given to attention() (K and V stored as f32).
    o, lse: the forward's output and log-sum-exp, as attention(..., return_lse=True) returned them.
    d_o: float32 gradient of the loss with respect to O, of q's shape.
    causal, scale: as given to attention().
    kernel: a name from kernels() whose has_backward is true, default the first available one.
    threads: worker threads, None for every core; the result is the same bit for bit for any.

Returns:
    Three new float32 arrays: dQ of q's shape, dK and dV of k's shape (under grouped-query
    attention a key/value head's gradient sums its query heads'). A row that sees no key has zero
    gradients.

Raises:
    TypeError, ValueError, attnbench.Error: as attention(), naming o, lse or d_o and its shape.)");
  m.def("kernels", &kernels,
        R"(Every registry kernel in priority order, as dicts.

Keys: name ("strategy/backend[/isa]"), strategy, backend, isa, available (runs on this CPU),
dispatches (picks its best ISA variant at run time), runs (the kernel it runs here), has_backward
(whether that one has a backward pass) and kv_dtypes (the K/V storage types it takes, a list of
"f32", "f16", "bf16").)");
}
