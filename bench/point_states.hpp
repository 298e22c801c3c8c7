// The outputs and workspaces of the matrix's points, kept warm across a point's repetitions.
//
// A point's first call allocates and touches them (an untimed call); its later repetitions reuse
// them, so no timed call pays page faults. With repetitions interleaved at random across the
// matrix (scripts/study.sh asks for it, so that a ratio between two points has both sides spread
// over the same minutes), a point's repetitions are far apart: the states of the points in
// between are kept too, least recently used first out, up to a memory cap (an eighth of the RAM;
// a state over a quarter of that, such as a naive score matrix at n = 16384, is kept only until
// another point runs, so interleaved, it is set up again at each repetition). The resident
// high-water mark a point reports leaves out the other points' kept states, so a point's RSS reads
// as if it ran alone.
#pragma once

#include <algorithm>
#include <cstddef>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include <attnbench/attnbench.hpp>

namespace attnbench::bench {

struct PointState {
  std::string point;  // the name of the point it was made for
  std::vector<float> o, lse, dq, dk, dv;
  std::unique_ptr<attnbench::Workspace> ws = std::make_unique<attnbench::Workspace>();
  std::size_t forward_scratch = 0, backward_scratch = 0;  // each pass's workspace peak

  // What it holds resident: its outputs and its workspace's peak.
  std::size_t bytes() const {
    std::size_t floats = 0;
    for (const std::vector<float>* t : {&o, &lse, &dq, &dk, &dv}) floats += t->capacity();
    return floats * sizeof(float) +
           std::max(ws->peak_bytes(), std::max(forward_scratch, backward_scratch));
  }
};

class PointStates {
 public:
  explicit PointStates(std::size_t cap_bytes) : cap_(cap_bytes) {}

  // The state of `point` when one is kept (moved to the front: used last), else nullptr.
  PointState* find(const std::string& point) {
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
      if ((*it)->point == point) {
        kept_.splice(kept_.begin(), kept_, it);
        return kept_.front().get();
      }
    }
    return nullptr;
  }

  // A fresh state for `point`, which will hold about `expected` bytes, after freeing what the cap
  // asks: a kept state over a quarter of the cap (kept only while it is the last one used), every
  // kept state if `expected` is over a quarter of the cap, else the least recently used until
  // `expected` fits beside the rest.
  PointState& make(const std::string& point, std::size_t expected) {
    kept_.remove_if([&](const std::unique_ptr<PointState>& s) { return s->bytes() > cap_ / 4; });
    if (expected > cap_ / 4) {
      kept_.clear();
    } else {
      while (!kept_.empty() && kept_bytes() + expected > cap_) kept_.pop_back();
    }
    kept_.push_front(std::make_unique<PointState>());
    kept_.front()->point = point;
    return *kept_.front();
  }

  // Resident bytes of the kept states other than `state`.
  std::size_t others_bytes(const PointState* state) const {
    std::size_t sum = 0;
    for (const auto& s : kept_) sum += s.get() == state ? 0 : s->bytes();
    return sum;
  }

  // Forgets `point`'s state (its first call failed).
  void forget(const std::string& point) {
    kept_.remove_if([&](const std::unique_ptr<PointState>& s) { return s->point == point; });
  }

 private:
  std::size_t kept_bytes() const { return others_bytes(nullptr); }

  std::size_t cap_;
  std::list<std::unique_ptr<PointState>> kept_;
};

}  // namespace attnbench::bench
