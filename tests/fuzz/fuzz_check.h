// Shared by the libFuzzer targets: FUZZ_CHECK stops the run (libFuzzer saves the input as a
// crash) when a property of a parser's result does not hold, and check_error_message holds every
// nnperf::Error to the project's rule: one line that starts by naming the input.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#define FUZZ_CHECK(cond, ...)                                                       \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: property failed: %s: ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                            \
      std::fprintf(stderr, "\n");                                                   \
      std::abort();                                                                 \
    }                                                                               \
  } while (0)

namespace nnperf::fuzz {

// `prefix` is what the message must start with (the file or descriptor name); empty: any.
inline void check_error_message(std::string_view message, std::string_view prefix) {
  FUZZ_CHECK(!message.empty(), "an empty error message");
  FUZZ_CHECK(message.find('\n') == std::string_view::npos, "a multi-line error message: %s",
             std::string(message).c_str());
  FUZZ_CHECK(message.substr(0, prefix.size()) == prefix,
             "the error message does not start with '%s': %s", std::string(prefix).c_str(),
             std::string(message).c_str());
}

}  // namespace nnperf::fuzz
