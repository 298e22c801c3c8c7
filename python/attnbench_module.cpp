// The extension module `attnbench._core` (re-exported by the package python/attnbench/):
// attention() and its backward pass on float32 NumPy arrays, the persistent KvCache, and the
// registry.
//
//   import attnbench, numpy as np
//   o = attnbench.attention(q, k, v, causal=False, window=None, scale=None, kernel=None,
//                           threads=None, kv_dtype=None)
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
#include "module_support.hpp"

namespace attnbench::python {

// O, or (O, LSE) with return_lse: LSE of Q's shape without its last axis. K and V from the arrays
// k and v, or from `cache` (then k and v are None).
py::object attention(const py::handle& q_arg, const py::handle& k_arg, const py::handle& v_arg,
                     const py::handle& causal, const py::handle& window,
                     const py::handle& alignment, std::optional<double> scale,
                     std::optional<double> softcap, const py::handle& alibi,
                     const std::optional<std::string>& kernel_name,
                     std::optional<long long> threads, bool return_lse,
                     const py::handle& kv_dtype_arg, const py::handle& cache_arg,
                     const py::handle& mask_arg, bool quantise_query, const py::handle& out_dtype) {
  const py::array q = float32_input(q_arg, "q");
  const bool bf16_out = bfloat16_output(out_dtype, "out_dtype");
  attnbench::Options options =
      options_of(causal, window, alignment, scale, softcap, alibi, threads);
  options.quantise_query = quantise_query;
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
  py::array mask_data;
  mask_option(mask_arg, shape, options, mask_data);
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
  const py::object o = bf16_out ? py::object(rounded_to_bfloat16(out)) : py::object(out);
  if (lse) return py::make_tuple(o, *lse);
  return o;
}

namespace {

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
                             const py::handle& lse_arg, const py::handle& d_o_arg,
                             const py::handle& causal, const py::handle& window,
                             const py::handle& alignment, std::optional<double> scale,
                             std::optional<double> softcap, const py::handle& alibi,
                             const std::optional<std::string>& kernel_name,
                             std::optional<long long> threads, const py::handle& mask_arg) {
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
  attnbench::Options options =
      options_of(causal, window, alignment, scale, softcap, alibi, threads);
  py::array mask_data;
  mask_option(mask_arg, shape, options, mask_data);
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
    entry["products"] = std::string(attnbench::to_string(k.products));
    entry["available"] = k.available();
    entry["dispatches"] = k.dispatches;
    entry["has_backward"] = k.has_backward();
    entry["runs"] = std::string(attnbench::resolve(k).name);
    py::list kv_dtypes;
    for (const attnbench::KvType type : attnbench::kAllKvTypes) {
      if (k.stores(type)) kv_dtypes.append(std::string(attnbench::to_string(type)));
    }
    entry["kv_dtypes"] = kv_dtypes;
    list.append(entry);
  }
  return list;
}

}  // namespace
}  // namespace attnbench::python

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

  using namespace attnbench::python;
  bind_kv_cache(m);

  m.def(
      "attention", &attention, py::arg("q"), py::arg("k") = py::none(), py::arg("v") = py::none(),
      py::kw_only(), py::arg("causal") = false, py::arg("window") = py::none(),
      py::arg("alignment") = py::none(), py::arg("scale") = py::none(),
      py::arg("softcap") = py::none(), py::arg("alibi_slopes") = py::none(),
      py::arg("kernel") = py::none(), py::arg("threads") = py::none(),
      py::arg("return_lse") = false, py::arg("kv_dtype") = py::none(),
      py::arg("cache") = py::none(), py::arg("mask") = py::none(),
      py::arg("quantise_query") = false, py::arg("out_dtype") = py::none(),
      R"(O = softmax(Q K^T * scale) V for float32 arrays of shape (n, d), (h, n, d) or (b, h, n, d).

Args:
    q: float32 queries, C-contiguous, of shape (n, d), (h, n, d) or (b, h, n, d); q, k and v
        may also be ml_dtypes.bfloat16 arrays, widened (exactly) to float32 copies first.
    k: float32 keys of q's rank and head dim, possibly fewer heads (grouped-query attention:
        query head h reads key/value head h // (q_heads // kv_heads)); None with cache.
    v: float32 values of k's shape; None with cache.
    causal: True for the causal mask (no key after a row's diagonal key), or the alignment's
        name: "bottom_right" (the default; row i's diagonal key is i + kv_len - q_len, as
        FlashAttention and a KV cache have it) or "top_left" (key i, PyTorch's is_causal).
    window: None; W, a sliding window (Mistral's, Gemma's): a row sees at most the W keys
        ending at its diagonal key; or (left, right), left as W (None: unbounded) and right the
        keys after the diagonal a non-causal row sees too (None: all).
    alignment: where the diagonal sits for causal and window, as causal's names (default
        "bottom_right").
    scale: multiplies every score, default 1/sqrt(d).
    softcap: logit soft-capping (Gemma 2): every scaled score s becomes softcap * tanh(s / softcap);
        None for none, else finite and above 0.
    alibi_slopes: ALiBi, one slope per query head (alibi_slopes(heads) gives the paper's): head h
        adds -slope[h] * |j - d(i)| to the score of row i and key j, d(i) its diagonal key.
    kernel: a name from kernels(), default the first that runs here (with cache: the cache's);
        "tiled/simd-bf16" computes with bfloat16 products (Q, K, V and the weights rounded to
        bfloat16 once, float32 accumulation), storing K and V as bf16.
    threads: worker threads, None for every core.
    return_lse: also return each query row's log-sum-exp of its scaled scores.
    kv_dtype: how the call stores K and V where the kernel reads them: "f32", "f16", "bf16"
        (or np.float32, np.float16, ml_dtypes.bfloat16), or ggml's block-quantised "q8_0" and
        "q4_0" (tiled/simd only); default "f32", with cache the cache's. Inputs, outputs and
        every accumulation stay float32; a narrower type rounds K and V once.
    cache: an attnbench.KvCache holding K and V (then k and v are None): q's batch and head dim
        must be the cache's and its heads a multiple of the cache's kv_heads; kv_len is its length.
    mask: a mask tensor, as PyTorch's attn_mask: bool (True: the key takes part) or float32
        (added to the scaled, soft-capped, ALiBi-biased score; -inf removes the key), of a shape
        that broadcasts to (batch, q_heads, q_len, kv_len) by NumPy's rules (a padding mask:
        (batch, 1, 1, kv_len)), its last axis kv_len. It applies within causal and window; a
        row it leaves no key is zero.
    quantise_query: with K stored as q8_0 or q4_0, quantise the query rows to q8_0 as well
        (ggml's way) and compute Q K^T on those values: integer dot products where the CPU has
        AVX-512 VNNI. q must then be finite.
    out_dtype: O's type: None or "f32" (np.float32) for float32, "bf16" (ml_dtypes.bfloat16) for
        bfloat16, rounded to nearest even from the float32 result.

Returns:
    A new float32 (or out_dtype) array of q's shape; with return_lse=True the pair (O, LSE), LSE of q's shape
    without its last axis (-inf for a row that sees no key), what attention_backward() takes.

Raises:
    TypeError: an input not a float32 ndarray, k/v given with cache (or missing without), a bad
        kv_dtype or cache type. ValueError: shapes that do not fit, an unknown kernel or kv_dtype,
        negative threads. attnbench.Error (a ValueError): what the library rejects, e.g. a
        kv_dtype the kernel does not store, a K value f16 turns into an infinity, a kernel that
        cannot read the cache's layout.)");
  m.def("attention_backward", &attention_backward, py::arg("q"), py::arg("k"), py::arg("v"),
        py::arg("o"), py::arg("lse"), py::arg("d_o"), py::kw_only(), py::arg("causal") = false,
        py::arg("window") = py::none(), py::arg("alignment") = py::none(),
        py::arg("scale") = py::none(), py::arg("softcap") = py::none(),
        py::arg("alibi_slopes") = py::none(), py::arg("kernel") = py::none(),
        py::arg("threads") = py::none(), py::arg("mask") = py::none(),
        R"((dQ, dK, dV) of the loss whose gradient with respect to O is d_o.

Args:
    q, k, v: float32 arrays as given to attention() (K and V stored as f32).
    o, lse: the forward's output and log-sum-exp, as attention(..., return_lse=True) returned them.
    d_o: float32 gradient of the loss with respect to O, of q's shape.
    causal, window, alignment, scale, softcap, alibi_slopes, mask: as given to attention().
    kernel: a name from kernels() whose has_backward is true, default the first available one.
    threads: worker threads, None for every core; the result is the same bit for bit for any.

Returns:
    Three new float32 arrays: dQ of q's shape, dK and dV of k's shape (under grouped-query
    attention a key/value head's gradient sums its query heads'). A row that sees no key has zero
    gradients.

Raises:
    TypeError, ValueError, attnbench.Error: as attention(), naming o, lse or d_o and its shape.)");
  m.def(
      "alibi_slopes", &attnbench::alibi_slopes, py::arg("heads"),
      R"(ALiBi's slopes for `heads` query heads as the paper (and BLOOM) define them: 2^(-8 (h + 1) / heads)
for a power of two, else those of the largest power of two below it followed by every other slope of
twice it. A list of floats, what attention(..., alibi_slopes=) takes.)");
  m.def("kernels", &kernels,
        R"(Every registry kernel in priority order, as dicts.

Keys: name ("strategy/backend[/isa]"), strategy, backend, isa, available (runs on this CPU),
dispatches (picks its best ISA variant at run time), runs (the kernel it runs here), has_backward
(whether that one has a backward pass) and kv_dtypes (the K/V storage types it takes, a list of
"f32", "f16", "bf16").)");
}
