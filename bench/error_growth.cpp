// attnbench_error: how each kernel's fp32 error against the float64 oracle grows with the key
// length and with the size of the scores, next to the bound the tests hold it to
// (testing/error_bound.hpp). Prints two Markdown tables (docs/studies/2026-11-30-error-growth.md):
//   1. error against key length n, scores of standard deviation 1;
//   2. error against the scores' standard deviation at one key length;
//   3. how far storing K and V as float16 or bfloat16 moves the exact output: the float64 oracle
//      on the rounded K and V against the oracle on the originals, per key length (what a kernel
//      storing that type computes on top of its own fp32 error, which tables 1 and 2 bound).
// Q and K are standard normal (seeded), the scale 1/sqrt(d), so scores have standard deviation
// 1; multiplying Q by s gives standard deviation s. V is uniform in [0, 1) by default: values of
// one sign, so the output stays near 0.5 at every n and the rounding of long sums shows; with
// standard-normal V (--values normal) the output shrinks like 1/sqrt(n) and so does its error.
// Errors are in units of u * Vmax (u = 2^-24, Vmax the largest |v|), the units in which the
// bound reads 2 (d + 4) sigma + 2 n + 32.
//   attnbench_error [--n 64,256,1024,4096,16384] [--std 1,8,64] [--std-at 1024] [--q 64] [--d 64]
//                   [--values positive|normal]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <attnbench/attnbench.hpp>
#include "testing/error_bound.hpp"
#include "testing/problem.hpp"

namespace {

using attnbench::Kernel;

struct Problem : attnbench::testing::Problem {
  std::vector<double> ref;
};

// Standard-normal Q and K for one key length, Q times `score_std`, V uniform in [0, 1) or
// standard normal, and the oracle's answer.
Problem make_problem(std::size_t q_len, std::size_t kv_len, std::size_t d, float score_std,
                     bool normal_values) {
  Problem p{attnbench::testing::Problem({1, 1, 1, q_len, kv_len, d}), {}};
  attnbench::testing::RandomFill fill(static_cast<std::uint32_t>(kv_len * 131 + d));
  fill.normal(p.q, score_std);
  fill.normal(p.k);
  if (normal_values) {
    fill.normal(p.v);
  } else {
    fill.uniform(p.v);
  }
  p.ref = attnbench::testing::oracle(p);
  return p;
}

struct Measured {
  double error = 0;  // max |o - o_ref| / (u Vmax)
  double ratio = 0;  // max |o - o_ref| / bound, over the elements
  double bound = 0;  // the bound of the row with the largest error, in units of u Vmax
};

double vmax(const Problem& p) {
  double m = 0;
  for (float x : p.v) m = std::max(m, double(std::fabs(x)));
  return m;
}

Measured measure(const Kernel& kernel, const Problem& p) {
  std::vector<float> out(p.shape.q_elements());
  attnbench::Workspace ws;
  attnbench::attention(kernel, p.shape, p.options, {p.q.data(), p.k.data(), p.v.data(), out.data()},
                       ws);
  const double unit = std::ldexp(1.0, -24) * vmax(p);
  const std::size_t d = p.shape.head_dim;
  Measured m;
  for (std::size_t i = 0; i < p.shape.q_len; ++i) {
    const double bound = attnbench::testing::row_bound(p.view(), 0, 0, i);
    for (std::size_t c = 0; c < d; ++c) {
      const double err = std::fabs(double(out[i * d + c]) - p.ref[i * d + c]);
      if (err / unit > m.error) {
        m.error = err / unit;
        m.bound = bound / unit;
      }
      m.ratio = std::max(m.ratio, err / bound);
    }
  }
  return m;
}

// Every kernel with code of its own that this CPU runs (dispatching entries are their ISA variant).
std::vector<const Kernel*> kernels() {
  std::vector<const Kernel*> list;
  for (const Kernel& k : attnbench::registry()) {
    if (!k.dispatches && k.available()) list.push_back(&k);
  }
  return list;
}

template <class Column>
void print_table(const char* title, const std::vector<Column>& columns, const char* column_name,
                 const std::map<std::string, std::vector<Measured>>& rows) {
  std::printf("\n%s\n\n| kernel |", title);
  for (const Column& c : columns) std::printf(" %s %s |", column_name, std::to_string(c).c_str());
  std::printf("\n|---|");
  for (std::size_t i = 0; i < columns.size(); ++i) std::printf("---:|");
  std::printf("\n");
  std::vector<double> bound(columns.size(), 0), ratio(columns.size(), 0);
  for (const auto& [name, cells] : rows) {
    std::printf("| `%s` |", name.c_str());
    for (std::size_t i = 0; i < cells.size(); ++i) {
      std::printf(" %.3g |", cells[i].error);
      bound[i] = std::max(bound[i], cells[i].bound);
      ratio[i] = std::max(ratio[i], cells[i].ratio);
    }
    std::printf("\n");
  }
  if (*std::max_element(bound.begin(), bound.end()) == 0) return;  // no bound (table 3)
  std::printf("| *bound there* |");
  for (double b : bound) std::printf(" *%.3g* |", b);
  std::printf("\n| *max error / bound* |");
  for (double r : ratio) std::printf(" *%.2g* |", r);
  std::printf("\n");
}

// max |oracle(K, V rounded to type) - oracle(K, V)| over the output, in units of u * Vmax; with
// `query`, Q rounded to q8_0 as well (Options::quantise_query).
Measured rounding_shift(const Problem& p, attnbench::KvType type, bool query = false) {
  attnbench::testing::Problem r = p;
  const std::size_t d = p.shape.head_dim;
  for (auto* t : {&r.k, &r.v}) {
    for (std::size_t row = 0; row < t->size(); row += d)
      attnbench::round_row(type, t->data() + row, t->data() + row, d);
  }
  for (std::size_t row = 0; query && row < r.q.size(); row += d)
    attnbench::round_row(attnbench::KvType::q8_0, r.q.data() + row, r.q.data() + row, d);
  const std::vector<double> moved = attnbench::testing::oracle(r);
  Measured m;
  for (std::size_t i = 0; i < moved.size(); ++i)
    m.error = std::max(m.error, std::fabs(moved[i] - p.ref[i]));
  m.error /= std::ldexp(1.0, -24) * vmax(p);
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "fp32 error of every kernel against the float64 oracle, by key length and score size"};
  std::vector<std::size_t> lengths{64, 256, 1024, 4096, 16384};
  std::vector<int> stds{1, 8, 64};
  std::size_t std_at = 1024, q_len = 64, d = 64;
  std::string values = "positive";
  app.add_option("--n", lengths, "key lengths for table 1")->delimiter(',');
  app.add_option("--std", stds, "score standard deviations for table 2")->delimiter(',');
  app.add_option("--std-at", std_at, "key length of table 2");
  app.add_option("--q", q_len, "query rows");
  app.add_option("--d", d, "head dim");
  app.add_option("--values", values, "V uniform in [0, 1) (positive) or standard normal (normal)")
      ->check(CLI::IsMember({"positive", "normal"}));
  CLI11_PARSE(app, argc, argv);

  const std::vector<const Kernel*> list = kernels();
  std::map<std::string, std::vector<Measured>> by_length, by_std;
  std::map<std::string, std::vector<Measured>> by_type;
  for (std::size_t n : lengths) {
    const Problem p = make_problem(q_len, n, d, 1.0f, values == "normal");
    for (const Kernel* k : list) by_length[std::string(k->name)].push_back(measure(*k, p));
    for (attnbench::KvType t : {attnbench::KvType::f16, attnbench::KvType::bf16,
                                attnbench::KvType::q8_0, attnbench::KvType::q4_0})
      by_type[std::string("storage ") + std::string(to_string(t))].push_back(rounding_shift(p, t));
    for (attnbench::KvType t : {attnbench::KvType::q8_0, attnbench::KvType::q4_0}) {
      by_type[std::string("storage ") + std::string(to_string(t)) + ", query q8_0"].push_back(
          rounding_shift(p, t, true));
    }
  }
  for (int s : stds) {
    const Problem p = make_problem(q_len, std_at, d, float(s), values == "normal");
    for (const Kernel* k : list) by_std[std::string(k->name)].push_back(measure(*k, p));
  }

  std::printf(
      "# max |o - o_ref| over %zu query rows, d = %zu, in units of u * Vmax "
      "(u = 2^-24; Q, K standard normal; V %s)\n",
      q_len, d, values == "normal" ? "standard normal" : "uniform in [0, 1)");
  print_table("Error against key length (scores of standard deviation 1):", lengths,
              "n =", by_length);
  char title[128];
  std::snprintf(title, sizeof title, "Error against score size (n = %zu):", std_at);
  print_table(title, stds, "std", by_std);
  std::printf(
      "\nHow far K and V stored as float16 / bfloat16 / q8_0 / q4_0 (and, for the quantised types, "
      "Q "
      "rounded to q8_0 too: quantise_query) move the exact output (float64 oracle on the rounded "
      "values against it on the originals; same units):\n");
  print_table("Storage rounding against key length:", lengths, "n =", by_type);
  return 0;
}
