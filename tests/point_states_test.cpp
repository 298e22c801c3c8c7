// The benchmark's cache of warm point states (bench/point_states.hpp): least recently used out
// beyond the cap, a state over a quarter of the cap kept only while it is the last one used, and
// the resident bytes of the others, which a point's RSS leaves out.
#include "point_states.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <string>

namespace {

using attnbench::bench::PointState;
using attnbench::bench::PointStates;

constexpr std::size_t kCap = 1000 * sizeof(float);  // a quarter: 250 floats

// A state holding `floats` floats of output (its workspace never used: peak 0).
PointState& make(PointStates& states, const std::string& point, std::size_t floats) {
  PointState& s = states.make(point, floats * sizeof(float));
  s.o.assign(floats, 0.0f);
  s.o.shrink_to_fit();
  return s;
}

TEST(PointStates, KeepsStatesUntilTheCapThenDropsTheLeastRecentlyUsed) {
  PointStates states(kCap);
  make(states, "a", 200);
  make(states, "b", 200);
  make(states, "c", 200);
  EXPECT_NE(states.find("a"), nullptr);  // a is now the most recently used
  make(states, "d", 200);
  make(states, "e", 200);  // 1000 floats: all fit
  EXPECT_NE(states.find("b"), nullptr);
  make(states, "f", 200);  // over the cap by one state: the least recently used, c, goes
  EXPECT_EQ(states.find("c"), nullptr);
  for (const char* kept : {"a", "b", "d", "e", "f"}) EXPECT_NE(states.find(kept), nullptr) << kept;
}

TEST(PointStates, ALargeStateIsKeptOnlyWhileItIsTheLastUsed) {
  PointStates states(kCap);
  make(states, "small", 100);
  PointState& large = make(states, "large", 600);  // over a quarter: everything else goes first
  EXPECT_EQ(states.find("small"), nullptr);
  EXPECT_EQ(states.find("large"), &large);  // its next repetition, right after, finds it warm
  make(states, "next", 100);
  EXPECT_EQ(states.find("large"), nullptr);
  EXPECT_NE(states.find("next"), nullptr);
}

TEST(PointStates, OthersBytesLeaveOutTheStateAskedAbout) {
  PointStates states(kCap);
  PointState& a = make(states, "a", 100);
  PointState& b = make(states, "b", 50);
  EXPECT_EQ(states.others_bytes(&a), 50 * sizeof(float));
  EXPECT_EQ(states.others_bytes(&b), 100 * sizeof(float));
  EXPECT_EQ(a.bytes(), 100 * sizeof(float));
  states.forget("a");
  EXPECT_EQ(states.find("a"), nullptr);
  EXPECT_EQ(states.others_bytes(&b), 0u);
}

}  // namespace
