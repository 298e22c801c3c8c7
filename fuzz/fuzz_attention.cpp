// libFuzzer target: every available registry kernel against the float64 oracle on a problem
// decoded from the input (see attention_case.hpp for the layout and what is required).
//   scripts/fuzz.sh --target attention --seconds 60
// ATTNBENCH_FUZZ_SKIP=name,name leaves kernels out, to look past a finding not yet fixed.
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "attention_case.hpp"

namespace {
std::vector<std::string> skip;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* names = std::getenv("ATTNBENCH_FUZZ_SKIP")) {
    std::istringstream list(names);
    for (std::string name; std::getline(list, name, ',');) {
      if (!name.empty()) skip.push_back(name);
    }
    std::fprintf(stderr, "fuzz_attention: skipping %s\n", names);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (const auto failure = attnbench::fuzz::check_attention_input(data, size, skip)) {
    std::fprintf(stderr, "fuzz_attention: %s\n", failure->c_str());
    std::abort();  // libFuzzer saves the input as a crash artifact
  }
  return 0;
}
