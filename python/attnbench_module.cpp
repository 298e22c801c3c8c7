// The Python module `attnbench`: attention() and its backward pass on float32 NumPy arrays, and
// the registry.
//
//   import attnbench, numpy as np
//   o = attnbench.attention(q, k, v, causal=False, scale=None, kernel=None, threads=None)
//   o, lse = attnbench.attention(q, k, v, return_lse=True)
//   dq, dk, dv = attnbench.attention_backward(q, k, v, o, lse, d_o)
//
// Q of shape (n, d), (h, n, d) or (b, h, n, d); K and V of Q's rank, possibly with fewer heads
// (grouped-query attention). Inputs are read where they are (C-contiguous float32, no copy) and the
// GIL is released while the kernels run. Every error is a ValueError or TypeError that names the
// argument; the library's own Error keeps its message (field and value) as attnbench.Error, a
// ValueError.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "attnbench.hpp"

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

attnbench::Shape shape_of(const py::array& q, const py::array& k, const py::array& v) {
  if (k.ndim() != q.ndim() || v.ndim() != q.ndim()) {
    bad_value("k, v: shapes " + shape_string(k) + ", " + shape_string(v) +
              " must have the rank of q " + shape_string(q));
  }
  for (py::ssize_t i = 0; i < k.ndim(); ++i) {
    if (k.shape(i) != v.shape(i)) {
      bad_value("v: shape " + shape_string(v) + " must equal k's " + shape_string(k));
    }
  }
  const Dims dq = dims_of(q), dk = dims_of(k);
  if (dq.batch != dk.batch) {
    bad_value("k: batch " + std::to_string(dk.batch) + " must equal q's " +
              std::to_string(dq.batch));
  }
  if (dq.dim != dk.dim) {
    bad_value("k: head dim " + std::to_string(dk.dim) + " must equal q's " +
              std::to_string(dq.dim));
  }
  // Heads, lengths and sizes are the library's to check (attnbench.Error names the field).
  return attnbench::Shape{dq.batch, dq.heads, dk.heads, dq.len, dk.len, dq.dim};
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

// O, or (O, LSE) with return_lse: LSE of Q's shape without its last axis.
py::object attention(const py::handle& q_arg, const py::handle& k_arg, const py::handle& v_arg,
                     bool causal, std::optional<double> scale,
                     const std::optional<std::string>& kernel_name,
                     std::optional<long long> threads, bool return_lse) {
  const py::array q = float32_input(q_arg, "q");
  const py::array k = float32_input(k_arg, "k");
  const py::array v = float32_input(v_arg, "v");
  const attnbench::Shape shape = shape_of(q, k, v);
  const attnbench::Kernel& kernel = kernel_named(kernel_name);
  const attnbench::Options options = options_of(causal, scale, threads);
  // Validate before allocating the output, so a huge or empty shape fails with its field, not
  // with a MemoryError.
  float placeholder = 0.0f;  // a distinct output address for validation only
  attnbench::validate(attnbench::resolve(kernel), shape, options,
                      attnbench::Tensors{floats(q), floats(k), floats(v), &placeholder});
  const std::vector<py::ssize_t> q_shape = shape_vector(q);
  py::array_t<float> out(q_shape);
  std::optional<py::array_t<float>> lse;
  if (return_lse) lse.emplace(std::vector<py::ssize_t>(q_shape.begin(), q_shape.end() - 1));
  const attnbench::Tensors tensors{floats(q), floats(k), floats(v), out.mutable_data(),
                                   lse ? lse->mutable_data() : nullptr};
  {
    py::gil_scoped_release unlocked;
    attnbench::attention(kernel, shape, options, tensors, thread_workspace());
  }
  if (lse) return py::make_tuple(out, *lse);
  return out;
}

// `kernel`, or by default the first available kernel of the registry that has a backward pass.
const attnbench::Kernel& backward_kernel_named(const std::optional<std::string>& name) {
  if (!name) {
    for (const attnbench::Kernel& k : attnbench::registry()) {
      if (k.available() && k.has_backward()) return k;
    }
    bad_value("kernel: no kernel available on this CPU has a backward pass");
  }
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
    list.append(entry);
  }
  return list;
}

}  // namespace

PYBIND11_MODULE(attnbench, m) {
  m.doc() = "attnbench: scaled dot-product attention on the CPU, O = softmax(Q K^T * scale) V";
  py::register_exception<attnbench::Error>(m, "Error", PyExc_ValueError);
  m.def(
      "attention", &attention, py::arg("q"), py::arg("k"), py::arg("v"), py::kw_only(),
      py::arg("causal") = false, py::arg("scale") = py::none(), py::arg("kernel") = py::none(),
      py::arg("threads") = py::none(), py::arg("return_lse") = false,
      R"(O = softmax(Q K^T * scale) V for float32 arrays of shape (n, d), (h, n, d) or (b, h, n, d).

K and V have Q's rank and may have fewer heads (grouped-query attention: query head h reads
key/value head h // (q_heads // kv_heads)). causal: bottom-right causal mask. scale: default
1/sqrt(d). kernel: a name from kernels(), default the first that runs here. threads: worker
threads, None for every core. Returns a new float32 array of Q's shape; with return_lse=True
the pair (O, LSE), LSE of Q's shape without its last axis: each query row's log-sum-exp of its
scaled scores (-inf for a row that sees no key), what attention_backward() takes.)");
  m.def("attention_backward", &attention_backward, py::arg("q"), py::arg("k"), py::arg("v"),
        py::arg("o"), py::arg("lse"), py::arg("d_o"), py::kw_only(), py::arg("causal") = false,
        py::arg("scale") = py::none(), py::arg("kernel") = py::none(),
        py::arg("threads") = py::none(),
        R"((dQ, dK, dV) of the loss whose gradient with respect to O is d_o.

q, k, v, causal and scale as given to attention(); o and lse as it returned them with
return_lse=True; d_o of Q's shape. dK and dV have K's shape: under grouped-query attention a
key/value head's gradient sums its query heads'. A row that sees no key has zero gradients.
kernel: a name from kernels() whose has_backward is true, default the first available one.
The result is the same, bit for bit, for every thread count. Returns three new float32 arrays.)");
  m.def("kernels", &kernels,
        "Every registry kernel in priority order: name, strategy, backend, isa, available, "
        "dispatches, the kernel it runs here and has_backward (whether that one has a backward "
        "pass).");
}
