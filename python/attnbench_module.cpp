// The Python module `attnbench`: attention() on float32 NumPy arrays, and the registry.
//
//   import attnbench, numpy as np
//   o = attnbench.attention(q, k, v, causal=False, scale=None, kernel=None, threads=None)
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

// "(2, 3)", as NumPy prints a shape.
std::string shape_string(const py::array& a) {
  return py::str(py::tuple(py::cast(std::vector<py::ssize_t>(a.shape(), a.shape() + a.ndim()))));
}

// `arg` as a C-contiguous float32 array of rank 2 to 4, without copying it.
py::array float32_input(const py::handle& arg, const char* name) {
  if (!py::isinstance<py::array>(arg)) {
    throw py::type_error(std::string(name) + ": expected a numpy.ndarray of float32, got " +
                         std::string(py::str(py::type::of(arg).attr("__name__"))));
  }
  auto a = py::reinterpret_borrow<py::array>(arg);
  if (!a.dtype().is(py::dtype::of<float>())) {
    throw py::type_error(std::string(name) + ": dtype " + std::string(py::str(a.dtype())) +
                         ", expected float32 (convert with " + name + ".astype(np.float32))");
  }
  if (a.ndim() < 2 || a.ndim() > 4) {
    bad_value(std::string(name) + ": shape " + shape_string(a) + " has rank " +
              std::to_string(a.ndim()) + ", expected (n, d), (h, n, d) or (b, h, n, d)");
  }
  if (!(a.flags() & py::array::c_style)) {
    bad_value(std::string(name) + ": not C-contiguous (strides " +
              std::string(py::str(py::tuple(
                  py::cast(std::vector<py::ssize_t>(a.strides(), a.strides() + a.ndim()))))) +
              "); pass np.ascontiguousarray(" + name + ")");
  }
  return a;
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

py::array_t<float> attention(const py::handle& q_arg, const py::handle& k_arg,
                             const py::handle& v_arg, bool causal, std::optional<double> scale,
                             const std::optional<std::string>& kernel_name,
                             std::optional<long long> threads) {
  const py::array q = float32_input(q_arg, "q");
  const py::array k = float32_input(k_arg, "k");
  const py::array v = float32_input(v_arg, "v");
  const attnbench::Shape shape = shape_of(q, k, v);
  const attnbench::Kernel& kernel = kernel_named(kernel_name);
  attnbench::Options options;
  options.causal = causal;
  if (scale) options.scale = static_cast<float>(*scale);
  if (threads && *threads < 0) bad_value("threads: " + std::to_string(*threads) + " must be >= 0");
  options.threads = threads ? static_cast<std::size_t>(*threads) : 0;  // None: every core
  // Validate before allocating the output, so a huge or empty shape fails with its field, not
  // with a MemoryError.
  const float* in[] = {static_cast<const float*>(q.data()), static_cast<const float*>(k.data()),
                       static_cast<const float*>(v.data())};
  float placeholder = 0.0f;  // a distinct output address for validation only
  attnbench::validate(attnbench::resolve(kernel), shape, options,
                      attnbench::Tensors{in[0], in[1], in[2], &placeholder});
  py::array_t<float> out(std::vector<py::ssize_t>(q.shape(), q.shape() + q.ndim()));
  const attnbench::Tensors tensors{in[0], in[1], in[2], out.mutable_data()};
  {
    py::gil_scoped_release unlocked;
    attnbench::attention(kernel, shape, options, tensors, thread_workspace());
  }
  return out;
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
      py::arg("threads") = py::none(),
      R"(O = softmax(Q K^T * scale) V for float32 arrays of shape (n, d), (h, n, d) or (b, h, n, d).

K and V have Q's rank and may have fewer heads (grouped-query attention: query head h reads
key/value head h // (q_heads // kv_heads)). causal: bottom-right causal mask. scale: default
1/sqrt(d). kernel: a name from kernels(), default the first that runs here. threads: worker
threads, None for every core. Returns a new float32 array of Q's shape.)");
  m.def("kernels", &kernels,
        "Every registry kernel in priority order: name, strategy, backend, isa, available, "
        "dispatches and the kernel it runs here.");
}
