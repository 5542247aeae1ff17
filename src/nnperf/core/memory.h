// A memory budget for sizes that come from files or flags: before a buffer whose size an outside
// input decides is allocated, the caller asks check_memory(bytes, what), which refuses (throws
// nnperf::Error naming `what`, the bytes needed and the bytes available) instead of letting the
// allocation fail with std::bad_alloc, swap the machine to a crawl, or be killed by the OOM killer.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace nnperf {

// Bytes this process may still allocate: the smaller of MemAvailable (/proc/meminfo) and the
// cgroup limit minus the cgroup's usage (v2 memory.max / memory.current, or v1
// memory.limit_in_bytes / memory.usage_in_bytes), and RLIMIT_AS minus this process's virtual size
// when such a limit is set. NNPERF_MEMORY_LIMIT (bytes, or with a K/M/G/T suffix) caps it further:
// tests use it to exercise the refusals without allocating. Falls back to physical memory when no
// source is readable.
int64_t available_memory_bytes();

// Throws Error("<what> needs <bytes> but only <available> are available ...") when `bytes` is more
// than available_memory_bytes(). `what` names the input that decided the size (a flag or a file).
void check_memory(int64_t bytes, const std::string& what);

// Every large buffer (tensor storage, workspaces) passes through here before it is allocated:
// one of at least 16 MiB is refused with an Error when it exceeds available_memory_bytes(). The
// message names the buffer, the bytes and what the run was doing (see MemoryContext), so a size
// that no earlier check caught still ends in a one-line error instead of std::bad_alloc or the
// OOM killer. Smaller buffers are not checked (reading /proc costs more than they do).
void check_allocation(int64_t bytes, const char* what);

// What the process is doing, for check_allocation's message ("planning vgg16 for input
// 1x3x4096x4096 (--sizes, --batch-size)"). Scoped; nests (the innermost wins).
class MemoryContext {
 public:
  explicit MemoryContext(std::string what);
  ~MemoryContext();
  MemoryContext(const MemoryContext&) = delete;
  MemoryContext& operator=(const MemoryContext&) = delete;

 private:
  std::string previous_;
};

// a * b (and a * b * c ...) with overflow detection: nullopt when the product does not fit int64.
std::optional<int64_t> checked_mul(int64_t a, int64_t b);
std::optional<int64_t> checked_add(int64_t a, int64_t b);

// "1.50 GiB", "12.0 MiB", "512 B".
std::string format_bytes(int64_t bytes);

// Parses "1073741824", "512M", "2G", "1.5T" (powers of 1024); nullopt on anything else.
std::optional<int64_t> parse_byte_size(const std::string& text);

}  // namespace nnperf
