// attnbench_bench's progress line on stderr, beside Google Benchmark's own table.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace attnbench::bench {

// Prints "[k/N] name ... elapsed, ETA" on stderr as each point finishes, then the usual table.
class ProgressReporter : public benchmark::ConsoleReporter {
 public:
  // `predicted`: every registered point's predicted seconds (its size is the number of points).
  explicit ProgressReporter(const std::map<std::string, double>& predicted)
      : predicted_(predicted), total_(predicted.size()), start_(Clock::now()) {}
  // With repetitions interleaved at random a point is reported only after its last repetition,
  // late in the run: then the points call ran() from each call of their benchmark instead, and
  // the line counts calls.
  void count_calls() { per_call_ = true; }
  // One call of `name`'s benchmark function ran: `share` of its predicted seconds done.
  void ran(const std::string& name, double share) {
    ++calls_;
    done_predicted_ += predicted_.count(name) ? share * predicted_.at(name) : 0;
    double total = 0;
    for (const auto& [n, t] : predicted_) total += t;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    const double eta = done_predicted_ > 0
                           ? elapsed * std::max(0.0, total - done_predicted_) / done_predicted_
                           : 0;
    std::fprintf(stderr, "[call %zu, %zu points] %s ... %.0f s elapsed, ETA %.0f s\n", calls_,
                 total_, name.c_str(), elapsed, eta);
  }

  void ReportRuns(const std::vector<Run>& runs) override {
    if (!runs.empty() && !per_call_) {
      // The registered name, without the suffixes Google Benchmark appends (/repeats:3, ...).
      const std::string name = runs.front().run_name.function_name;
      if (seen_.insert(name).second) {
        done_predicted_ += predicted_.count(name) ? predicted_.at(name) : 0;
        const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
        double remaining = 0;
        for (const auto& [n, t] : predicted_) remaining += seen_.count(n) ? 0 : t;
        const double eta = done_predicted_ > 0 ? elapsed * remaining / done_predicted_ : 0;
        std::fprintf(stderr, "[%zu/%zu] %s ... %.0f s elapsed, ETA %.0f s\n", seen_.size(), total_,
                     name.c_str(), elapsed, eta);
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }

 private:
  using Clock = std::chrono::steady_clock;
  const std::map<std::string, double>& predicted_;
  std::size_t total_;
  Clock::time_point start_;
  std::set<std::string> seen_;
  double done_predicted_ = 0;
  bool per_call_ = false;
  std::size_t calls_ = 0;
};

}  // namespace attnbench::bench
