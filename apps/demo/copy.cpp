// copy: the attention module's challenge. Given n random vectors x_1..x_n and an index p, output
// x_p. Two models learn it by gradient descent (Adam on the mean squared error), at several n:
//
//   bottleneck  the whole sequence is squeezed into one vector of a fixed width (the same for
//               every n) before a decoder sees the index: s = W_e [x_1, ..., x_n] + b_e, then
//               y = MLP([s, onehot(p)]). Its width must hold n x dim numbers, so it falls as n
//               grows.
//   attention   a query built from the index attends over every position, through attention()
//               and attention_backward(): q = W_q pe(p), k_j = W_kx x_j + W_kp pe(j),
//               v_j = W_vx x_j + W_vp pe(j), y = W_o attention(q, K, V). The query can address
//               any position, so it stays accurate at every n.
//
// Both get their positions: the bottleneck by the slot of x_j in its input and a one-hot index,
// attention by sinusoidal encodings pe (without them every key would look alike to the query: the
// order demo's lesson). The dense layers' gradients are written by hand here; the attention's come
// from the library's backward.
#include <algorithm>
#include <cmath>
#include <numbers>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include "demo/copy_layers.hpp"
#include "demo/demo_support.hpp"

namespace attnbench::demo {

using namespace detail;
using namespace copy_layers;

namespace {

// ---------------------------------------------------------------------------------------------
// The task
// ---------------------------------------------------------------------------------------------

struct Examples {
  std::size_t count = 0, n = 0, dim = 0;
  std::vector<float> x;        // [count][n][dim], standard normal
  std::vector<std::size_t> p;  // [count], uniform over [0, n)
  std::vector<float> target;   // [count][dim]: x_p of each example
  const float* sequence(std::size_t e) const { return &x[e * n * dim]; }
};

// Random examples from one seed. Training draws a fresh batch from its stream every step; the test
// set comes from a stream of another seed, so no test example is ever trained on.
struct ExampleStream {
  Normal values;
  std::mt19937 indices;  // its raw output, not a distribution: fixed by the standard
  explicit ExampleStream(std::uint32_t seed) : values(seed), indices(seed + 1) {}

  Examples draw(std::size_t count, std::size_t n, std::size_t dim) {
    Examples ex;
    ex.count = count;
    ex.n = n;
    ex.dim = dim;
    ex.x = values.vector(count * n * dim);
    ex.p.resize(count);
    ex.target.resize(count * dim);
    for (std::size_t e = 0; e < count; ++e) {
      ex.p[e] = indices() % n;  // 2^32 is no multiple of n: a bias below n / 2^32
      std::copy_n(ex.sequence(e) + ex.p[e] * dim, dim, &ex.target[e * dim]);
    }
    return ex;
  }
};

// ---------------------------------------------------------------------------------------------
// The models: forward(examples) leaves y; backward(examples, dy) accumulates the gradient
// ---------------------------------------------------------------------------------------------

class AttentionModel {
 public:
  AttentionModel(const Kernel& kernel, const CopyConfig& c, std::size_t n, std::uint32_t seed)
      : kernel_(kernel), n_(n), dim_(c.dim), e_(c.encoding_dim), h_(c.head_dim) {
    Normal init(seed);
    query_ = Dense(params, e_, h_, init);
    key_x_ = Dense(params, dim_, h_, init);
    key_pos_ = Dense(params, e_, h_, init, false);  // k_j's bias is key_x_'s
    value_x_ = Dense(params, dim_, h_, init);
    value_pos_ = Dense(params, e_, h_, init, false);
    out_ = Dense(params, h_, dim_, init);
    pe_.resize(n * e_);
    for (std::size_t j = 0; j < n; ++j) position_encoding(j, e_, &pe_[j * e_]);
  }

  Parameters params;
  std::vector<float> y;
  std::string ran;  // the kernel attention() and attention_backward() ran

  void forward(const Examples& ex) {
    const std::size_t B = ex.count;
    shape_ = {B, 1, 1, 1, n_, h_};  // one query row per example: q_len = 1, kv_len = n
    q_in_.resize(B * e_);
    for (std::size_t e = 0; e < B; ++e) {
      std::copy_n(&pe_[ex.p[e] * e_], e_, &q_in_[e * e_]);
    }
    q_.resize(B * h_);
    query_.forward(params, q_in_.data(), B, q_.data());
    // k_j = W_kx x_j + b_k + W_kp pe(j): the positional part once per position, not per example
    project(key_x_, key_pos_, ex, k_);
    project(value_x_, value_pos_, ex, v_);
    o_.resize(B * h_);
    lse_.resize(B);
    ran = attention(kernel_, shape_, options_,
                    {q_.data(), k_.data(), v_.data(), o_.data(), lse_.data()}, ws_)
              .name;
    y.resize(B * dim_);
    out_.forward(params, o_.data(), B, y.data());
  }

  void backward(const Examples& ex, const std::vector<float>& dy) {
    const std::size_t B = ex.count;
    d_o_.resize(B * h_);
    out_.backward(params, o_.data(), dy.data(), B, d_o_.data());
    dq_.resize(q_.size());
    dk_.resize(k_.size());
    dv_.resize(v_.size());
    attention_backward(kernel_, shape_, options_,
                       {q_.data(), k_.data(), v_.data(), o_.data(), lse_.data()},
                       {d_o_.data(), dq_.data(), dk_.data(), dv_.data()}, ws_);
    query_.backward(params, q_in_.data(), dq_.data(), B, nullptr);
    project_backward(key_x_, key_pos_, ex, dk_);
    project_backward(value_x_, value_pos_, ex, dv_);
  }

  std::size_t parameters() const { return params.value.size(); }

 private:
  // z[e][j] = from_x(x_ej) + from_pos(pe(j)), for K (from_x = W_kx) or V.
  void project(const Dense& from_x, const Dense& from_pos, const Examples& ex,
               std::vector<float>& z) {
    const std::size_t rows = ex.count * n_;
    z.resize(rows * h_);
    from_x.forward(params, ex.x.data(), rows, z.data());
    pos_.resize(n_ * h_);
    from_pos.forward(params, pe_.data(), n_, pos_.data());
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < h_; ++c) z[r * h_ + c] += pos_[(r % n_) * h_ + c];
    }
  }
  // The positional layer sees position j's gradient summed over the examples.
  void project_backward(const Dense& from_x, const Dense& from_pos, const Examples& ex,
                        const std::vector<float>& dz) {
    const std::size_t rows = ex.count * n_;
    from_x.backward(params, ex.x.data(), dz.data(), rows, nullptr);
    d_pos_.assign(n_ * h_, 0.0f);
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < h_; ++c) d_pos_[(r % n_) * h_ + c] += dz[r * h_ + c];
    }
    from_pos.backward(params, pe_.data(), d_pos_.data(), n_, nullptr);
  }

  const Kernel& kernel_;
  std::size_t n_, dim_, e_, h_;
  Dense query_, key_x_, key_pos_, value_x_, value_pos_, out_;
  std::vector<float> pe_;  // [n][e]
  Shape shape_;
  Options options_;  // scale 1/sqrt(head_dim), one thread
  Workspace ws_;     // kept across steps: scratch is allocated once
  std::vector<float> q_in_, q_, k_, v_, o_, lse_, pos_;
  std::vector<float> d_o_, dq_, dk_, dv_, d_pos_;
};

class BottleneckModel {
 public:
  BottleneckModel(const CopyConfig& c, std::size_t n, std::uint32_t seed)
      : n_(n),
        dim_(c.dim),
        w_(c.bottleneck_width),
        hidden_(c.decoder_hidden),
        // The state's components start with variance 1, so it has length ~sqrt(width); a one-hot
        // of length 1 beside it would barely move the first layer, and the decoder would take
        // many more steps to learn a readout per index. Scaled, the index weighs as much.
        index_scale_(std::sqrt(float(c.bottleneck_width))) {
    Normal init(seed);
    encoder_ = Dense(params, n * dim_, w_, init);
    hidden1_ = Dense(params, w_ + n, hidden_, init);
    hidden2_ = Dense(params, hidden_, hidden_, init);
    out_ = Dense(params, hidden_, dim_, init);
  }

  Parameters params;
  std::vector<float> y;

  void forward(const Examples& ex) {
    const std::size_t B = ex.count;
    // s = W_e [x_1, ..., x_n] + b_e: the only thing the decoder learns of the sequence
    state_.resize(B * w_);
    encoder_.forward(params, ex.x.data(), B, state_.data());
    in_.assign(B * (w_ + n_), 0.0f);
    for (std::size_t e = 0; e < B; ++e) {
      std::copy_n(&state_[e * w_], w_, &in_[e * (w_ + n_)]);
      in_[e * (w_ + n_) + w_ + ex.p[e]] = index_scale_;  // sqrt(width) onehot(p)
    }
    h1_.resize(B * hidden_);
    hidden1_.forward(params, in_.data(), B, h1_.data());
    relu(h1_);
    h2_.resize(B * hidden_);
    hidden2_.forward(params, h1_.data(), B, h2_.data());
    relu(h2_);
    y.resize(B * dim_);
    out_.forward(params, h2_.data(), B, y.data());
  }

  void backward(const Examples& ex, const std::vector<float>& dy) {
    const std::size_t B = ex.count;
    dh2_.resize(h2_.size());
    out_.backward(params, h2_.data(), dy.data(), B, dh2_.data());
    relu_backward(h2_, dh2_);
    dh1_.resize(h1_.size());
    hidden2_.backward(params, h1_.data(), dh2_.data(), B, dh1_.data());
    relu_backward(h1_, dh1_);
    d_in_.resize(in_.size());
    hidden1_.backward(params, in_.data(), dh1_.data(), B, d_in_.data());
    d_state_.resize(state_.size());
    for (std::size_t e = 0; e < B; ++e) {
      std::copy_n(&d_in_[e * (w_ + n_)], w_, &d_state_[e * w_]);
    }
    encoder_.backward(params, ex.x.data(), d_state_.data(), B, nullptr);
  }

  std::size_t parameters() const { return params.value.size(); }

 private:
  std::size_t n_, dim_, w_, hidden_;
  float index_scale_;
  Dense encoder_, hidden1_, hidden2_, out_;
  std::vector<float> state_, in_, h1_, h2_;
  std::vector<float> dh2_, dh1_, d_in_, d_state_;
};

// ---------------------------------------------------------------------------------------------
// Training and testing
// ---------------------------------------------------------------------------------------------

// The mean squared error per component, and its gradient dL/dy = 2 (y - t) / (count * dim).
double mse(const std::vector<float>& y, const Examples& ex, std::vector<float>* dy) {
  double sum = 0;
  const double norm = double(ex.count * ex.dim);
  if (dy != nullptr) dy->resize(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double diff = double(y[i]) - ex.target[i];
    sum += diff * diff;
    if (dy != nullptr) (*dy)[i] = float(2 * diff / norm);
  }
  return sum / norm;
}

// Does y lie nearer x_p than every other vector of its sequence?
bool nearest_is_target(const float* y, const Examples& ex, std::size_t e) {
  const float* seq = ex.sequence(e);
  const double right = distance(y, seq + ex.p[e] * ex.dim, ex.dim);
  for (std::size_t j = 0; j < ex.n; ++j) {
    if (j != ex.p[e] && distance(y, seq + j * ex.dim, ex.dim) <= right) return false;
  }
  return true;
}

struct Tested {
  double accuracy = 0, mse = 0;
};

template <class Model>
Tested train_and_test(Model& model, const CopyConfig& c, std::size_t n, std::uint32_t seed,
                      const Examples& test) {
  ExampleStream train(seed);
  std::vector<float> dy;
  for (std::size_t step = 0; step < c.steps; ++step) {
    const Examples batch = train.draw(c.batch, n, c.dim);
    model.forward(batch);
    mse(model.y, batch, &dy);
    model.params.zero_grad();
    model.backward(batch, dy);
    // lr_t = lr (1 + cos(pi t / steps)) / 2: large steps first, fine ones at the end
    const double progress = double(step) / double(c.steps);
    model.params.adam_step(
        float(c.learning_rate * 0.5 * (1 + std::cos(std::numbers::pi * progress))));
  }
  // The test set in slices of the training batch's size: the buffers and the attention call stay
  // the size training used.
  Tested t;
  std::size_t right = 0;
  for (std::size_t begin = 0; begin < test.count; begin += c.batch) {
    Examples slice;
    slice.count = std::min(c.batch, test.count - begin);
    slice.n = n;
    slice.dim = c.dim;
    slice.x.assign(test.sequence(begin), test.sequence(begin) + slice.count * n * c.dim);
    slice.p.assign(&test.p[begin], &test.p[begin] + slice.count);
    slice.target.assign(&test.target[begin * c.dim], &test.target[(begin + slice.count) * c.dim]);
    model.forward(slice);
    t.mse += mse(model.y, slice, nullptr) * double(slice.count);
    for (std::size_t e = 0; e < slice.count; ++e) {
      right += nearest_is_target(&model.y[e * c.dim], slice, e);
    }
  }
  t.accuracy = double(right) / double(test.count);
  t.mse /= double(test.count);
  return t;
}

// Seeds per length: the two models train on the same stream of examples, the test set is another.
std::uint32_t train_seed(const CopyConfig& c, std::size_t n) {
  return std::uint32_t(c.seed * 1000003u + 1000 * n + 1);
}
std::uint32_t test_seed(const CopyConfig& c, std::size_t n) {
  return std::uint32_t(c.seed * 1000003u + 1000 * n + 500);
}
std::uint32_t init_seed(const CopyConfig& c, std::size_t n, int model) {
  return std::uint32_t(c.seed * 1000003u + 1000 * n + 900 + model);
}

// max |analytic - numeric| / max |analytic| over every parameter of `model` on `ex`; the numeric
// gradient by central differences of the loss (float32 forwards, differenced in double).
template <class Model>
double gradient_error(Model& model, const Examples& ex) {
  std::vector<float> dy;
  model.forward(ex);
  mse(model.y, ex, &dy);
  model.params.zero_grad();
  model.backward(ex, dy);
  const std::vector<float> analytic = model.params.grad;
  auto loss_at = [&](std::size_t i, float value) {
    const float saved = model.params.value[i];
    model.params.value[i] = value;
    model.forward(ex);
    model.params.value[i] = saved;
    return mse(model.y, ex, nullptr);
  };
  double worst = 0, largest = 0;
  for (std::size_t i = 0; i < analytic.size(); ++i) {
    // Steps of 1e-2 down to 6e-4 keep float32's rounding of the loss (~1e-7) well below the
    // differences they measure. A ReLU of the bottleneck's decoder that flips inside a step's
    // window bends the loss there; the smallest error of the three steps is the one kept, as a
    // kink seldom lies within all three windows.
    double error = INFINITY;
    for (float h : {1e-2f, 2.5e-3f, 6e-4f}) {
      const float w = model.params.value[i];
      const double numeric = (loss_at(i, w + h) - loss_at(i, w - h)) / (2.0 * double(h));
      error = std::min(error, std::fabs(numeric - analytic[i]));
    }
    worst = std::max(worst, error);
    largest = std::max(largest, double(std::fabs(analytic[i])));
  }
  return largest > 0 ? worst / largest : worst;
}

// The table's columns, for print() and to_json() alike.
struct Column {
  const char* header;
  const char* key;  // in the JSON rows
  double CopyRow::*value;
  int precision;
  int width;  // 0 for the last column: no trailing padding
};
constexpr Column kColumns[] = {
    {"attention", "attention_accuracy", &CopyRow::attention_accuracy, 3, 11},
    {"bottleneck", "bottleneck_accuracy", &CopyRow::bottleneck_accuracy, 3, 11},
    {"chance", "chance", &CopyRow::chance, 3, 8},
    {"attention MSE", "attention_mse", &CopyRow::attention_mse, 4, 14},
    {"bottleneck MSE", "bottleneck_mse", &CopyRow::bottleneck_mse, 4, 0},
};

}  // namespace

CopyConfig CopyConfig::quick() {
  CopyConfig c;
  c.lengths = {3, 6};
  c.steps = 40;
  c.batch = 16;
  c.test_examples = 64;
  return c;
}

CopyResult copy_task(const Kernel& kernel, const CopyConfig& config) {
  CopyResult r;
  r.config = config;
  r.rows.resize(config.lengths.size());
  // One job per length and model, each on one thread with its own seeds, so the numbers are the
  // same however many jobs run at once. The longest lengths first: the jobs left for the end are
  // the short ones, and the threads finish together.
  struct Job {
    std::size_t row;
    bool attention;
  };
  std::vector<Job> jobs;
  for (std::size_t i = 0; i < config.lengths.size(); ++i) {
    jobs.push_back({i, true});
    jobs.push_back({i, false});
  }
  std::stable_sort(jobs.begin(), jobs.end(), [&](const Job& a, const Job& b) {
    return config.lengths[a.row] > config.lengths[b.row];
  });
  std::vector<std::string> ran(jobs.size());
  auto run = [&](std::size_t j) {
    const std::size_t n = config.lengths[jobs[j].row];
    CopyRow& row = r.rows[jobs[j].row];
    ExampleStream test_stream(test_seed(config, n));
    const Examples test = test_stream.draw(config.test_examples, n, config.dim);
    if (jobs[j].attention) {
      AttentionModel model(kernel, config, n, init_seed(config, n, 0));
      const Tested t = train_and_test(model, config, n, train_seed(config, n), test);
      ran[j] = model.ran;
      row.attention_accuracy = t.accuracy;
      row.attention_mse = t.mse;
      row.attention_parameters = model.parameters();
    } else {
      BottleneckModel model(config, n, init_seed(config, n, 1));
      const Tested t = train_and_test(model, config, n, train_seed(config, n), test);
      row.bottleneck_accuracy = t.accuracy;
      row.bottleneck_mse = t.mse;
      row.bottleneck_parameters = model.parameters();
    }
  };
  Options threads;
  threads.threads = config.threads;
  tbb::task_arena arena(int(worker_threads(threads)));
  arena.execute([&] {
    tbb::parallel_for(
        tbb::blocked_range<std::size_t>(0, jobs.size(), 1),
        [&](const tbb::blocked_range<std::size_t>& range) {
          for (std::size_t j = range.begin(); j < range.end(); ++j) run(j);
        },
        tbb::simple_partitioner());
  });
  for (std::size_t i = 0; i < config.lengths.size(); ++i) {
    r.rows[i].n = config.lengths[i];
    r.rows[i].chance = 1.0 / double(config.lengths[i]);
  }
  for (const std::string& name : ran) {
    if (!name.empty()) r.kernel = name;
  }
  return r;
}

CopyGradientCheck copy_gradient_check(const Kernel& kernel, std::size_t n) {
  CopyConfig c;
  c.encoding_dim = 6;
  c.head_dim = 5;
  c.dim = 4;
  c.bottleneck_width = 7;
  c.decoder_hidden = 9;
  ExampleStream stream(77);
  const Examples ex = stream.draw(3, n, c.dim);
  CopyGradientCheck check;
  AttentionModel attention(kernel, c, n, 78);
  check.attention = gradient_error(attention, ex);
  BottleneckModel bottleneck(c, n, 79);
  check.bottleneck = gradient_error(bottleneck, ex);
  return check;
}

void print(const CopyResult& r, std::FILE* out) {
  const CopyConfig& c = r.config;
  heading(out, "copy",
          "output the p-th of n vectors: attention stays accurate as n grows, a fixed-width "
          "bottleneck does not");
  std::fprintf(out,
               "%zu-dim normal vectors, p uniform; per n and model %zu Adam steps (lr %g, cosine "
               "decay) of %zu fresh examples, tested on %zu held-out ones\n",
               c.dim, c.steps, c.learning_rate, c.batch, c.test_examples);
  std::fprintf(out,
               "attention: query from pe(p), keys and values from x_j and pe(j), head dim %zu, "
               "%zu-dim sinusoidal pe; kernel %s (forward and backward)\n",
               c.head_dim, c.encoding_dim, r.kernel.c_str());
  std::fprintf(out,
               "bottleneck: [x_1..x_n] -> one %zu-wide vector -> MLP (%zu, %zu hidden) on "
               "[vector, %g onehot(p)]\n",
               c.bottleneck_width, c.decoder_hidden, c.decoder_hidden,
               std::sqrt(double(c.bottleneck_width)));
  std::fprintf(out,
               "accuracy: share of test outputs nearer x_p than every other x_j; MSE per "
               "component (the vectors' variance is 1)\n");
  std::fprintf(out, "%6s ", "n");
  for (const Column& col : kColumns) std::fprintf(out, " %-*s", col.width, col.header);
  std::fputc('\n', out);
  for (const CopyRow& row : r.rows) {
    std::fprintf(out, "%6zu ", row.n);
    for (const Column& col : kColumns) {
      std::fprintf(out, " %-*s", col.width, number(row.*col.value, col.precision).c_str());
    }
    std::fputc('\n', out);
  }
}

Json to_json(const CopyResult& r) {
  const CopyConfig& c = r.config;
  Json rows = Json::array();
  for (const CopyRow& row : r.rows) {
    Json j = {{"n", row.n}};
    for (const Column& col : kColumns) j[col.key] = row.*col.value;
    j["attention_parameters"] = row.attention_parameters;
    j["bottleneck_parameters"] = row.bottleneck_parameters;
    rows.push_back(std::move(j));
  }
  return {{"kernel", r.kernel},
          {"dim", c.dim},
          {"encoding_dim", c.encoding_dim},
          {"head_dim", c.head_dim},
          {"bottleneck_width", c.bottleneck_width},
          {"decoder_hidden", c.decoder_hidden},
          {"steps", c.steps},
          {"batch", c.batch},
          {"test_examples", c.test_examples},
          {"learning_rate", c.learning_rate},
          {"rows", rows}};
}

}  // namespace attnbench::demo
