# Regenerates build_info.h at every build (not only at configure time), so run.json names the
# commit actually built; the file is rewritten only when its content changes.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE NNPERF_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE NNPERF_GIT_DIRTY OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT NNPERF_GIT_COMMIT)
  set(NNPERF_GIT_COMMIT "unknown")
elseif(NNPERF_GIT_DIRTY)
  set(NNPERF_GIT_COMMIT "${NNPERF_GIT_COMMIT}-dirty")
endif()
configure_file(${SRC}/cmake/build_info.h.in ${OUT}.tmp @ONLY)
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
