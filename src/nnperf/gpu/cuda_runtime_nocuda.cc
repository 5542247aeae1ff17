// gpu/cuda.h in a build without the CUDA backend: every query says so and nothing pretends to
// run. (CMake compiles this file only when NNPERF_CUDA is off or nvcc was not found.)
#include "nnperf/core/error.h"
#include "nnperf/gpu/cuda.h"

namespace nnperf::cuda {

namespace {
[[noreturn]] void fail() { throw Error(unavailable_reason()); }
}  // namespace

bool compiled() { return false; }

const std::string& unavailable_reason() {
  static const std::string reason =
      "nnperf was built without the CUDA backend (configure with -DNNPERF_CUDA=ON on a machine "
      "with nvcc)";
  return reason;
}

void require(std::string_view what) {
  throw UsageError(fmt::format("{}: {}", what, unavailable_reason()));
}

std::string device_summary() { return ""; }

DeviceProperties device_properties() { fail(); }

Buffer::Buffer(std::size_t) { fail(); }
Buffer::~Buffer() = default;
void Buffer::upload(std::span<const float>) { fail(); }
void Buffer::upload_prefix(std::span<const float>) { fail(); }
void Buffer::download(std::span<float>) const { fail(); }

void synchronize() { fail(); }
std::unique_ptr<IntervalTimer> make_event_timer(int) { fail(); }
std::unique_ptr<Timeline> make_event_timeline() { fail(); }
struct CapturedWork::State {};
CapturedWork::CapturedWork() = default;
CapturedWork::~CapturedWork() = default;
void CapturedWork::capture(const std::function<void()>&, bool) { fail(); }
bool CapturedWork::captured() const { return false; }
bool CapturedWork::current() const { return false; }
void CapturedWork::launch() { fail(); }
std::size_t CapturedWork::nodes() const { return 0; }
std::vector<std::vector<double>> time_alternately(int, const std::function<void(int)>&, bool, int,
                                                  int, const std::function<void()>&) {
  fail();
}
void profiler_start() { fail(); }
void profiler_stop() { fail(); }
EventTimerOverhead measure_event_timer_overhead(int) { fail(); }

}  // namespace nnperf::cuda
