// The differential fuzz case for attention(): how fuzz input bytes become a problem, and what every
// available registry kernel must then do against the float64 oracle. Shared by the libFuzzer
// target (fuzz_attention.cpp) and the corpus replay test (tests/fuzz_replay_test.cpp), so every
// seed and every saved crash input is also a plain regression test.
//
// Input layout (a read past the end gives 0, so any byte string is a case):
//   byte 0     flags: bit 0 causal; bit 1 batch 2; bit 2 two key/value heads; bits 3-4 query heads
//              per key/value head (1 + x % 3); bits 5-6 threads (0, 1: one; 2: two; 3: three);
//              bit 7 decoding shape (a few query rows over 4000-6295 keys: the split-key path)
//   byte 1-3   q_len, kv_len, head_dim: 1 + x % 70 (decoding: q_len 1 + x % 4, kv_len
//              4000 + 9 x, head_dim 1 + x % 8)
//   byte 4     scale: x % 16 picks from kScales; 11 reads a raw float (NaN or Inf must give Error)
//   byte 5-7   magnitude of Q, K, V: x % 16 picks from kMagnitudes (0, denormal, huge, ...)
//   byte 8     0xA5: a naive memory budget of 4 * (next two bytes) bytes follows; 0x5A: a mask
//              follows, two bytes: the first's bit 0 the top-left alignment, bits 1-2 the kind
//              (0: window left, causal as byte 0 says; 1: local, non-causal, left and right;
//              2: right only, non-causal; 3: the alignment alone), bits 3-4 a soft-cap (none,
//              2, 30, 50), bit 5 ALiBi (slopes 2^-(h+1)), bits 6-7 a mask tensor (none; boolean
//              per head and row; additive with -inf per batch; a band as a boolean tensor:
//              testing::TensorMask, seeded by the values' seed), with which every patch stays
//              finite (a NaN reaches a removed key's gradient, or its V the row, as 0 x NaN, or
//              not where the kernels skip its block: docs/masks.md); the second's value w the left
//              window 1 +
//              w % (kv_len + 8) and the right w % 16
//   byte 9-12  seed of the values: uniform in [-2, 2) times the tensor's magnitude
//   then       patches, each a kind byte (tensor = x % 3, special = x / 3 % 14, see kSpecials)
//              and a 3-byte element index (mod the tensor's size); raw specials read 4 more bytes
//
// What is required, per kernel (each available one, dispatching entries resolved, once each):
// - it throws attnbench::Error exactly when the oracle does (non-finite scale) or when a naive
//   score matrix exceeds the budget (the message then holds the bytes needed and the budget),
//   and then leaves the output untouched and allocates nothing;
// - it writes every output element (the output starts as poison), and its output is bitwise the
//   same for 1 thread and for the case's thread count;
// - rows with no visible key are zero;
// - inputs of moderate magnitude (every finite value 0 or within 2^-40..2^40 in magnitude, the
//   scale 0 or within 2^-20..2^20): every element within the documented error bound
//   (testing/error_bound.hpp), and, with no infinite input, within a multiple of plain float32's
//   error (compare_with_plain); NaN and Inf exactly where the oracle has them. One exception, where
//   float cannot follow double: a row that sees an infinite value through a weight below e^-80
//   (float's exp underflows to 0 there, and 0 * inf is NaN where double has inf) must only be
//   non-finite where the oracle is;
// - other inputs (denormals, huge values, extreme scales: float under- and overflows that the
//   float64 oracle does not): every finite element within the range of the values its row sees,
//   widened by the bound's rounding terms. Crash-freedom is the sanitizers' part.
// And of each kernel with a backward pass (its own forward's O and LSE, dO seeded from the shape;
// cases up to 4e6 pair-dims): no exception, dQ, dK and dV bitwise the same for 1 thread and the
// case's count, and in the moderate regime within the backward's criterion
// (testing/backward.hpp), NaN and Inf exactly where the float64 oracle has them (with an Inf
// among the inputs: non-finite where the oracle is, the forward's exception).
// A bf16-products kernel is held to the same on the case as it computes it (Q, K, V and dO rounded
// to bfloat16), its bounds widened by one bfloat16 rounding of the weights (expected()).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <attnbench/attnbench.hpp>
#include "testing/backward.hpp"
#include "testing/error_bound.hpp"
#include "testing/problem.hpp"
#include "testing/reference.hpp"

namespace attnbench::fuzz {

// Reads the input front to back; past its end every byte is 0.
class ByteReader {
 public:
  ByteReader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  bool empty() const { return at_ >= size_; }
  std::uint8_t u8() { return at_ < size_ ? data_[at_++] : 0; }
  std::uint32_t uint(int bytes) {
    std::uint32_t x = 0;
    for (int i = 0; i < bytes; ++i) x |= std::uint32_t{u8()} << (8 * i);
    return x;
  }
  float raw_float() {
    const std::uint32_t bits = uint(4);
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

constexpr std::size_t kMaxLen = 70;  // lengths and head dims: past the 64-key block and 48-row task
constexpr std::size_t kMaxPatches = 256;
constexpr float kDenormal = 1e-41f;  // below FLT_MIN (1.2e-38)

// Index 11 (and 12 upward, which mean "unset") are handled in decode.
constexpr float kScales[] = {0.0f,  0.0f,  1.0f,  -1.0f,  0.125f,   1e-3f,
                             30.0f, -7.5f, 1e20f, 1e-30f, kDenormal};
constexpr float kMagnitudes[16] = {1.0f, 1.0f,   1.0f,  1.0f,   0.25f, 4.0f,  30.0f, 1e-3f,
                                   1e3f, 1e-12f, 1e12f, 1e-39f, 1e30f, 1e38f, 0.0f,  100.0f};

enum Special : int {
  kNaN,
  kPlusInf,
  kMinusInf,
  kMax,
  kMinusMax,
  kHuge,
  kMinusHuge,
  kDenormMin,
  kMinusDenormal,
  kZero,
  kMinusZero,
  kRaw,
  kRowRaw,
  kOutlier,
  kSpecialCount
};

// A decoded input: the problem, and a description of it for failure messages.
struct AttentionCase : testing::Problem {
  std::string describe() const {
    std::ostringstream s;
    s << "shape b" << shape.batch << " h" << shape.q_heads << "/kv" << shape.kv_heads << " q"
      << shape.q_len << " k" << shape.kv_len << " d" << shape.head_dim
      << (options.causal ? " causal" : "")
      << (options.alignment == Alignment::top_left ? " top_left" : "");
    if (options.window_left) s << " window " << *options.window_left;
    if (options.window_right) s << " window_right " << *options.window_right;
    if (options.softcap) s << " softcap " << *options.softcap;
    if (!options.alibi_slopes.empty()) s << " alibi";
    if (!options.mask.empty()) {
      s << " mask " << (options.mask.keep ? "keep" : "bias") << " [" << options.mask.sizes[0] << ","
        << options.mask.sizes[1] << "," << options.mask.sizes[2] << "," << options.mask.sizes[3]
        << "]";
    }
    s << " scale ";
    if (options.scale) {
      s << *options.scale;
    } else {
      s << "default";
    }
    s << " threads " << options.threads;
    if (options.memory_budget_bytes) s << " budget " << options.memory_budget_bytes;
    std::size_t nan = 0, inf = 0, denormal = 0;
    double largest = 0;
    for (const auto* t : {&q, &k, &v}) {
      for (float x : *t) {
        nan += std::isnan(x);
        inf += std::isinf(x);
        denormal += std::fpclassify(x) == FP_SUBNORMAL;
        if (std::isfinite(x)) largest = std::max(largest, std::fabs(double(x)));
      }
    }
    s << "; inputs: " << nan << " NaN, " << inf << " Inf, " << denormal
      << " denormal, largest finite |x| " << largest;
    return s.str();
  }
};

inline AttentionCase decode_attention_case(const std::uint8_t* data, std::size_t size) {
  ByteReader in(data, size);
  AttentionCase c;
  const std::uint8_t flags = in.u8();
  const bool decoding = flags & 0x80;
  c.options.causal = flags & 1;
  c.shape.batch = flags & 2 ? 2 : 1;
  c.shape.kv_heads = flags & 4 ? 2 : 1;
  c.shape.q_heads = c.shape.kv_heads * (1 + ((flags >> 3) & 3) % 3);
  const std::size_t threads[] = {1, 1, 2, 3};
  c.options.threads = threads[(flags >> 5) & 3];
  const std::size_t q_len = in.u8(), kv_len = in.u8(), head_dim = in.u8();
  c.shape.q_len = decoding ? 1 + q_len % 4 : 1 + q_len % kMaxLen;
  c.shape.kv_len = decoding ? 4000 + 9 * kv_len : 1 + kv_len % kMaxLen;
  c.shape.head_dim = decoding ? 1 + head_dim % 8 : 1 + head_dim % kMaxLen;

  const std::size_t scale = in.u8() % 16;
  if (scale < std::size(kScales)) c.options.scale = kScales[scale];
  if (scale == 11) c.options.scale = in.raw_float();
  float magnitude[3];
  for (float& m : magnitude) m = kMagnitudes[in.u8() % 16];
  const std::uint8_t extra = in.u8();
  testing::TensorMask tensor = testing::TensorMask::none;
  if (extra == 0xA5) c.options.memory_budget_bytes = 4 * std::size_t{in.uint(2)};
  if (extra == 0x5A) {
    const std::uint8_t kind = in.u8(), w = in.u8();
    if (kind & 1) c.options.alignment = Alignment::top_left;
    const std::size_t left = 1 + w % (c.shape.kv_len + 8), right = w % 16;
    constexpr float kCaps[] = {0.0f, 2.0f, 30.0f, 50.0f};
    if ((kind >> 3) & 3) c.options.softcap = kCaps[(kind >> 3) & 3];
    if (kind & 0x20) c.options.alibi_slopes = testing::Masking::alibi_slopes(c.shape.q_heads);
    constexpr testing::TensorMask kTensors[] = {
        testing::TensorMask::none, testing::TensorMask::keep, testing::TensorMask::bias,
        testing::TensorMask::band};
    tensor = kTensors[kind >> 6];
    switch ((kind >> 1) & 3) {
      case 0: c.options.window_left = left; break;
      case 1:
        c.options.causal = false;
        c.options.window_left = left;
        c.options.window_right = right;
        break;
      case 2:
        c.options.causal = false;
        c.options.window_right = right;
        break;
      default: break;
    }
  }

  // splitmix64: the same values from every compiler and standard library.
  std::uint64_t state = in.uint(4);
  testing::add_mask_tensor(c, tensor, std::uint32_t(state));
  auto next = [&state] {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  std::vector<float>* tensors[] = {&c.q, &c.k, &c.v};
  const std::size_t sizes[] = {c.shape.q_elements(), c.shape.kv_elements(), c.shape.kv_elements()};
  for (int t = 0; t < 3; ++t) {
    tensors[t]->resize(sizes[t]);
    for (float& x : *tensors[t]) {
      const float uniform = static_cast<float>(next() >> 40) * 0x1p-22f - 2.0f;  // [-2, 2)
      x = uniform * magnitude[t];
    }
  }

  for (std::size_t p = 0; p < kMaxPatches && !in.empty(); ++p) {
    const std::uint8_t kind = in.u8();
    std::vector<float>& t = *tensors[kind % 3];
    const std::size_t at = in.uint(3) % t.size();
    float value = 0.0f;
    switch ((kind / 3) % kSpecialCount) {
      case kNaN: value = std::numeric_limits<float>::quiet_NaN(); break;
      case kPlusInf: value = INFINITY; break;
      case kMinusInf: value = -INFINITY; break;
      case kMax: value = std::numeric_limits<float>::max(); break;
      case kMinusMax: value = -std::numeric_limits<float>::max(); break;
      case kHuge: value = 1e30f; break;
      case kMinusHuge: value = -1e20f; break;
      case kDenormMin: value = std::numeric_limits<float>::denorm_min(); break;
      case kMinusDenormal: value = -kDenormal; break;
      case kZero: value = 0.0f; break;
      case kMinusZero: value = -0.0f; break;
      case kRaw: value = in.raw_float(); break;
      case kRowRaw: {  // the whole row (one query, key or value vector) holds one value
        value = in.raw_float();
        if (tensor != testing::TensorMask::none && !std::isfinite(value)) continue;
        const std::size_t d = c.shape.head_dim, row = at / d;
        std::fill_n(t.begin() + static_cast<std::ptrdiff_t>(row * d), d, value);
        continue;
      }
      case kOutlier: value = t[at] * 1e4f + 50.0f; break;  // moves the running max
    }
    if (tensor != testing::TensorMask::none && !std::isfinite(value)) continue;
    t[at] = value;
  }
  return c;
}

namespace detail {

constexpr float kPoison[2] = {-12345.678f, 98765.43f};

// A value in full: std::to_string's six decimals print a denormal as 0.000000.
inline std::string str(double x) {
  std::ostringstream s;
  s.precision(9);
  s << x;
  return s.str();
}

inline bool moderate(double x, double low, double high) {
  return !std::isfinite(x) || x == 0 || (std::fabs(x) >= low && std::fabs(x) <= high);
}

// What the case's inputs allow the check to require.
struct Regime {
  bool moderate;    // the documented bound applies (values and scale of moderate magnitude)
  bool all_finite;  // no NaN or Inf among the inputs
};

inline Regime regime(const AttentionCase& c) {
  Regime r{true, true};
  for (const auto* t : {&c.q, &c.k, &c.v}) {
    for (float x : *t) {
      r.all_finite = r.all_finite && std::isfinite(x);
      r.moderate = r.moderate && moderate(x, 0x1p-40, 0x1p40);
    }
  }
  r.moderate = r.moderate && moderate(effective_scale(c.shape, c.options), 0x1p-20, 0x1p20);
  return r;
}

// True when row i sees an infinite value through a softmax weight below e^-80, which float's exp
// may round to 0 (0 * inf = NaN) where the float64 oracle keeps a tiny positive weight (inf).
inline bool sees_inf_through_tiny_weight(const AttentionCase& c, const testing::RowView& r) {
  const std::size_t d = c.shape.head_dim;
  const double scale = effective_scale(c.shape, c.options);
  std::vector<double> s(r.n);
  double m = -INFINITY;
  for (std::size_t j = 0; j < r.n; ++j) {
    double dot = 0;
    for (std::size_t x = 0; x < d; ++x) dot += double(r.q[x]) * double(r.k[j * d + x]);
    s[j] = scale * dot;
    if (std::isnan(s[j])) return false;  // the row is NaN in float and in double alike
    m = std::max(m, s[j]);
  }
  for (std::size_t j = 0; j < r.n; ++j) {
    const bool inf_value =
        std::any_of(r.v + j * d, r.v + (j + 1) * d, [](float x) { return std::isinf(x); });
    if (inf_value && s[j] - m < -80.0) return true;
  }
  return false;
}

// Float output compared with the oracle's, row by row, under what the inputs allow.
inline std::optional<std::string> compare(const AttentionCase& c, const Regime& r,
                                          const std::vector<float>& out,
                                          const std::vector<double>& ref,
                                          const std::vector<double>& bounds,
                                          double weight_unit = 0) {
  const Shape& s = c.shape;
  const std::size_t d = s.head_dim;
  const double u = std::ldexp(1.0, -24);
  std::size_t row_index = 0;
  for (std::size_t b = 0; b < s.batch; ++b) {
    for (std::size_t h = 0; h < s.q_heads; ++h) {
      for (std::size_t i = 0; i < s.q_len; ++i, ++row_index) {
        const testing::RowView row = testing::row_view(c.view(), b, h, i);
        const std::string where = "batch " + std::to_string(b) + " head " + std::to_string(h) +
                                  " row " + std::to_string(i);
        if (row.n == 0) {
          for (std::size_t x = 0; x < d; ++x) {
            if (out[row.out + x] != 0.0f) {
              return where + " sees no key but col " + std::to_string(x) + " is " +
                     str(out[row.out + x]);
            }
          }
          continue;
        }
        if (r.moderate && (r.all_finite || !sees_inf_through_tiny_weight(c, row))) {
          testing::Comparison result;
          testing::compare_row(c.view(), out.data(), ref.data(), b, h, i, bounds[row_index],
                               result);
          if (result.mismatch) return result.mismatch->describe();
        } else if (r.moderate) {
          for (std::size_t x = 0; x < d; ++x) {
            const float got = out[row.out + x];
            const double want = ref[row.out + x];
            if (std::isfinite(got) != std::isfinite(want)) {
              return where + " col " + std::to_string(x) + ": got " + str(got) + ", oracle " +
                     str(want) + " (finite where the other is not)";
            }
          }
        } else {
          // A convex combination of the values the row sees, up to rounding (the bound's n and
          // constant terms) and the absolute error of arithmetic on denormals; or a zero row,
          // when every score overflowed to -inf in float.
          const bool zero_row = std::all_of(out.begin() + row.out, out.begin() + row.out + d,
                                            [](float x) { return x == 0.0f; });
          for (std::size_t x = 0; x < d && !zero_row; ++x) {
            const float got = out[row.out + x];
            if (!std::isfinite(got)) continue;
            double low = INFINITY, high = -INFINITY, vmax = 0;
            for (std::size_t j = 0; j < row.n; ++j) {
              const double value = row.v[j * d + x];
              low = std::min(low, value);
              high = std::max(high, value);
              vmax = std::fmax(vmax, std::fabs(value));
            }
            // (bf16 products: the weights, each rounded once, may sum to 1 + weight_unit)
            const double slack = u * vmax * (2.0 * double(row.n) + 32.0) + weight_unit * vmax +
                                 std::ldexp(2.0 * double(row.n) + 8.0, -149);
            if (!(got >= low - slack && got <= high + slack)) {
              return where + " col " + std::to_string(x) + ": got " + str(got) +
                     " outside the values it sees, [" + str(low) + ", " + str(high) + "] +- " +
                     str(slack);
            }
          }
        }
      }
    }
  }
  return std::nullopt;
}

inline bool untouched(const std::vector<float>& out, float poison) {
  return std::all_of(out.begin(), out.end(), [poison](float x) { return x == poison; });
}

// One kernel on the case, given the oracle's answer (or its Error) and the per-row bounds.
inline std::optional<std::string> check_kernel(const Kernel& kernel, const AttentionCase& c,
                                               const std::optional<std::string>& oracle_error,
                                               const std::vector<double>& ref, const Regime& regime,
                                               const std::vector<double>& bounds,
                                               const testing::OracleAnswer* yardstick = nullptr) {
  const bool over_budget = kernel.strategy == Strategy::naive &&
                           c.options.memory_budget_bytes != 0 &&
                           naive_score_bytes(c.shape) > c.options.memory_budget_bytes;
  const bool must_refuse = oracle_error || over_budget;

  // Run 0 with the case's threads, run 1 (when that is more than one) with one thread, each over
  // its own poison. An unwritten element shows as a poison value far out of bound, or as a
  // difference between the runs.
  std::vector<float> out[2];
  const int runs = c.options.threads > 1 ? 2 : 1;
  for (int run = 0; run < runs; ++run) {
    Options options = c.options;
    if (run == 1) options.threads = 1;
    out[run].assign(c.shape.q_elements(), kPoison[run]);
    Workspace ws;
    try {
      attention(kernel, c.shape, options,
                Tensors{c.q.data(), c.k.data(), c.v.data(), out[run].data()}, ws);
    } catch (const Error& e) {
      const std::string message = e.what();
      if (!must_refuse) return "unexpected Error: " + message;
      if (!untouched(out[run], kPoison[run])) return "output written before Error: " + message;
      if (ws.peak_bytes() != 0) return "allocated before Error: " + message;
      if (over_budget && !oracle_error &&
          (message.find(std::to_string(naive_score_bytes(c.shape))) == std::string::npos ||
           message.find(std::to_string(c.options.memory_budget_bytes)) == std::string::npos)) {
        return "budget Error without the bytes needed and the budget: " + message;
      }
      continue;
    } catch (const std::exception& e) {
      return std::string("exception other than attnbench::Error: ") + e.what();
    }
    if (oracle_error) return "no Error, but the oracle threw: " + *oracle_error;
    if (over_budget) return std::string("no Error for a naive score matrix over the memory budget");
  }
  if (must_refuse) return std::nullopt;

  for (std::size_t i = 0; runs == 2 && i < out[0].size(); ++i) {
    if (std::memcmp(&out[0][i], &out[1][i], sizeof(float)) != 0) {
      return "element " + std::to_string(i) + " is " + str(out[0][i]) + " with " +
             std::to_string(c.options.threads) + " threads and " + str(out[1][i]) +
             " with 1 (unwritten, or thread-dependent)";
    }
  }
  const double weight_unit = kernel.products == Products::bf16 ? std::ldexp(1.0, -8) : 0.0;
  if (auto failure = compare(c, regime, out[0], ref, bounds, weight_unit)) return failure;
  if (yardstick != nullptr) {
    const testing::Comparison plain =
        testing::compare_with_plain(c.view(), out[0].data(), yardstick->yardstick());
    if (plain.mismatch) return "against plain float32: " + plain.mismatch->describe();
  }
  return std::nullopt;
}

// The backward of a kernel that has one, on a case the forward ran: with the case's threads and
// with one, which must give the same bits; in the moderate regime also within the backward's
// criterion (testing/backward.hpp). dO is seeded from the shape. Cases over a few million
// pair-dims are left to the forward (the oracle's backward would slow the fuzzer to a crawl).
inline std::optional<std::string> check_backward(const Kernel& kernel, const AttentionCase& c,
                                                 const Regime& regime) {
  const Shape& s = c.shape;
  if (double(s.batch * s.q_heads) * double(s.q_len) * double(s.kv_len) * double(s.head_dim) > 4e6) {
    return std::nullopt;
  }
  if (kernel.strategy == Strategy::naive && c.options.memory_budget_bytes != 0) {
    return std::nullopt;  // the forward's budget checks cover the naive refusal
  }
  const std::vector<float> d_o = testing::random_output_gradient(
      c, static_cast<std::uint32_t>(s.q_len * 131 + s.kv_len * 7 + s.head_dim));
  testing::GradientsOf<float> runs[2];
  const int count = c.options.threads > 1 ? 2 : 1;
  for (int run = 0; run < count; ++run) {
    testing::Problem p = c;
    if (run == 1) p.options.threads = 1;
    Workspace ws;
    try {
      runs[run] = testing::run_backward(kernel, p, d_o, ws);
    } catch (const std::exception& e) {
      return std::string("backward: unexpected exception: ") + e.what();
    }
  }
  for (int run = 1; run < count; ++run) {
    for (const auto& [name, a, b] : {std::tuple{"dq", &runs[0].dq, &runs[1].dq},
                                     {"dk", &runs[0].dk, &runs[1].dk},
                                     {"dv", &runs[0].dv, &runs[1].dv}}) {
      if (std::memcmp(a->data(), b->data(), a->size() * sizeof(float)) != 0) {
        return std::string("backward: ") + name + " differs between " +
               std::to_string(c.options.threads) + " threads and 1";
      }
    }
  }
  if (!regime.moderate) return std::nullopt;
  bool any_inf = false;  // see check_gradient's specials_exact
  for (const auto* t : {&c.q, &c.k, &c.v}) {
    any_inf = any_inf || std::any_of(t->begin(), t->end(), [](float x) { return std::isinf(x); });
  }
  for (const testing::GradientCheck& check :
       testing::check_kernel_gradients(kernel, c, d_o, runs[0], !any_inf)) {
    if (check.failure) return "backward: " + *check.failure;
  }
  return std::nullopt;
}

}  // namespace detail

// What a kernel with given products must compute on the case: the case as it computes it (bf16:
// Q, K and V rounded to bfloat16, which the kernel then takes as they are), the oracle's answer on
// that (or its Error), the per-row bounds and plain float32's yardstick (testing/error_bound.hpp;
// bf16 adds the rounding of the weights to both).
struct Expected {
  AttentionCase c;
  std::vector<double> ref;
  std::optional<std::string> oracle_error;
  detail::Regime regime;
  std::vector<double> bounds;
  std::optional<testing::OracleAnswer> yardstick;
};

inline Expected expected(const AttentionCase& input, Products products) {
  Expected e{input, std::vector<double>(input.shape.q_elements()), {}, {}, {}, {}};
  static_cast<testing::Problem&>(e.c) = testing::as_computed(input, products);
  const AttentionCase& c = e.c;
  try {
    reference_attention(c.shape, c.options, c.q.data(), c.k.data(), c.v.data(), e.ref.data());
  } catch (const Error& error) {
    e.oracle_error = error.what();
  }
  e.regime = detail::regime(c);
  if (e.oracle_error || !e.regime.moderate) return e;
  // The forward's second criterion, a multiple of plain float32's error (compare_with_plain),
  // where the analytic bound applies and no input is infinite (an Inf value behind a weight float
  // flushes is the bound's exception above, and plain float32 meets it too).
  bool any_inf = false;
  for (const auto* t : {&c.q, &c.k, &c.v}) {
    any_inf = any_inf || std::any_of(t->begin(), t->end(), [](float x) { return std::isinf(x); });
  }
  if (!any_inf) e.yardstick = testing::solve(input, products);
  const double weight_unit = products == Products::bf16 ? std::ldexp(1.0, -8) : 0.0;
  for (std::size_t b = 0; b < c.shape.batch; ++b) {
    for (std::size_t h = 0; h < c.shape.q_heads; ++h) {
      for (std::size_t i = 0; i < c.shape.q_len; ++i) {
        const testing::RowConditioning rc = testing::row_conditioning(c.view(), b, h, i);
        const double weights = weight_unit > 0 ? weight_unit * rc.vmax : 0.0;  // no 0 x inf
        e.bounds.push_back(testing::row_bound(rc, c.shape.head_dim) + weights);
      }
    }
  }
  return e;
}

// Runs every available kernel (but those named in `skip`) on the case; nullopt when all of them
// pass, else what went wrong.
inline std::optional<std::string> check_attention_case(const AttentionCase& c,
                                                       const std::vector<std::string>& skip = {}) {
  std::optional<Expected> by_products[2];  // computed when a kernel of those products runs
  std::vector<const Kernel*> done;
  for (const Kernel& entry : registry()) {
    const Kernel& kernel = resolve(entry);
    if (!kernel.available() || std::find(done.begin(), done.end(), &kernel) != done.end() ||
        std::find(skip.begin(), skip.end(), kernel.name) != skip.end()) {
      continue;
    }
    done.push_back(&kernel);
    std::optional<Expected>& e = by_products[static_cast<std::size_t>(kernel.products)];
    if (!e) e = expected(c, kernel.products);
    if (auto failure = detail::check_kernel(kernel, e->c, e->oracle_error, e->ref, e->regime,
                                            e->bounds, e->yardstick ? &*e->yardstick : nullptr)) {
      return std::string(kernel.name) + ": " + *failure + "\n  case: " + c.describe();
    }
    if (e->oracle_error || !kernel.has_backward()) continue;
    if (auto failure = detail::check_backward(kernel, e->c, e->regime)) {
      return std::string(kernel.name) + ": " + *failure + "\n  case: " + c.describe();
    }
  }
  return std::nullopt;
}

inline std::optional<std::string> check_attention_input(const std::uint8_t* data, std::size_t size,
                                                        const std::vector<std::string>& skip = {}) {
  return check_attention_case(decode_attention_case(data, size), skip);
}

}  // namespace attnbench::fuzz
