#include "nnperf/core/interrupt.h"

#include <unistd.h>

#include <atomic>
#include <csignal>

#include "nnperf/core/error.h"

namespace nnperf {

namespace {

std::atomic<bool> g_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler needs a lock-free flag");

void write_stderr(const char* text) {
  std::size_t n = 0;
  while (text[n] != '\0') ++n;
  // Async-signal-safe; nothing to do if stderr is gone.
  [[maybe_unused]] const ssize_t w = ::write(STDERR_FILENO, text, n);
}

extern "C" void on_signal(int) {
  if (g_requested.exchange(true)) {
    write_stderr("\nnnperf: interrupted again: exiting now\n");
    ::_exit(130);
  }
  write_stderr("\nnnperf: stopping at the next safe point (Ctrl-C again to exit at once)\n");
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking read returns EINTR and the caller checks the flag
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

void request_interrupt() { g_requested = true; }
bool interrupt_requested() { return g_requested.load(std::memory_order_relaxed); }
void clear_interrupt() { g_requested = false; }

void check_interrupt() {
  if (interrupt_requested()) {
    throw InterruptedError("stopped by the user; every row written so far is complete");
  }
}

}  // namespace nnperf
