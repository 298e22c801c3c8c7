// The error criteria's power to fail. First the oracle itself against an independent reference,
// written from the definitions (the layout, the bottom-right causal mask, the scale, query head h
// reading key/value head h / (q_heads / kv_heads)) without the library's helpers that the oracle
// and the kernels share (effective_scale, head_offsets, visible_keys): a bug there would pass
// every other test. Then mutants: deliberately wrong kernels, each built in test code from a
// correct one (run through the public API on a perturbed problem, or a plain float loop with one
// mistake), that the forward criteria (testing/error_bound.hpp) must reject on every shape and
// seed tried; each test also prints how many the analytic row bound alone lets pass. A loosened
// criterion fails here. The backward's mutants are in backward_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <string>

#include "oracle_support.hpp"
#include "registry_params.hpp"

namespace attnbench::testing {
namespace {

// ---------------------------------------------------------------------------------------------
// An independent reference
// ---------------------------------------------------------------------------------------------

// Attention from the definitions, in double: O[b][h][i] = sum_j softmax_j(scale q . k_j) v_j over
// the keys j <= i + kv_len - q_len (causal) of key/value head h / (q_heads / kv_heads); scale
// `scale`, or 1 / sqrt(head_dim) when none is given. A row that sees no key is zero.
std::vector<double> independent_attention(const Problem& p) {
  const Shape& s = p.shape;
  const std::size_t d = s.head_dim;
  // Options::scale is a float; its default, 1 / sqrt(head_dim), too.
  const double scale = p.options.scale ? double(*p.options.scale)
                                       : double(static_cast<float>(1.0 / std::sqrt(double(d))));
  std::vector<double> o(s.q_elements(), 0.0), score(s.kv_len);
  for (std::size_t b = 0; b < s.batch; ++b) {
    for (std::size_t h = 0; h < s.q_heads; ++h) {
      const std::size_t kvh = h / (s.q_heads / s.kv_heads);
      for (std::size_t i = 0; i < s.q_len; ++i) {
        const float* qi = &p.q[((b * s.q_heads + h) * s.q_len + i) * d];
        double* oi = &o[((b * s.q_heads + h) * s.q_len + i) * d];
        const auto k_at = [&](std::size_t j) {
          return &p.k[((b * s.kv_heads + kvh) * s.kv_len + j) * d];
        };
        const auto v_at = [&](std::size_t j) {
          return &p.v[((b * s.kv_heads + kvh) * s.kv_len + j) * d];
        };
        // Row i's diagonal key: i + kv_len - q_len (bottom-right) or i (top-left). Key j is
        // visible when j <= diagonal (causal), j <= diagonal + right and j > diagonal - left.
        const long long diagonal = p.options.alignment == Alignment::top_left
                                       ? (long long)i
                                       : (long long)i + (long long)s.kv_len - (long long)s.q_len;
        const auto visible = [&](std::size_t j) {
          const long long key = (long long)j;
          const auto& o = p.options;
          return (!o.causal || key <= diagonal) &&
                 (!o.window_right || key <= diagonal + (long long)*o.window_right) &&
                 (!o.window_left || key > diagonal - (long long)*o.window_left);
        };
        double m = -INFINITY;
        for (std::size_t j = 0; j < s.kv_len; ++j) {
          if (!visible(j)) continue;
          double dot = 0;
          for (std::size_t c = 0; c < d; ++c) dot += double(qi[c]) * double(k_at(j)[c]);
          score[j] = scale * dot;
          m = std::max(m, score[j]);
        }
        if (m == -INFINITY) continue;
        double l = 0;
        for (std::size_t j = 0; j < s.kv_len; ++j) {
          if (visible(j)) l += std::exp(score[j] - m);
        }
        for (std::size_t j = 0; j < s.kv_len; ++j) {
          if (!visible(j)) continue;
          const double w = std::exp(score[j] - m) / l;
          for (std::size_t c = 0; c < d; ++c) oi[c] += w * double(v_at(j)[c]);
        }
      }
    }
  }
  return o;
}

struct IndependentCase {
  Shape shape;
  Masking mask;
  std::optional<float> scale;
};

// Heads where h / group and h % kv_heads differ (6 over 3: group 2; 4 over 2; 8 over 2), causal
// with q_len < kv_len, q_len > kv_len (masked rows) and equal, the default scale and others.
std::vector<IndependentCase> independent_cases() {
  return {{{2, 6, 3, 5, 9, 4}, true, std::nullopt},
          {{1, 4, 2, 9, 5, 3}, true, 0.37f},
          {{2, 8, 2, 7, 7, 5}, true, std::nullopt},
          {{1, 6, 3, 6, 11, 8}, false, -1.3f},
          {{1, 4, 1, 3, 40, 16}, true, 0.05f},
          {{2, 6, 2, 12, 4, 2}, true, std::nullopt},
          {{1, 6, 3, 4, 4097, 8}, true, 0.21f},
          // windows and the top-left alignment, q_len above, below and at kv_len
          {{1, 2, 1, 9, 13, 4}, Masking(true, Alignment::bottom_right, 3), std::nullopt},
          {{1, 2, 1, 9, 13, 4}, Masking(true, Alignment::top_left, 3), std::nullopt},
          {{1, 2, 2, 13, 9, 4}, Masking(true, Alignment::top_left, 2), 0.4f},
          {{1, 2, 2, 13, 9, 4}, Masking(true, Alignment::bottom_right, 20), 0.4f},
          {{1, 1, 1, 11, 11, 3}, Masking(false, Alignment::bottom_right, 2, 3), std::nullopt},
          {{1, 1, 1, 7, 12, 3}, Masking(false, Alignment::top_left, std::nullopt, 1), 0.7f},
          {{2, 2, 1, 5, 300, 8}, Masking(true, Alignment::bottom_right, 1), std::nullopt}};
}

// The oracle against the independent reference: they agree to double's rounding, far below what a
// wrong mask (a key more or less), a scale off by one float ulp's worth of 0.1 %, or a wrong head
// would change. Every kernel is then held to the oracle (kernels_test), so to this too; and one
// kernel, the default, against it directly.
TEST(IndependentReference, OracleAndDefaultKernelAgreeWithIt) {
  for (const IndependentCase& ic : independent_cases()) {
    Problem p = random_problem(ic.shape, ic.mask, 41);
    p.options.scale = ic.scale;
    const std::vector<double> want = independent_attention(p);
    const OracleAnswer ref = solve(p);
    double largest = 0;
    for (double x : want) largest = std::fmax(largest, std::fabs(x));
    for (std::size_t x = 0; x < want.size(); ++x) {
      ASSERT_NEAR(ref.o[x], want[x], 1e-12 * (1 + largest))
          << shape_name(ic.shape) << ic.mask.name() << ", element " << x;
    }
    Workspace ws;
    const std::vector<float> out = run(default_kernel(), p, ws);
    OracleAnswer independent = ref;
    independent.o = want;
    check_against_oracle(p, out, independent);
  }
}

// The independent reference is itself no formality: each of the bugs it exists for, applied to
// it, moves it far off the oracle.
TEST(IndependentReference, SeesAWrongMaskScaleAndHead) {
  Problem p = random_problem({1, 6, 3, 5, 9, 4}, true, 43);
  const std::vector<double> ref = solve(p).o;
  auto largest_difference = [&](const Problem& changed) {
    const std::vector<double> o = independent_attention(changed);
    double worst = 0;
    for (std::size_t x = 0; x < o.size(); ++x) worst = std::fmax(worst, std::fabs(o[x] - ref[x]));
    return worst;
  };
  EXPECT_LT(largest_difference(p), 1e-12);
  Problem scaled = p;
  scaled.options.scale = 1.001f / 2.0f;  // the default 1 / sqrt(4), off by 0.1 %
  EXPECT_GT(largest_difference(scaled), 1e-6);
  Problem unmasked = p;
  unmasked.options.causal = false;
  EXPECT_GT(largest_difference(unmasked), 1e-3);
  Problem heads = p;  // key/value heads 1 and 2 swapped: queries 2-5 read the wrong one
  std::swap_ranges(heads.k.begin() + 36, heads.k.begin() + 72, heads.k.begin() + 72);
  std::swap_ranges(heads.v.begin() + 36, heads.v.begin() + 72, heads.v.begin() + 72);
  EXPECT_GT(largest_difference(heads), 1e-3);
}

// KeyMask's other views agree with its rows: rows(i, count) is the union of those rows' keys,
// [first_row(j), last_row(j)) the rows that see key j, window_start(i) the first key the window
// reaches; over windows, both alignments and q_len on both sides of kv_len.
TEST(IndependentReference, KeyMaskViewsAgreeWithItsRows) {
  for (Alignment a : {Alignment::bottom_right, Alignment::top_left}) {
    for (auto [q_len, kv_len] : {std::pair{9, 13}, {13, 9}, {10, 10}, {1, 7}, {7, 1}}) {
      for (const Masking& m : {Masking(false), Masking(true, a, std::nullopt), Masking(true, a, 1),
                               Masking(true, a, 4), Masking(false, a, 3, 2),
                               Masking(false, a, std::nullopt, 0), Masking(false, a, 30, 30)}) {
        Options o;
        m.apply(o);
        const KeyMask mask(std::size_t(q_len), std::size_t(kv_len), o);
        const std::string name = std::to_string(q_len) + "x" + std::to_string(kv_len) + m.name();
        for (std::size_t j = 0; j < std::size_t(kv_len); ++j) {
          for (std::size_t i = 0; i < std::size_t(q_len); ++i) {
            const KeySpan keys = mask.row(i);
            const bool sees = keys.begin <= j && j < keys.end;
            EXPECT_EQ(sees, mask.first_row(j) <= i && i < mask.last_row(j))
                << name << " row " << i << " key " << j;
          }
        }
        for (std::size_t i = 0; i < std::size_t(q_len); ++i) {
          EXPECT_EQ(mask.row(i).begin, std::min(mask.window_start(i), mask.row(i).end)) << name;
          for (std::size_t count = 1; i + count <= std::size_t(q_len); ++count) {
            std::size_t begin = std::size_t(kv_len), end = 0;
            for (std::size_t r = i; r < i + count; ++r) {
              if (mask.row(r).empty()) continue;
              begin = std::min(begin, mask.row(r).begin);
              end = std::max(end, mask.row(r).end);
            }
            const KeySpan all = mask.rows(i, count);
            if (end > begin) {  // rows that see keys: rows() spans them (and may start earlier)
              EXPECT_LE(all.begin, begin) << name << " rows " << i << "+" << count;
              EXPECT_EQ(all.end, end) << name << " rows " << i << "+" << count;
            }
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Mutants
// ---------------------------------------------------------------------------------------------

// A mutant's output on a problem.
using Mutant = std::function<std::vector<float>(const Problem&)>;

struct Verdict {
  bool analytic;  // rejected by the analytic row bound
  bool plain;     // rejected by the plain-float32 criterion
};

Verdict judge(const Problem& p, const std::vector<float>& out) {
  const OracleAnswer ref = solve(p);
  return {bool(compare_with_bound(p.view(), out.data(), ref.yardstick()).mismatch),
          bool(compare_with_plain(p.view(), out.data(), ref.yardstick()).mismatch)};
}

// Every (shape, seed) must be rejected by the criteria; prints, per shape, how many seeds the
// analytic bound alone passes (what the suite caught before the plain-float32 criterion).
void expect_rejected(const char* mutant_name, const Mutant& mutant,
                     const std::vector<Shape>& shapes, bool causal, std::uint32_t seeds,
                     bool outliers = false) {
  for (const Shape& shape : shapes) {
    std::size_t analytic_passes = 0;
    for (std::uint32_t seed = 1; seed <= seeds; ++seed) {
      Problem p = random_problem(shape, causal, seed);
      if (outliers) add_outliers(p);
      const Verdict v = judge(p, mutant(p));
      analytic_passes += !v.analytic;
      EXPECT_TRUE(v.analytic || v.plain)
          << mutant_name << " passes on " << shape_name(shape) << ", seed " << seed;
    }
    std::printf("mutant %s on %s%s: the analytic bound alone passes %zu of %u seeds\n", mutant_name,
                shape_name(shape).c_str(), causal ? " causal" : "", analytic_passes, seeds);
  }
}

// The problem restricted to its first `keys` keys (and values), every head.
Problem first_keys(const Problem& p, std::size_t keys) {
  Shape s = p.shape;
  s.kv_len = keys;
  Problem cut(s, p.options);
  cut.q = p.q;
  const std::size_t d = s.head_dim;
  for (std::size_t head = 0; head < s.batch * s.kv_heads; ++head) {
    std::copy_n(p.k.begin() + head * p.shape.kv_len * d, keys * d, cut.k.begin() + head * keys * d);
    std::copy_n(p.v.begin() + head * p.shape.kv_len * d, keys * d, cut.v.begin() + head * keys * d);
  }
  return cut;
}

// The correct default kernel on a problem changed by `change`.
Mutant kernel_on(std::function<Problem(const Problem&)> change) {
  return [change](const Problem& p) {
    Workspace ws;
    return run(default_kernel(), change(p), ws);
  };
}

// A kernel that splits the keys into chunks of 2048 (the tiled kernels' decoding split,
// kKeyChunk) but counts them kv_len / 2048, rounding down: the last, short chunk is never seen.
TEST(Mutants, DropTheLastKeyChunk) {
  const Mutant mutant =
      kernel_on([](const Problem& p) { return first_keys(p, p.shape.kv_len / 2048 * 2048); });
  expect_rejected("drop the last key chunk", mutant,
                  {{1, 1, 1, 3, 4097, 33},
                   {1, 1, 1, 1, 5000, 64},
                   {2, 4, 2, 7, 6000, 16},
                   {1, 1, 1, 4, 4105, 8},
                   {1, 2, 1, 1, 6295, 3}},
                  false, 20);
}

TEST(Mutants, DropTheLastKey) {
  const Mutant mutant =
      kernel_on([](const Problem& p) { return first_keys(p, p.shape.kv_len - 1); });
  expect_rejected("drop the last key", mutant,
                  {{1, 1, 1, 17, 1000, 64}, {1, 1, 1, 3, 4097, 33}, {1, 2, 1, 2, 16384, 64}}, false,
                  10);
}

TEST(Mutants, ScaleOffByATenthOfAPercent) {
  const Mutant mutant = kernel_on([](const Problem& p) {
    Problem off = p;
    off.options.scale = effective_scale(p.shape, p.options) * 1.001f;
    return off;
  });
  expect_rejected("scale off by 0.1 %", mutant,
                  {{1, 1, 1, 64, 64, 64}, {1, 1, 1, 100, 1000, 128}, {1, 1, 1, 2, 16384, 64}},
                  false, 5);
  expect_rejected("scale off by 0.1 %, causal", mutant, {{1, 2, 1, 200, 1000, 128}}, true, 3);
}

// Calls row(at, i, visible) for query row i of every (batch, query head) that sees a key, at its
// offsets `at`: the loop both float mutants below share.
template <class Row>
void for_each_row(const Problem& p, Row&& row) {
  const Shape& s = p.shape;
  for (std::size_t b = 0; b < s.batch; ++b) {
    for (std::size_t h = 0; h < s.q_heads; ++h) {
      const HeadOffsets at = head_offsets(s, b, h);
      for (std::size_t i = 0; i < s.q_len; ++i) {
        // K and V from the first key the row sees
        const KeySpan keys = visible_keys(s, p.options, i);
        HeadOffsets from = at;
        from.kv += keys.begin * s.head_dim;
        if (!keys.empty()) row(from, i, keys.size());
      }
    }
  }
}

// Plain float32 attention, one row at a time, with a hook on each row's weights before the blend.
std::vector<float> float_attention(const Problem& p,
                                   const std::function<void(std::vector<float>&)>& weights_hook) {
  const Shape& s = p.shape;
  const std::size_t d = s.head_dim;
  const float scale = effective_scale(s, p.options);
  std::vector<float> o(s.q_elements(), 0.0f), w(s.kv_len);
  for_each_row(p, [&](const HeadOffsets& at, std::size_t i, std::size_t n) {
    float m = -INFINITY, l = 0;
    for (std::size_t j = 0; j < n; ++j) {
      float dot = 0;
      for (std::size_t c = 0; c < d; ++c) dot += p.q[at.q + i * d + c] * p.k[at.kv + j * d + c];
      w[j] = scale * dot;
      m = std::max(m, w[j]);
    }
    for (std::size_t j = 0; j < n; ++j) l += w[j] = std::exp(w[j] - m);
    for (std::size_t j = 0; j < n; ++j) w[j] /= l;
    std::vector<float> row(w.begin(), w.begin() + std::ptrdiff_t(n));
    weights_hook(row);
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t c = 0; c < d; ++c) o[at.q + i * d + c] += row[j] * p.v[at.kv + j * d + c];
    }
  });
  return o;
}

// Softmax weights stored in 16 bits (IEEE half) before the blend, as a kernel keeping P in f16
// would.
TEST(Mutants, WeightsRoundedToHalf) {
  const Mutant mutant = [](const Problem& p) {
    return float_attention(p, [](std::vector<float>& w) {
      for (float& x : w) x = round_to(KvType::f16, x);
    });
  };
  expect_rejected("weights rounded to fp16", mutant,
                  {{1, 1, 1, 64, 64, 64}, {1, 1, 1, 100, 1000, 128}, {1, 1, 1, 2, 16384, 64}},
                  false, 5);
  // The same loop without the rounding passes: the mutant's only flaw is the rounding.
  const Problem p = random_problem({1, 1, 1, 100, 1000, 128}, false, 1);
  const Verdict v = judge(p, float_attention(p, [](std::vector<float>&) {}));
  EXPECT_FALSE(v.analytic || v.plain);
}

// Query head h reading key/value head h % kv_heads instead of h / (q_heads / kv_heads): the
// default kernel on a problem with one key/value head per query head, copied by the wrong map.
TEST(Mutants, WrongGqaHead) {
  const Mutant mutant = kernel_on([](const Problem& p) {
    Shape s = p.shape;
    s.kv_heads = s.q_heads;
    Problem wrong(s, p.options);
    wrong.q = p.q;
    const std::size_t head = s.kv_len * s.head_dim;
    for (std::size_t b = 0; b < s.batch; ++b) {
      for (std::size_t h = 0; h < s.q_heads; ++h) {
        const std::size_t from = (b * p.shape.kv_heads + h % p.shape.kv_heads) * head;
        std::copy_n(p.k.begin() + from, head, wrong.k.begin() + (b * s.q_heads + h) * head);
        std::copy_n(p.v.begin() + from, head, wrong.v.begin() + (b * s.q_heads + h) * head);
      }
    }
    return wrong;
  });
  expect_rejected("wrong GQA head", mutant, {{2, 6, 3, 17, 65, 8}, {1, 4, 2, 33, 70, 16}}, false,
                  3);
  expect_rejected("wrong GQA head, causal", mutant, {{2, 6, 3, 17, 65, 8}}, true, 3);
}

// The online softmax in float, key blocks of 16 (FlashAttention's loop), where row `bad` forgets
// to rescale its accumulator when the running max moves: O = O * exp(m_old - m_new) + P V is left
// as O = O + P V.
std::vector<float> online_softmax(const Problem& p, std::size_t bad) {
  const Shape& s = p.shape;
  const std::size_t d = s.head_dim, Bc = 16;
  const float scale = effective_scale(s, p.options);
  std::vector<float> out(s.q_elements(), 0.0f), O(d);
  for_each_row(p, [&](const HeadOffsets& at, std::size_t i, std::size_t n) {
    float m = -INFINITY, l = 0;
    std::fill(O.begin(), O.end(), 0.0f);
    for (std::size_t j0 = 0; j0 < n; j0 += Bc) {
      const std::size_t j1 = std::min(n, j0 + Bc);
      float s_block[16], m_new = m;
      for (std::size_t j = j0; j < j1; ++j) {
        float dot = 0;
        for (std::size_t c = 0; c < d; ++c) dot += p.q[at.q + i * d + c] * p.k[at.kv + j * d + c];
        s_block[j - j0] = scale * dot;
        m_new = std::max(m_new, s_block[j - j0]);
      }
      const float rescale = std::exp(m - m_new);
      l *= rescale;
      if (i != bad) {
        for (float& x : O) x *= rescale;  // O = O * exp(m_old - m_new)
      }
      for (std::size_t j = j0; j < j1; ++j) {
        const float pj = std::exp(s_block[j - j0] - m_new);
        l += pj;
        for (std::size_t c = 0; c < d; ++c) O[c] += pj * p.v[at.kv + j * d + c];  // + P V
      }
      m = m_new;
    }
    for (std::size_t c = 0; c < d; ++c) out[at.q + i * d + c] = O[c] / l;
  });
  return out;
}

TEST(Mutants, OneRowSkipsItsRescale) {
  const Mutant mutant = [](const Problem& p) { return online_softmax(p, p.shape.q_len / 2); };
  expect_rejected("one row's rescale skipped", mutant,
                  {{1, 1, 1, 17, 1000, 64}, {1, 1, 1, 200, 200, 64}}, false, 3, true);
  expect_rejected("one row's rescale skipped, causal", mutant, {{1, 1, 1, 200, 200, 64}}, true, 3,
                  true);
  expect_rejected("one row's rescale skipped, no outliers", mutant, {{1, 1, 1, 9, 1000, 64}}, false,
                  5);
  // Every row rescaling, the same loop passes.
  Problem p = random_problem({1, 1, 1, 17, 1000, 64}, false, 1);
  add_outliers(p);
  const Verdict v = judge(p, online_softmax(p, SIZE_MAX));
  EXPECT_FALSE(v.analytic || v.plain);
}

}  // namespace
}  // namespace attnbench::testing
