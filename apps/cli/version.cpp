#include "cli/version.hpp"

#include <cstring>

#include <attnbench/version.hpp>
#include "attnbench_commit.hpp"  // generated at every build (cmake/git_commit.cmake)

namespace attnbench::cli {

std::string version_line() {
  std::string line = std::string("attnbench ") + kVersion + " (commit " + build::kGitCommit;
  if (std::strcmp(build::kGitDirty, "true") == 0) line += ", dirty";
  return line + ")";
}

}  // namespace attnbench::cli
