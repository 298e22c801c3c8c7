// The fuzzers' seed corpora and every saved crash input, replayed through the fuzzers' own checks
// (fuzz/attention_case.hpp, fuzz/npy_case.hpp) in the ordinary build, so each is a regression
// test here and under the sanitizer presets. A crash input the fuzzers find goes into
// fuzz/regressions/<target>/ (see docs/testing.md) and is replayed by the tests below from then on.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "attention_case.hpp"
#include "npy_case.hpp"

namespace attnbench::fuzz {
namespace {

namespace fs = std::filesystem;

const fs::path kFuzzDir = ATTNBENCH_FUZZ_DIR;

std::vector<fs::path> inputs(const fs::path& directory) {
  std::vector<fs::path> files;
  if (fs::is_directory(directory)) {
    for (const auto& entry : fs::directory_iterator(directory)) {
      if (entry.is_regular_file() && entry.path().filename().string()[0] != '.') {
        files.push_back(entry.path());
      }
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::uint8_t> contents(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// fuzz_attention's check on every kernel (check_attention_input without its skip list).
std::optional<std::string> attention_check(const std::uint8_t* data, std::size_t size) {
  return check_attention_input(data, size);
}

// Every file under fuzz/<dir> through a fuzzer's check (nullopt when the input passes).
template <class Check>
void replay(const fs::path& dir, Check check) {
  for (const fs::path& file : inputs(kFuzzDir / dir)) {
    const std::vector<std::uint8_t> bytes = contents(file);
    const auto failure = check(bytes.data(), bytes.size());
    EXPECT_FALSE(failure) << file.filename() << ": " << *failure;
  }
}

TEST(FuzzReplay, AttentionSeedCorpus) {
  EXPECT_GE(inputs(kFuzzDir / "corpus/attention").size(), 20u);
  replay("corpus/attention", attention_check);
}

TEST(FuzzReplay, AttentionRegressions) { replay("regressions/attention", attention_check); }

// The seeds say what they test: valid_* files are accepted, every other seed refused.
TEST(FuzzReplay, NpySeedCorpus) {
  EXPECT_GE(inputs(kFuzzDir / "corpus/npy").size(), 20u);
  replay("corpus/npy", check_npy_input);
  for (const fs::path& file : inputs(kFuzzDir / "corpus/npy")) {
    const std::vector<std::uint8_t> bytes = contents(file);
    const NpyOutcome outcome =
        parse_outcome({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()});
    const bool valid = file.filename().string().starts_with("valid_");
    EXPECT_EQ(outcome.array.has_value(), valid) << file.filename() << ": " << outcome.error;
  }
}

TEST(FuzzReplay, NpyRegressions) { replay("regressions/npy", check_npy_input); }

}  // namespace
}  // namespace attnbench::fuzz
