// attnbench_bench's progress line on stderr, beside Google Benchmark's own table.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace attnbench::bench {

// Prints "[<preset> k/N] name ... elapsed, ETA" on stderr as each point finishes, then the usual
// table: the preset in every line, so a log's tail says which run it is.
class ProgressReporter : public benchmark::ConsoleReporter {
 public:
  // `predicted`: every registered point's predicted seconds (its size is the number of points);
  // `preset`: the preset's name.
  ProgressReporter(const std::map<std::string, double>& predicted, std::string preset)
      : predicted_(predicted),
        preset_(std::move(preset)),
        total_(predicted.size()),
        start_(Clock::now()) {
    for (const auto& [name, seconds] : predicted) predicted_total_ += seconds;
  }

  // One call of `name`'s benchmark function ran, which did `done` of the predicted seconds (a
  // repetition's, a warm-up's, or none for a run of the iteration search). With repetitions
  // interleaved at random Google Benchmark reports a point only after its last repetition, late in
  // the run; the benchmark then calls this instead, and the line counts calls from the first one.
  void ran(const std::string& name, double done) {
    per_call_ = true;
    ++calls_;
    line("[" + preset_ + " call " + std::to_string(calls_) + ", " + std::to_string(total_) +
             " points]",
         name, done);
  }

  void ReportRuns(const std::vector<Run>& runs) override {
    if (!runs.empty() && !per_call_) {
      // The registered name, without the suffixes Google Benchmark appends (/repeats:3, ...).
      const std::string name = runs.front().run_name.function_name;
      if (seen_.insert(name).second) {
        line(
            "[" + preset_ + " " + std::to_string(seen_.size()) + "/" + std::to_string(total_) + "]",
            name, predicted_of(name));
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }

 private:
  using Clock = std::chrono::steady_clock;

  double predicted_of(const std::string& name) const {
    const auto it = predicted_.find(name);
    return it == predicted_.end() ? 0 : it->second;
  }
  // "<tag> name ... elapsed, ETA" on stderr, `done` more predicted seconds done. The ETA is the
  // predicted seconds left, scaled by how the run has kept to its predictions so far; that pace
  // starts from the prediction's (kPacePrior seconds of it, or 5% of the run if less), so the first
  // few calls, a warm-up's allocation among them, cannot swing it (a first call's pace alone had
  // read "ETA 1809716 s").
  void line(const std::string& tag, const std::string& name, double done) {
    done_predicted_ += done;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    const double prior = std::min(kPacePrior, 0.05 * predicted_total_);
    const double pace = prior > 0 ? (elapsed + prior) / (done_predicted_ + prior) : 1.0;
    const double eta = std::max(0.0, predicted_total_ - done_predicted_) * pace;
    std::fprintf(stderr, "%s %s ... %.0f s elapsed, ETA %.0f s\n", tag.c_str(), name.c_str(),
                 elapsed, eta);
  }

  static constexpr double kPacePrior = 30.0;
  const std::map<std::string, double>& predicted_;
  std::string preset_;
  std::size_t total_;
  double predicted_total_ = 0;
  Clock::time_point start_;
  std::set<std::string> seen_;
  double done_predicted_ = 0;
  bool per_call_ = false;
  std::size_t calls_ = 0;
};

}  // namespace attnbench::bench
