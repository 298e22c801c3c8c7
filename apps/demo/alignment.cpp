// alignment: "le chat noir" -> "the black cat"; the weights cross where the word orders differ.
#include <algorithm>

#include "demo/demo_support.hpp"

namespace attnbench::demo {

using namespace detail;

AlignmentResult alignment(const Kernel& kernel) {
  AlignmentResult r;
  r.source = {"le", "chat", "noir"};
  r.target = {"the", "black", "cat"};
  // Three hand-made axes: (article, animal, colour). Each word mostly one axis, with a little
  // of the others, so the weights are not one-hot.
  r.source_embedding = {{{2.0f, 0.2f, 0.0f}, {0.1f, 2.0f, 0.3f}, {0.0f, 0.3f, 2.0f}}};
  r.target_embedding = {{{2.0f, 0.1f, 0.1f}, {0.1f, 0.2f, 2.0f}, {0.2f, 2.0f, 0.1f}}};
  std::vector<float> q, k;
  for (const auto& e : r.target_embedding) q.insert(q.end(), e.begin(), e.end());
  for (const auto& e : r.source_embedding) k.insert(k.end(), e.begin(), e.end());
  // The target words query the source words; V = identity, so each output row is its weights.
  const Ran ran = call(kernel, {1, 1, 1, 3, 3, 3}, Options{}, q, k, identity(3));
  r.kernel = ran.kernel;
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 3; ++j) r.weights[i][j] = ran.o[i * 3 + j];
    r.aligned[i] = std::size_t(std::max_element(r.weights[i].begin(), r.weights[i].end()) -
                               r.weights[i].begin());
  }
  return r;
}

void print(const AlignmentResult& r, std::FILE* out) {
  heading(out, "alignment", "\"the black cat\" attends to \"le chat noir\" across the crossing");
  std::fprintf(out,
               "kernel %s; 3-dim embeddings on axes (article, animal, colour), scale 1/sqrt(3)\n",
               r.kernel.c_str());
  std::fprintf(out, "%-8s", "");
  for (const std::string& s : r.source) std::fprintf(out, "%8s", s.c_str());
  std::fprintf(out, "%8s   %s\n", "sum", "aligned to");
  for (std::size_t i = 0; i < 3; ++i) {
    std::fprintf(out, "%-8s", r.target[i].c_str());
    for (float w : r.weights[i]) std::fprintf(out, "%8.3f", w);
    std::fprintf(out, "%8.3f   %s\n", r.weights[i][0] + r.weights[i][1] + r.weights[i][2],
                 r.source[r.aligned[i]].c_str());
  }
}

Json to_json(const AlignmentResult& r) {
  Json weights = Json::array(), source = Json::array(), target = Json::array();
  for (const auto& row : r.weights) weights.push_back(json_numbers(row));
  for (const auto& e : r.source_embedding) source.push_back(json_numbers(e));
  for (const auto& e : r.target_embedding) target.push_back(json_numbers(e));
  return {{"kernel", r.kernel},         {"source", r.source},         {"target", r.target},
          {"source_embedding", source}, {"target_embedding", target}, {"weights", weights},
          {"aligned", r.aligned}};
}

}  // namespace attnbench::demo
