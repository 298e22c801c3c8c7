// Which demos exist, the kernels they run on by default, and the command that runs them and
// writes their JSON. Each demo, with its print and to_json, has a file of its own (softmax.cpp...).
#include "demo/demos.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace attnbench::demo {

namespace {

template <class Result>
Json show(const Result& r, std::FILE* out) {
  print(r, out);
  std::fflush(out);
  return to_json(r);
}

struct Demo {
  std::string_view name;
  // The demo with its default arguments (or, quick, a smaller budget), printed to out.
  Json (*run)(std::FILE* out, bool quick);
};

// In the order `attnbench demo all` runs them.
constexpr Demo kDemos[] = {
    {"softmax", [](std::FILE* out, bool) { return show(softmax(), out); }},
    {"bottleneck", [](std::FILE* out, bool) { return show(bottleneck(), out); }},
    {"alignment", [](std::FILE* out, bool) { return show(alignment(), out); }},
    {"quadratic", [](std::FILE* out, bool) { return show(quadratic(), out); }},
    {"order", [](std::FILE* out, bool) { return show(order(), out); }},
    {"uniform", [](std::FILE* out, bool) { return show(uniform(), out); }},
    {"copy",
     [](std::FILE* out, bool quick) {
       return show(copy_task(default_backward_kernel(), quick ? CopyConfig::quick() : CopyConfig{}),
                   out);
     }},
};

constexpr auto kNames = [] {
  std::array<std::string_view, std::size(kDemos)> names{};
  for (std::size_t i = 0; i < names.size(); ++i) names[i] = kDemos[i].name;
  return names;
}();

}  // namespace

std::span<const std::string_view> names() { return kNames; }

const Kernel& best_kernel(Strategy strategy) {
  for (const Kernel& k : registry()) {
    if (k.strategy == strategy && k.products == Products::f32 && k.available()) return k;
  }
  return default_kernel();  // not reached: each strategy has a scalar kernel that runs anywhere
}

int run(std::string_view name, const std::string& json_path, std::FILE* out, bool quick) {
  std::vector<const Demo*> chosen;
  for (const Demo& demo : kDemos) {
    if (name == "all" || name == demo.name) chosen.push_back(&demo);
  }
  if (chosen.empty()) {
    std::string known;
    for (std::string_view n : kNames) known += std::string(n) + ", ";
    throw Error("demo", std::string(name), "unknown demo; expected one of " + known + "all");
  }

  // Open the JSON file before running anything, so a bad path fails at once; write it under a
  // temporary name and rename, so a failed run leaves no half-written file.
  const std::string temporary = json_path + ".tmp";
  std::ofstream json_file;
  if (!json_path.empty()) {
    json_file.open(temporary);
    if (!json_file) {
      throw Error("--json", json_path, std::string("cannot write: ") + std::strerror(errno));
    }
  }

  Json doc = {{"demos", Json::object()}};
  try {
    for (std::size_t i = 0; i < chosen.size(); ++i) {
      if (i > 0) std::fputc('\n', out);
      doc["demos"][std::string(chosen[i]->name)] = chosen[i]->run(out, quick);
    }
  } catch (...) {
    if (!json_path.empty()) {
      json_file.close();
      std::remove(temporary.c_str());
    }
    throw;
  }

  if (!json_path.empty()) {
    json_file << doc.dump(2) << '\n';
    json_file.close();
    if (!json_file || std::rename(temporary.c_str(), json_path.c_str()) != 0) {
      const std::string why = std::strerror(errno);
      std::remove(temporary.c_str());
      throw Error("--json", json_path, "cannot write: " + why);
    }
  }
  return 0;
}

}  // namespace attnbench::demo
