// The cost model's inputs as counters of a forward point: forward_counts.hpp's fields, each
// named `count_<field>` (the report's loader gathers them by that prefix).
#pragma once

#include <benchmark/benchmark.h>

#include <string>
#include <utility>

#include <attnbench/attnbench.hpp>
#include "forward_counts.hpp"

namespace attnbench::bench {

inline void add_cost_counters(benchmark::State& state, const Kernel& kernel, const Shape& shape,
                              const Options& options) {
  const ForwardCounts c = forward_counts(kernel, shape, options);
  const std::pair<const char*, double> counts[] = {{"score_fmas", c.score_fmas},
                                                   {"blend_fmas", c.blend_fmas},
                                                   {"exps", c.exps},
                                                   {"softmax_scores", c.softmax_scores},
                                                   {"kv_stream_bytes", c.kv_stream_bytes},
                                                   {"kv_head_bytes", c.kv_head_bytes},
                                                   {"kv_set_bytes", c.kv_set_bytes},
                                                   {"score_sweeps", c.score_sweeps},
                                                   {"score_bytes", c.score_bytes},
                                                   {"score_set_bytes", c.score_set_bytes},
                                                   {"pack_bytes", c.pack_bytes},
                                                   {"io_bytes", c.io_bytes},
                                                   {"tasks", c.tasks},
                                                   {"compute_tasks", c.compute_tasks},
                                                   {"query_block", double(c.query_block)},
                                                   {"key_block", double(c.key_block)}};
  for (auto [name, value] : counts) {
    state.counters[std::string("count_") + name] = benchmark::Counter(value);
  }
}

}  // namespace attnbench::bench
