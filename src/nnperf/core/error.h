// Errors for people: nnperf::Error carries a message that names the input (file, flag, layer) and
// what was expected. main() catches any that escapes, prints one line and exits 1 (runtime), 2
// (usage) or 128 + the signal (InterruptedError); some callers catch one to fall back or skip.
#pragma once
#include <fmt/format.h>

#include <cstdio>

#include <stdexcept>
#include <string>
#include <string_view>

namespace nnperf {

class Error : public std::runtime_error {
 public:
  enum class Kind { kRuntime, kUsage };
  explicit Error(const std::string& what, Kind kind = Kind::kRuntime)
      : std::runtime_error(what), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

// A usage error (bad flag or value): main() exits with code 2.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& what) : Error(what, Kind::kUsage) {}
};

// Thrown when training diverges (NaN/Inf loss or parameters).
class DivergenceError : public Error {
 public:
  using Error::Error;
};

// The user interrupted (Ctrl-C): main() exits 130, as ai3-8CuDNN's profiler did.
class InterruptedError : public Error {
 public:
  using Error::Error;
};

// One line on stderr, "nnperf: warning: ...": for inputs that were accepted after a correction
// the user should know about (a thread count capped, a cut CSV row dropped).
template <typename... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
  fmt::print(stderr, "nnperf: warning: {}\n", fmt::format(f, std::forward<Args>(args)...));
}

// Text from an input (a cell, a descriptor, a field) quoted in a message: control and non-ASCII
// bytes are escaped and long text is cut, so a hostile input cannot make a message multi-line or
// megabytes long.
inline std::string quote_input(std::string_view text, std::size_t shown = 120) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < shown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c >= 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > shown) out += fmt::format("... ({} bytes)", text.size());
  return out;
}

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace nnperf

// Precondition checks at plan time: the message names file:line so a broken invariant is found fast.
#define NNPERF_CHECK(cond, ...)                                                            \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      throw ::nnperf::Error(::fmt::format("{}:{}: {}", __FILE__, __LINE__,                 \
                                          ::fmt::format(__VA_ARGS__)));                    \
    }                                                                                      \
  } while (0)
