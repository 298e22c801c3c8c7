// What the extension module's two files share (attnbench_module.cpp: attention() and the
// registry; kv_cache_binding.cpp: the KvCache class): NumPy arrays checked and read as the
// library's tensors, argument errors naming the argument, the library's field names renamed to the
// Python arguments, and the KvCache as Python holds it.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
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

namespace attnbench::python {

[[noreturn]] inline void bad_value(const std::string& message) { throw py::value_error(message); }

inline std::vector<py::ssize_t> shape_vector(const py::array& a) {
  return std::vector<py::ssize_t>(a.shape(), a.shape() + a.ndim());
}

// "(2, 3)", as NumPy prints a shape.
inline std::string shape_string(const py::array& a) {
  return py::str(py::tuple(py::cast(shape_vector(a))));
}

// `arg` as a C-contiguous float32 array, without copying it.
inline py::array float32_array(const py::handle& arg, const char* name) {
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

// Is `arg` an array of ml_dtypes.bfloat16 (how NumPy users hold bfloat16, as JAX does)?
inline bool is_bfloat16_array(const py::handle& arg) {
  if (!py::isinstance<py::array>(arg)) return false;
  const py::dtype dtype = py::reinterpret_borrow<py::array>(arg).dtype();
  return dtype.itemsize() == 2 && std::string(py::str(dtype)) == "bfloat16";
}

// `arg` as a C-contiguous float32 array of rank 2 to 4, without copying it; an
// ml_dtypes.bfloat16 array is widened to a float32 copy first (exactly: every bfloat16 is a
// float32).
inline py::array float32_input(const py::handle& arg, const char* name) {
  if (is_bfloat16_array(arg)) {
    const py::object widened = py::reinterpret_borrow<py::object>(arg).attr("astype")(
        py::dtype::of<float>(), py::arg("order") = "C");
    return float32_input(widened, name);
  }
  py::array a = float32_array(arg, name);
  if (a.ndim() < 2 || a.ndim() > 4) {
    bad_value(std::string(name) + ": shape " + shape_string(a) + " has rank " +
              std::to_string(a.ndim()) + ", expected (n, d), (h, n, d) or (b, h, n, d)");
  }
  return a;
}

// `a`'s shape must be `want`, the shape of `other`'s (or, for LSE, of its rows).
inline void require_shape(const py::array& a, const char* name,
                          const std::vector<py::ssize_t>& want, const std::string& what) {
  if (shape_vector(a) != want) {
    bad_value(std::string(name) + ": shape " + shape_string(a) + " must equal " + what + " " +
              std::string(py::str(py::tuple(py::cast(want)))));
  }
}

// (batch, heads, length, head_dim) of a rank-2..4 array.
struct Dims {
  std::size_t batch = 1, heads = 1, len = 0, dim = 0;
};
inline Dims dims_of(const py::array& a) {
  const auto n = static_cast<std::size_t>(a.ndim());
  Dims d;
  d.dim = static_cast<std::size_t>(a.shape(n - 1));
  d.len = static_cast<std::size_t>(a.shape(n - 2));
  if (n >= 3) d.heads = static_cast<std::size_t>(a.shape(n - 3));
  if (n == 4) d.batch = static_cast<std::size_t>(a.shape(0));
  return d;
}

inline std::vector<std::size_t> dims_vector(const py::array& a) {
  return std::vector<std::size_t>(a.shape(), a.shape() + a.ndim());
}

// The library's shape_from_dims, as the CLI uses it: attnbench.Error naming q, k or v.
inline attnbench::Shape shape_of(const py::array& q, const py::array& k, const py::array& v) {
  return attnbench::shape_from_dims(dims_vector(q), dims_vector(k), dims_vector(v));
}

inline const attnbench::Kernel& kernel_named(const std::optional<std::string>& name) {
  if (!name) return attnbench::default_kernel();
  if (const attnbench::Kernel* k = attnbench::find_kernel(*name)) return *k;
  bad_value("kernel: '" + *name + "' is no registry kernel (attnbench.kernels() lists them)");
}

// One workspace per Python thread, kept between calls as a benchmark loop keeps it: a repeated
// call of a shape reuses its scratch and pays no page faults (released at thread exit).
inline attnbench::Workspace& thread_workspace() {
  thread_local attnbench::Workspace ws;
  return ws;
}

// A window side: None, or an integer (Python's or NumPy's, not a bool) of at least `least`.
inline std::optional<std::size_t> window_side(const py::handle& x, const std::string& field,
                                              long long least) {
  if (x.is_none()) return std::nullopt;
  if (py::isinstance<py::bool_>(x) || !PyIndex_Check(x.ptr())) {
    throw py::type_error(field + ": expected an int or None, got " +
                         std::string(py::str(py::type::of(x).attr("__name__"))));
  }
  const long long w = x.cast<long long>();
  if (w < least) {
    bad_value(field + ": " + std::to_string(w) + " must be at least " + std::to_string(least) +
              (least == 1 ? " (a window holds its diagonal key; None for no window)" : ""));
  }
  return static_cast<std::size_t>(w);
}

// The mask keywords: causal (a bool, or the alignment's name "bottom_right" / "top_left", which
// means causal with it), window (None, W: the last W keys up to a row's diagonal key, or a pair
// (left, right), either None) and alignment (None: bottom_right, or as causal's names).
inline void mask_options(const py::handle& causal, const py::handle& window,
                         const py::handle& alignment, attnbench::Options& options) {
  auto alignment_named = [](const py::handle& x, const char* field) {
    if (!py::isinstance<py::str>(x)) {
      throw py::type_error(std::string(field) + ": expected " +
                           (std::string(field) == "causal" ? "a bool or " : "None or ") +
                           "'bottom_right' or 'top_left', got " +
                           std::string(py::str(py::type::of(x).attr("__name__"))));
    }
    const std::string name = x.cast<std::string>();
    const auto a = attnbench::alignment_from_string(name);
    if (!a) bad_value(std::string(field) + ": '" + name + "' must be 'bottom_right' or 'top_left'");
    return *a;
  };
  std::optional<attnbench::Alignment> from_causal;
  if (py::isinstance<py::bool_>(causal)) {
    options.causal = causal.cast<bool>();
  } else {
    from_causal = alignment_named(causal, "causal");
    options.causal = true;
  }
  if (!alignment.is_none()) {
    options.alignment = alignment_named(alignment, "alignment");
    if (from_causal && *from_causal != options.alignment) {
      bad_value("alignment: '" + std::string(to_string(options.alignment)) +
                "' contradicts causal='" + std::string(to_string(*from_causal)) + "'");
    }
  } else if (from_causal) {
    options.alignment = *from_causal;
  }
  if (window.is_none()) return;
  if (py::isinstance<py::tuple>(window) || py::isinstance<py::list>(window)) {
    const py::sequence pair = window.cast<py::sequence>();
    if (pair.size() != 2) {
      bad_value("window: a sequence of " + std::to_string(pair.size()) +
                " items; expected W or (left, right)");
    }
    options.window_left = window_side(pair[0], "window[0] (left)", 1);
    options.window_right = window_side(pair[1], "window[1] (right)", 0);
  } else {
    options.window_left = window_side(window, "window", 1);
  }
  if (options.causal && options.window_right) {
    bad_value("window: a right side of " + std::to_string(*options.window_right) +
              " with causal, which sees no key after the diagonal");
  }
}

inline attnbench::Options options_of(const py::handle& causal, const py::handle& window,
                                     const py::handle& alignment, std::optional<double> scale,
                                     std::optional<double> softcap, const py::handle& alibi,
                                     std::optional<long long> threads) {
  attnbench::Options options;
  mask_options(causal, window, alignment, options);
  if (scale) options.scale = static_cast<float>(*scale);
  if (softcap) options.softcap = static_cast<float>(*softcap);
  if (!alibi.is_none()) {  // a sequence of floats, one per query head (the library checks both)
    if (py::isinstance<py::str>(alibi) || !py::isinstance<py::sequence>(alibi)) {
      if (!py::isinstance<py::array>(alibi)) {
        throw py::type_error(
            "alibi_slopes: expected a sequence of floats (one per query head), got " +
            std::string(py::str(py::type::of(alibi).attr("__name__"))));
      }
    }
    const py::array_t<double, py::array::c_style | py::array::forcecast> slopes =
        py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(alibi);
    if (!slopes || slopes.ndim() != 1) {
      bad_value("alibi_slopes: expected one dimension of floats, one per query head");
    }
    for (py::ssize_t h = 0; h < slopes.shape(0); ++h) {
      options.alibi_slopes.push_back(static_cast<float>(slopes.at(h)));
    }
  }
  if (threads && *threads < 0) bad_value("threads: " + std::to_string(*threads) + " must be >= 0");
  options.threads = threads ? static_cast<std::size_t>(*threads) : 0;  // None: every core
  return options;
}

inline const float* floats(const py::array& a) { return static_cast<const float*>(a.data()); }

// mask=: None, or a bool array (True: the key takes part) or a float32 one (added to the score)
// that broadcasts to (batch, q_heads, q_len, kv_len) by NumPy's rules, its last axis kv_len: into
// options.mask, `held` keeping its (C-contiguous) data alive for the call.
inline void mask_option(const py::handle& arg, const attnbench::Shape& shape,
                        attnbench::Options& options, py::array& held) {
  if (arg.is_none()) return;
  if (!py::isinstance<py::array>(arg)) {
    throw py::type_error("mask: expected a bool or float32 ndarray, got " +
                         std::string(py::str(py::type::of(arg).attr("__name__"))));
  }
  const py::array a = py::reinterpret_borrow<py::array>(arg);
  const char kind = a.dtype().kind();
  const bool boolean = kind == 'b', additive = a.dtype().is(py::dtype::of<float>());
  if (!boolean && !additive) {
    throw py::type_error("mask: dtype " + std::string(py::str(a.dtype())) +
                         ", expected bool (True: the key takes part) or float32 (added to the "
                         "score) in native byte order");
  }
  const std::size_t full[4] = {shape.batch, shape.q_heads, shape.q_len, shape.kv_len};
  const std::string target = "(" + std::to_string(full[0]) + ", " + std::to_string(full[1]) + ", " +
                             std::to_string(full[2]) + ", " + std::to_string(full[3]) + ")";
  if (a.ndim() < 1 || a.ndim() > 4) {
    bad_value("mask: shape " + shape_string(a) + " has rank " + std::to_string(a.ndim()) +
              ", expected 1 to 4 axes that broadcast to " + target);
  }
  std::array<std::size_t, 4> sizes{1, 1, 1, 1};
  for (py::ssize_t x = 0; x < a.ndim(); ++x) {
    sizes[4 - a.ndim() + x] = static_cast<std::size_t>(a.shape(x));
  }
  for (std::size_t x = 0; x < 4; ++x) {
    if (sizes[x] != full[x] && (x == 3 || sizes[x] != 1)) {
      bad_value("mask: shape " + shape_string(a) + " does not broadcast to (batch, q_heads, " +
                "q_len, kv_len) = " + target + (x == 3 ? ": its last axis must be kv_len" : ""));
    }
  }
  held = py::array::ensure(a, py::array::c_style);
  options.mask.sizes = sizes;
  if (boolean) {
    options.mask.keep = static_cast<const std::uint8_t*>(held.data());
  } else {
    options.mask.bias = static_cast<const float*>(held.data());
  }
}

inline std::string type_name(const py::handle& arg) {
  return py::str(py::type::of(arg).attr("__name__"));
}

// A type argument's text: a string as it is, a NumPy dtype or scalar type by its dtype's name
// ("float32", "bfloat16"), anything else "" (the caller reports it).
inline std::string type_text(const py::handle& arg) {
  if (py::isinstance<py::str>(arg)) return arg.cast<std::string>();
  if (py::isinstance<py::dtype>(arg) || PyType_Check(arg.ptr())) {
    try {
      return py::str(py::dtype::from_args(py::reinterpret_borrow<py::object>(arg)).attr("name"));
    } catch (const py::error_already_set&) {
      return "";  // not a NumPy type
    }
  }
  return "";
}

// A K/V storage type given as "f32", "f16", "bf16", "q8_0", "q4_0", or as a NumPy dtype or scalar
// type of float32, float16 or bfloat16 (np.float16, ml_dtypes.bfloat16, np.dtype("float32")).
inline attnbench::KvType kv_type_of(const py::handle& arg, const char* name) {
  std::string text = type_text(arg);
  if (text.empty()) {
    throw py::type_error(std::string(name) +
                         ": expected 'f32', 'f16', 'bf16', 'q8_0' or 'q4_0', got " +
                         std::string(py::repr(arg)) + " (" + type_name(arg) + ")");
  }
  static const std::pair<std::string_view, std::string_view> numpy_names[] = {
      {"float32", "f32"}, {"float16", "f16"}, {"bfloat16", "bf16"}};
  for (const auto& [numpy_name, short_name] : numpy_names) {
    if (text == numpy_name) text = short_name;
  }
  if (const auto type = attnbench::kv_type_from_string(text)) return *type;
  bad_value(std::string(name) + ": '" + text + "' is no K/V storage type, expected 'f32', 'f16', " +
            "'bf16', 'q8_0' or 'q4_0'");
}

// The output's type: None, "f32" or np.float32 for float32 (false), "bf16" or ml_dtypes.bfloat16
// for bfloat16 (true).
inline bool bfloat16_output(const py::handle& arg, const char* name) {
  if (arg.is_none()) return false;
  const std::string text = type_text(arg);
  if (text == "f32" || text == "float32") return false;
  if (text == "bf16" || text == "bfloat16") return true;
  if (text.empty()) {
    throw py::type_error(std::string(name) + ": expected 'f32' or 'bf16', got " +
                         std::string(py::repr(arg)) + " (" + type_name(arg) + ")");
  }
  bad_value(std::string(name) + ": '" + text + "', expected 'f32' or 'bf16'");
}

// A float32 array rounded to a new ml_dtypes.bfloat16 array of its shape (to nearest even, NaN
// kept), as the C++ API's Bf16Tensors::o.
inline py::array rounded_to_bfloat16(const py::array_t<float>& a) {
  const py::object bfloat16 = py::module_::import("ml_dtypes").attr("bfloat16");
  py::array out(py::dtype::from_args(bfloat16),
                std::vector<py::ssize_t>(a.shape(), a.shape() + a.ndim()));
  auto* bits = static_cast<std::uint16_t*>(out.mutable_data());
  const float* x = a.data();
  for (py::ssize_t i = 0; i < a.size(); ++i) bits[i] = attnbench::float_to_bf16(x[i]);
  return out;
}

// A count argument as a size: Error (field and value) when it is below `least`.
inline std::size_t count_of(long long value, const char* name, long long least) {
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
inline constexpr Rename kCallRenames[] = {{"tensors.k", "k"},
                                          {"tensors.v", "v"},
                                          {"tensors.kv_cache", "cache"},
                                          {"options.kv_type", "kv_dtype"},
                                          {"options.quantise_query", "quantise_query"}};

// Q's batch, heads and head dim against the cache's (the library would name shape fields).
inline attnbench::Shape shape_on_cache(const py::array& q, const attnbench::KvCache& cache) {
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

// attention(q, ..., cache=): in attnbench_module.cpp.
py::object attention(const py::handle& q_arg, const py::handle& k_arg, const py::handle& v_arg,
                     const py::handle& causal, const py::handle& window,
                     const py::handle& alignment, std::optional<double> scale,
                     std::optional<double> softcap, const py::handle& alibi,
                     const std::optional<std::string>& kernel_name,
                     std::optional<long long> threads, bool return_lse,
                     const py::handle& kv_dtype_arg, const py::handle& cache_arg,
                     const py::handle& mask_arg, bool quantise_query, const py::handle& out_dtype);
// The class KvCache: in kv_cache_binding.cpp.
void bind_kv_cache(py::module_& m);

}  // namespace attnbench::python
