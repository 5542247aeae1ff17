# libFuzzer targets for the parsers of untrusted input (configure with -DNNPERF_FUZZ=ON and
# -DCMAKE_CXX_COMPILER=clang++; scripts/fuzz.sh does both). This configuration builds nothing but
# a small parser library and one executable per tests/fuzz/*_fuzz.cc: no OpenMP, BLAS or FFTW,
# and none of the kernels, so it compiles in well under a minute on 2 cores.
#   library:  -fsanitize=fuzzer-no-link,address,undefined (coverage instrumentation, no main)
#   targets:  -fsanitize=fuzzer,address,undefined (libFuzzer's main)
# Each target <name>_fuzz.cc has its seed corpus in tests/fuzz/corpus/<name>/ and optionally a
# dictionary tests/fuzz/<name>.dict; `ctest` in this build replays every seed once.
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR
    "NNPERF_FUZZ=ON needs clang with libFuzzer, but CMAKE_CXX_COMPILER is ${CMAKE_CXX_COMPILER} "
    "(${CMAKE_CXX_COMPILER_ID}); configure a fresh build folder with -DCMAKE_CXX_COMPILER=clang++ "
    "(Debian packages clang and libclang-rt-dev), or run scripts/fuzz.sh")
endif()

find_package(fmt REQUIRED)
find_package(ZLIB REQUIRED)
find_package(JPEG REQUIRED)
find_package(PNG REQUIRED)
find_package(nlohmann_json QUIET)  # for io/json_read.cc and io/records.cc when they exist

# The sources the parsers need (dataset.cc holds Tensor and Rng users, hence tensor.cc, rng.cc;
# checkpoint_format.cc is the checkpoint parser without the Graph/Optimizer glue).
set(NNPERF_FUZZ_LIB_SOURCES
  src/nnperf/core/memory.cc
  src/nnperf/core/rng.cc
  src/nnperf/core/tensor.cc
  src/nnperf/io/csv.cc
  src/nnperf/io/files.cc
  src/nnperf/data/dataset.cc
  src/nnperf/data/cifar.cc
  src/nnperf/data/image_decode.cc
  src/nnperf/kernels/conv/conv_problem.cc
  src/nnperf/train/checkpoint_format.cc)
foreach(optional src/nnperf/io/json_read.cc src/nnperf/io/records.cc src/nnperf/analysis/ncu.cc
                 src/nnperf/analysis/ncu_json.cc)
  if(EXISTS ${CMAKE_SOURCE_DIR}/${optional})
    list(APPEND NNPERF_FUZZ_LIB_SOURCES ${optional})
  endif()
endforeach()

set(NNPERF_FUZZ_WARNINGS -Wall -Wextra -Wpedantic -Wshadow)
if(NNPERF_WERROR)
  list(APPEND NNPERF_FUZZ_WARNINGS -Werror)
endif()
# Any UBSan report stops the run as a crash, so libFuzzer saves the input.
set(NNPERF_FUZZ_COMMON -g -fno-omit-frame-pointer -fno-sanitize-recover=undefined)

add_library(nnperf_fuzz_parsers STATIC ${NNPERF_FUZZ_LIB_SOURCES})
target_include_directories(nnperf_fuzz_parsers PUBLIC src)
target_compile_options(nnperf_fuzz_parsers PRIVATE ${NNPERF_FUZZ_WARNINGS} ${NNPERF_FUZZ_COMMON}
                       -fsanitize=fuzzer-no-link,address,undefined)
target_link_libraries(nnperf_fuzz_parsers PUBLIC fmt::fmt ZLIB::ZLIB JPEG::JPEG PNG::PNG)
if(nlohmann_json_FOUND)
  target_link_libraries(nnperf_fuzz_parsers PUBLIC nlohmann_json::nlohmann_json)
endif()

enable_testing()
add_custom_target(fuzz_targets)
file(GLOB NNPERF_FUZZ_TARGET_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/fuzz/*_fuzz.cc)
foreach(src ${NNPERF_FUZZ_TARGET_SOURCES})
  get_filename_component(target ${src} NAME_WE)  # idx_fuzz
  string(REGEX REPLACE "_fuzz$" "" corpus_name ${target})
  add_executable(${target} ${src})
  set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
  target_compile_options(${target} PRIVATE ${NNPERF_FUZZ_WARNINGS} ${NNPERF_FUZZ_COMMON}
                         -fsanitize=fuzzer,address,undefined)
  target_link_options(${target} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(${target} PRIVATE nnperf_fuzz_parsers)
  add_dependencies(fuzz_targets ${target})
  set(corpus ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/${corpus_name})
  if(IS_DIRECTORY ${corpus})
    # Replays the seeds once (no mutation, the repository's corpus is only read).
    add_test(NAME fuzz.${corpus_name}.seeds COMMAND ${target} -runs=0 ${corpus})
  endif()
endforeach()
