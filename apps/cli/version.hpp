// `attnbench --version`: the library's version and the commit the build was made from.
#pragma once

#include <string>

namespace attnbench::cli {

// "attnbench 0.2.0 (commit <hash>)", ", dirty" after the hash when tracked files differed from it
// at build time. Its own translation unit: a new commit recompiles this file alone.
std::string version_line();

}  // namespace attnbench::cli
