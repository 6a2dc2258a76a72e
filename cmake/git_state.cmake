# Stamps the git state of SOURCE_DIR into the header OUT at build time: the commit of HEAD and
# whether tracked files then differed from it, so that results record the code a binary was built
# from rather than the checkout's state when it runs. Run by the pathbench_git_state target on every
# build; OUT is rewritten only when the state changes, so only the file that includes it recompiles.
# Usage: cmake -DSOURCE_DIR=<repository> -DOUT=<header> -P git_state.cmake
find_program(GIT_PROGRAM git)
set(commit "")
set(dirty -1)  # unknown
set(error "")
if(NOT GIT_PROGRAM)
  set(error "git is not available")
else()
  execute_process(COMMAND "${GIT_PROGRAM}" -C "${SOURCE_DIR}" rev-parse HEAD RESULT_VARIABLE head_rc
                  OUTPUT_VARIABLE commit ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT head_rc EQUAL 0)
    set(commit "")
    set(error "git rev-parse HEAD failed in ${SOURCE_DIR} (not a repository, or one git refuses)")
  else()
    # --no-optional-locks: a build must not hold the index lock that a `git commit` beside it needs.
    execute_process(COMMAND "${GIT_PROGRAM}" --no-optional-locks -C "${SOURCE_DIR}" status --porcelain
                            --untracked-files=no
                    RESULT_VARIABLE status_rc OUTPUT_VARIABLE status ERROR_QUIET)
    if(status_rc EQUAL 0)
      if(status STREQUAL "")
        set(dirty 0)
      else()
        set(dirty 1)
      endif()
    endif()
  endif()
endif()
# The reason goes into a C string literal: its backslashes and double quotes escaped.
string(REPLACE "\\" "\\\\" error "${error}")
string(REPLACE "\"" "\\\"" error "${error}")
set(text "// Generated at build time by cmake/git_state.cmake: the git state of the source tree built.
#pragma once
#define PATHBENCH_BUILT_COMMIT \"${commit}\"  // empty: unknown (PATHBENCH_BUILT_GIT_ERROR says why)
#define PATHBENCH_BUILT_DIRTY ${dirty}         // 1: tracked files differed from the commit, 0: not, -1: unknown
#define PATHBENCH_BUILT_GIT_ERROR \"${error}\"
")
file(WRITE "${OUT}.tmp" "${text}")
execute_process(COMMAND "${CMAKE_COMMAND}" -E copy_if_different "${OUT}.tmp" "${OUT}")
file(REMOVE "${OUT}.tmp")
