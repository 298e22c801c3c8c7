# The commit a build is made from, for the benchmark's JSON context and `attnbench --version`.
#
# Included from CMakeLists.txt: the interface library `attnbench_commit`, whose generated header
# <attnbench_commit.hpp> names HEAD and whether tracked files differ from it. A custom target runs
# this file again in script mode at every build (configure time alone would go stale at the next
# commit); it rewrites the header only when the commit or the dirty flag changed, so a build with
# neither changed recompiles nothing (Ninja restats the byproduct).
#
# Script mode: cmake -DSOURCE_DIR=<repo> -DOUTPUT=<header> -P cmake/git_commit.cmake
if(CMAKE_SCRIPT_MODE_FILE)
  set(commit "unknown")
  set(dirty "unknown")
  find_program(GIT_EXECUTABLE git)
  if(GIT_EXECUTABLE)
    execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} rev-parse HEAD
                    OUTPUT_VARIABLE head RESULT_VARIABLE failed ERROR_QUIET
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT failed AND head MATCHES "^[0-9a-f]+$")
      set(commit ${head})
      # --no-optional-locks: a build must never hold the index lock while someone runs `git add`.
      # Untracked files do not count (as `git describe --dirty`): build trees and scratch files.
      execute_process(COMMAND ${GIT_EXECUTABLE} --no-optional-locks -C ${SOURCE_DIR} status
                              --porcelain --untracked-files=no
                      OUTPUT_VARIABLE changes RESULT_VARIABLE failed ERROR_QUIET)
      if(NOT failed)
        if(changes STREQUAL "")
          set(dirty "false")
        else()
          set(dirty "true")
        endif()
      endif()
    endif()
  endif()
  set(text "// Generated at every build by cmake/git_commit.cmake: the commit this build was made from.
#pragma once

namespace attnbench::build {

// HEAD's full hash, or \"unknown\" outside a git checkout.
inline constexpr const char* kGitCommit = \"${commit}\";
// \"true\" when tracked files differed from HEAD at build time, \"false\", or \"unknown\".
inline constexpr const char* kGitDirty = \"${dirty}\";

}  // namespace attnbench::build
")
  set(old "")
  if(EXISTS ${OUTPUT})
    file(READ ${OUTPUT} old)
  endif()
  if(NOT old STREQUAL text)
    file(WRITE ${OUTPUT} "${text}")
  endif()
  return()
endif()

set(ATTNBENCH_COMMIT_DIR ${PROJECT_BINARY_DIR}/commit)
add_custom_target(attnbench_commit_header
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
          -DOUTPUT=${ATTNBENCH_COMMIT_DIR}/attnbench_commit.hpp -P ${CMAKE_CURRENT_LIST_FILE}
  BYPRODUCTS ${ATTNBENCH_COMMIT_DIR}/attnbench_commit.hpp
  COMMENT "Reading the git commit"
  VERBATIM)
add_library(attnbench_commit INTERFACE)
target_include_directories(attnbench_commit INTERFACE ${ATTNBENCH_COMMIT_DIR})
add_dependencies(attnbench_commit attnbench_commit_header)
