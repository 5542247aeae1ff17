#include "nnperf/core/interrupt.h"

#include <unistd.h>

#include <atomic>
#include <csignal>

#include "nnperf/core/error.h"

namespace nnperf {

namespace {

std::atomic<bool> g_requested{false};
std::atomic<int> g_signal{SIGINT};  // the first signal's number
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler needs a lock-free flag");
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free number");

void write_stderr(const char* text) {
  std::size_t n = 0;
  while (text[n] != '\0') ++n;
  // Async-signal-safe; nothing to do if stderr is gone.
  [[maybe_unused]] const ssize_t w = ::write(STDERR_FILENO, text, n);
}

extern "C" void on_signal(int sig) {
  if (g_requested.exchange(true)) {
    write_stderr("\nnnperf: interrupted again: exiting now\n");
    ::_exit(128 + sig);
  }
  g_signal = sig;
  write_stderr(sig == SIGINT ? "\nnnperf: stopping at the next safe point (Ctrl-C again to exit at once)\n"
                             : "\nnnperf: SIGTERM: stopping at the next safe point (a second signal exits at once)\n");
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
void clear_interrupt() {
  g_requested = false;
  g_signal = SIGINT;
}

int interrupt_exit_code() { return 128 + g_signal.load(); }

void check_interrupt() {
  if (interrupt_requested()) {
    throw InterruptedError(g_signal == SIGTERM
                               ? "stopped by SIGTERM; every row written so far is complete"
                               : "stopped by the user; every row written so far is complete");
  }
}

}  // namespace nnperf
