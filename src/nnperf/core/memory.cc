#include "nnperf/core/memory.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "nnperf/core/error.h"

namespace nnperf {

namespace {

// First number on the line of /proc/meminfo that starts with `key`, in bytes (the file says kB).
std::optional<int64_t> meminfo_bytes(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::istringstream s(line.substr(key.size() + 1));
    int64_t kb = 0;
    if (s >> kb && kb >= 0) return kb * 1024;
  }
  return std::nullopt;
}

// A file holding one number ("max" and unreadable files give nullopt).
std::optional<int64_t> read_number_file(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0' || v < 0) return std::nullopt;
  return static_cast<int64_t>(v);
}

// Bytes left under this process's cgroup limit (v2 first, then v1), if it has one.
std::optional<int64_t> cgroup_left() {
  struct Pair {
    const char* limit;
    const char* usage;
  };
  for (const Pair& p : {Pair{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
                        Pair{"/sys/fs/cgroup/memory/memory.limit_in_bytes",
                             "/sys/fs/cgroup/memory/memory.usage_in_bytes"}}) {
    const auto limit = read_number_file(p.limit);
    // v1 reports "no limit" as a huge page-rounded number.
    if (!limit || *limit >= (int64_t{1} << 60)) continue;
    const int64_t used = read_number_file(p.usage).value_or(0);
    return std::max<int64_t>(0, *limit - used);
  }
  return std::nullopt;
}

// Bytes left under RLIMIT_AS (ulimit -v), if set: the limit minus this process's virtual size.
std::optional<int64_t> rlimit_left() {
  rlimit rl{};
  if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return std::nullopt;
  std::ifstream in("/proc/self/statm");
  int64_t pages = 0;
  in >> pages;
  const int64_t vsize = pages * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
  const auto limit = static_cast<int64_t>(
      std::min<rlim_t>(rl.rlim_cur, static_cast<rlim_t>(std::numeric_limits<int64_t>::max())));
  return std::max<int64_t>(0, limit - vsize);
}

}  // namespace

std::optional<int64_t> parse_byte_size(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end == text.c_str() || !std::isfinite(v) || v < 0) return std::nullopt;
  std::string suffix(end);
  if (!suffix.empty() && (suffix.back() == 'B' || suffix.back() == 'b')) suffix.pop_back();
  if (suffix.size() == 2 && (suffix[1] == 'i' || suffix[1] == 'I')) suffix.pop_back();  // GiB
  double mult = 1;
  if (suffix.empty()) {
    mult = 1;
  } else if (suffix.size() == 1) {
    switch (suffix[0]) {
      case 'k': case 'K': mult = 1024.0; break;
      case 'm': case 'M': mult = 1024.0 * 1024; break;
      case 'g': case 'G': mult = 1024.0 * 1024 * 1024; break;
      case 't': case 'T': mult = 1024.0 * 1024 * 1024 * 1024; break;
      default: return std::nullopt;
    }
  } else {
    return std::nullopt;
  }
  const double bytes = v * mult;
  if (bytes >= 9.2e18) return std::nullopt;
  return static_cast<int64_t>(bytes);
}

int64_t available_memory_bytes() {
  int64_t avail = meminfo_bytes("MemAvailable")
                      .value_or(static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) *
                                static_cast<int64_t>(sysconf(_SC_PAGESIZE)));
  if (const auto c = cgroup_left()) avail = std::min(avail, *c);
  if (const auto r = rlimit_left()) avail = std::min(avail, *r);
  if (const char* env = std::getenv("NNPERF_MEMORY_LIMIT"); env != nullptr && *env != '\0') {
    const auto cap = parse_byte_size(env);
    if (!cap) {
      throw UsageError(fmt::format(
          "NNPERF_MEMORY_LIMIT='{}': expected a byte count such as 1073741824, 512M or 2G", env));
    }
    avail = std::min(avail, *cap);
  }
  return avail;
}

void check_memory(int64_t bytes, const std::string& what) {
  const int64_t avail = available_memory_bytes();
  if (bytes < 0 || bytes > avail) {
    throw Error(fmt::format("{} needs {} of memory but only {} are available{}", what,
                            bytes < 0 ? std::string("more than 8 EiB") : format_bytes(bytes),
                            format_bytes(avail),
                            std::getenv("NNPERF_MEMORY_LIMIT") != nullptr
                                ? " (capped by NNPERF_MEMORY_LIMIT)"
                                : ""));
  }
}

namespace {
thread_local std::string g_context;
constexpr int64_t kCheckedAllocationBytes = int64_t{16} << 20;
}  // namespace

MemoryContext::MemoryContext(std::string what) : previous_(std::move(g_context)) {
  g_context = std::move(what);
}
MemoryContext::~MemoryContext() { g_context = std::move(previous_); }

void check_allocation(int64_t bytes, const char* what) {
  if (bytes < kCheckedAllocationBytes) return;
  const int64_t avail = available_memory_bytes();
  if (bytes <= avail) return;
  throw Error(fmt::format("{}{} of {} cannot be allocated: only {} of memory are available{}",
                          g_context.empty() ? "" : g_context + ": ", what, format_bytes(bytes),
                          format_bytes(avail),
                          std::getenv("NNPERF_MEMORY_LIMIT") != nullptr
                              ? " (capped by NNPERF_MEMORY_LIMIT)"
                              : ""));
}

std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::string format_bytes(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (b < 1024.0 * 1024) return fmt::format("{:.1f} KiB", b / 1024);
  if (b < 1024.0 * 1024 * 1024) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024));
  if (b < 1024.0 * 1024 * 1024 * 1024) return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
  return fmt::format("{:.2f} TiB", b / (1024.0 * 1024 * 1024 * 1024));
}

}  // namespace nnperf
