// The contender list, the description's JSON, and the library's kernels as contenders.
#include "contender.hpp"

#include <oneapi/tbb/version.h>

namespace attnbench::bench {

namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A registry kernel through attention(): one Workspace per point, reused by every call.
class KernelContender : public Contender {
 public:
  explicit KernelContender(const Kernel& kernel) : kernel_(resolve(kernel)) {
    const bool blas = kernel_.backend == Backend::openblas;
    description_ = {
        .name = std::string(kernel_.name),
        .role = kernel_role(kernel_),
        .library = "attnbench",
        .version = "0.1",
        .threading = std::string("oneTBB ") + TBB_VERSION_STRING +
                     " task_arena of Options::threads" +
                     (blas ? "; OpenBLAS single-threaded inside each task" : ""),
        .fused = kernel_.strategy == Strategy::tiled,
        .how = blas ? "S = Q K^T and O = P V by cblas_sgemm in 48-row blocks; softmax with the "
                      "SIMD kernels' vector exp"
               : kernel_.strategy == Strategy::tiled
                   ? "online softmax over key blocks, register-blocked micro-kernels, "
                     "polynomial vector exp"
                   : "score matrix, three passes, register-blocked micro-kernels",
    };
  }
  const Description& describe() const override { return description_; }
  std::string unsupported(const ContenderPoint&) const override {
    return kernel_.available() ? "" : "unsupported: this CPU lacks the kernel's ISA";
  }
  void prepare(const ContenderPoint& point, const Tensors& io) override {
    shape_ = point.shape;
    options_ = {};
    options_.causal = point.causal;
    options_.threads = point.threads;
    io_ = io;
    // One Workspace for every point: the blocks of the largest point so far stay, touched, so a
    // point prepared again (interleaved repetitions) takes no page faults; its peak is this
    // point's.
    if (!ws_) ws_ = std::make_unique<Workspace>();
    ws_->reset_peak();
  }
  void run() override { attention(kernel_, shape_, options_, io_, *ws_); }
  std::size_t scratch_bytes() const override { return ws_ ? ws_->peak_bytes() : 0; }
  void release() override { ws_.reset(); }

 private:
  const Kernel& kernel_;
  Description description_;
  Shape shape_;
  Options options_;
  Tensors io_;
  std::unique_ptr<Workspace> ws_;
};

}  // namespace

const char* kernel_role(const Kernel& kernel) {
  return kernel.backend == Backend::openblas ? "baseline" : "attnbench";
}

std::string Description::json() const {
  return "{\"role\": " + quoted(role) + ", \"library\": " + quoted(library) +
         ", \"version\": " + quoted(version) + ", \"threading\": " + quoted(threading) +
         ", \"fused\": " + (fused ? "true" : "false") + ", \"how\": " + quoted(how) + "}";
}

std::optional<ContenderPreset> contender_preset(const std::string& name, std::size_t all_threads) {
  // quick (CI): every contender at a few points, one of them causal; standard: the lengths the
  // study's comparison is read at (1024, 4096, 16384); full: n 128 to 16384. Decode lengths from
  // one inside an L2 of 1 MiB or more to beyond any L3 (Llama layer at 65536 keys: 256 MiB).
  std::vector<std::size_t> lengths, dims, causal_lengths;
  ContenderPreset preset;
  if (name == "quick") {
    lengths = {256, 1024};
    dims = {64};
    causal_lengths = {512};
    preset.repetitions = 3;
    preset.min_time = 0.05;
    preset.budget_seconds = 0.5;
    preset.training_lengths = {256};
    preset.decode_lengths = {1024};
    preset.prefill_lengths = {256};
  } else if (name == "standard") {
    lengths = {1024, 4096, 16384};
    dims = {64, 128};
    causal_lengths = {4096};
    preset.repetitions = 3;
    preset.min_time = 0.1;
    preset.budget_seconds = 6.0;
    preset.training_lengths = {1024, 4096};
    preset.decode_lengths = {4096, 65536};
    preset.prefill_lengths = {2048};
  } else if (name == "full") {
    lengths = {128, 256, 512, 1024, 2048, 4096, 8192, 16384};
    dims = {64, 128};
    causal_lengths = {1024, 4096};
    preset.repetitions = 3;
    preset.min_time = 0.1;
    preset.budget_seconds = 6.0;
    preset.training_lengths = {1024, 4096, 16384};
    preset.decode_lengths = {4096, 16384, 65536, 131072};
    preset.prefill_lengths = {1024, 4096};
  } else {
    return std::nullopt;
  }
  std::vector<std::size_t> threads{1};
  if (all_threads > 1) threads.push_back(all_threads);
  for (std::size_t d : dims) {
    for (std::size_t n : lengths) {
      for (std::size_t t : threads) preset.points.push_back({{1, 1, 1, n, n, d}, false, t});
    }
  }
  for (std::size_t n : causal_lengths) {  // causal at d = 128, as in the matrix
    for (std::size_t t : threads) preset.points.push_back({{1, 1, 1, n, n, 128}, true, t});
  }
  return preset;
}

std::string point_name(const std::string& contender, const ContenderPoint& p) {
  return contender + "/n:" + std::to_string(p.shape.q_len) +
         "/d:" + std::to_string(p.shape.head_dim) + "/threads:" + std::to_string(p.threads) +
         "/causal:" + std::to_string(int(p.causal));
}

std::unique_ptr<Contender> kernel_contender(const Kernel& kernel) {
  return std::make_unique<KernelContender>(kernel);
}

std::vector<std::unique_ptr<Contender>> contenders() {
  std::vector<std::unique_ptr<Contender>> list;
  const Kernel& tiled = resolve(*find_kernel("tiled/simd"));
  list.push_back(kernel_contender(tiled));
  for (const Kernel& k : registry()) {  // the target ISA's tiled kernel, beside the dispatched one
    if (k.strategy == Strategy::tiled && k.backend == Backend::simd && k.isa == Isa::avx2 &&
        &k != &tiled && k.available()) {
      list.push_back(kernel_contender(k));
    }
  }
  for (const Kernel& k : registry()) {
    if (k.backend == Backend::openblas) list.push_back(kernel_contender(k));
  }
  list.push_back(onednn_contender());
  return list;
}

}  // namespace attnbench::bench
