// oneDNN 2.6 (Debian libdnnl-dev) as its users write attention with it: three primitives.
//   S = scale * Q K^T   matmul, K^T as a transposed memory descriptor over row-major K (format
//                       tag ba: no copy), the scale as the output scale; causal: a binary-add
//                       post-op of a 0 / -inf mask, as an additive attention mask is written
//   P = softmax(S)      softmax primitive over the key axis, in place
//   O = P V             matmul
// Primitives are created in prepare(), outside the timed call, and the first execute (which
// carries one-time set-up) is the harness's warm-up. Threads: oneDNN's OpenMP runtime, the count
// set by omp_set_num_threads before each call.
#include <omp.h>

#include <limits>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <vector>

#include "contender.hpp"

namespace attnbench::bench {

namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

class OnednnContender : public Contender {
 public:
  OnednnContender() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    const dnnl_version_t* v = dnnl_version();
    description_ = {
        .name = "onednn/primitives",
        .role = "peer",
        .library = "oneDNN",
        .version = std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                   std::to_string(v->patch),
        .threading = "OpenMP (libgomp), omp_set_num_threads",
        .fused = false,
        .how = "matmul (K^T as a ba descriptor, output scale), softmax in place, matmul",
    };
    // Which implementations oneDNN dispatches to on this CPU, from a probe shape (1024 x 64).
    const memory::desc q_md({1, 1024, 64}, dt::f32, tag::abc),
        kt_md({1, 64, 1024}, dt::f32, tag::acb), s_md({1, 1024, 1024}, dt::f32, tag::abc);
    const dnnl::matmul::primitive_desc qk_pd({q_md, kt_md, s_md}, engine_);
    const dnnl::softmax_forward::primitive_desc softmax_pd(
        {dnnl::prop_kind::forward_inference, s_md, 2}, engine_);
    description_.how += std::string("; implementations at n = 1024, d = 64: ") +
                        qk_pd.impl_info_str() + ", " + softmax_pd.impl_info_str();
  }
  const Description& describe() const override { return description_; }
  std::string unsupported(const ContenderPoint& p) const override {
    if (p.shape.q_heads != p.shape.kv_heads) return "unsupported: grouped-query heads";
    if (p.causal && p.shape.batch * p.shape.q_heads != 1) {
      return "unsupported: causal mask over several heads (one mask per call here)";
    }
    return "";
  }
  void prepare(const ContenderPoint& p, const Tensors& io) override {
    // The score and mask buffers keep the capacity of the largest point so far (touched once),
    // as the kernels' Workspace does, so a point prepared again takes no page faults.
    threads_ = static_cast<int>(p.threads);
    const memory::dim heads = memory::dim(p.shape.batch * p.shape.q_heads);
    const memory::dim nq = memory::dim(p.shape.q_len), nk = memory::dim(p.shape.kv_len),
                      d = memory::dim(p.shape.head_dim);
    const memory::desc q_md({heads, nq, d}, dt::f32, tag::abc);
    const memory::desc kt_md({heads, d, nk}, dt::f32, tag::acb);  // row-major K read as K^T
    const memory::desc s_md({heads, nq, nk}, dt::f32, tag::abc);
    const memory::desc v_md({heads, nk, d}, dt::f32, tag::abc);
    const memory::desc o_md({heads, nq, d}, dt::f32, tag::abc);

    Options options;
    options.causal = p.causal;
    dnnl::primitive_attr attr;
    attr.set_output_scales(0, {effective_scale(p.shape, options)});
    if (p.causal) {  // mask[i][j] = 0 where query i sees key j, -inf elsewhere
      mask_.assign(std::size_t(nq * nk), 0.0f);  // (only causal points carry a mask)
      for (std::size_t i = 0; i < p.shape.q_len; ++i) {
        for (std::size_t j = visible_keys(p.shape, options, i).end; j < p.shape.kv_len; ++j) {
          mask_[i * p.shape.kv_len + j] = -std::numeric_limits<float>::infinity();
        }
      }
      dnnl::post_ops ops;
      ops.append_binary(dnnl::algorithm::binary_add, s_md);
      attr.set_post_ops(ops);
    }
    scores_.resize(std::size_t(heads * nq * nk));
    const dnnl::matmul::primitive_desc qk_pd({q_md, kt_md, s_md}, attr, engine_);
    const dnnl::softmax_forward::primitive_desc softmax_pd(
        {dnnl::prop_kind::forward_inference, s_md, 2}, engine_);
    const dnnl::matmul::primitive_desc pv_pd({s_md, v_md, o_md}, engine_);
    qk_ = dnnl::matmul(qk_pd);
    softmax_ = dnnl::softmax_forward(softmax_pd);
    pv_ = dnnl::matmul(pv_pd);
    q_ = memory(q_md, engine_, const_cast<float*>(io.q));
    kt_ = memory(kt_md, engine_, const_cast<float*>(io.k));
    v_ = memory(v_md, engine_, const_cast<float*>(io.v));
    o_ = memory(o_md, engine_, io.o);
    s_ = memory(s_md, engine_, scores_.data());
    if (p.causal) {
      mask_mem_ = memory(s_md, engine_, mask_.data());
    } else {
      mask_.clear();
    }
  }
  void run() override {
    omp_set_num_threads(threads_);
    std::unordered_map<int, memory> qk_args{
        {DNNL_ARG_SRC, q_}, {DNNL_ARG_WEIGHTS, kt_}, {DNNL_ARG_DST, s_}};
    if (!mask_.empty()) qk_args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] = mask_mem_;
    qk_.execute(stream_, qk_args);
    softmax_.execute(stream_, {{DNNL_ARG_SRC, s_}, {DNNL_ARG_DST, s_}});
    pv_.execute(stream_, {{DNNL_ARG_SRC, s_}, {DNNL_ARG_WEIGHTS, v_}, {DNNL_ARG_DST, o_}});
    stream_.wait();
  }
  std::size_t scratch_bytes() const override {
    return (scores_.size() + mask_.size()) * sizeof(float);
  }
  void release() override {
    scores_ = {};
    mask_ = {};
    qk_ = {};
    softmax_ = {};
    pv_ = {};
  }

 private:
  Description description_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::matmul qk_, pv_;
  dnnl::softmax_forward softmax_;
  memory q_, kt_, v_, o_, s_, mask_mem_;
  std::vector<float> scores_, mask_;
  int threads_ = 1;
};

}  // namespace

std::unique_ptr<Contender> onednn_contender() { return std::make_unique<OnednnContender>(); }

}  // namespace attnbench::bench
