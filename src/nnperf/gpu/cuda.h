// The CUDA backend as the rest of nnperf sees it: no CUDA header is needed to include this file.
// With the backend built (CMake -DNNPERF_CUDA=ON or AUTO with nvcc found) the functions are
// defined in gpu/cuda_runtime_cuda.cc over the CUDA runtime; without it, in
// gpu/cuda_runtime_nocuda.cc, where every query answers "built without the CUDA backend" and
// anything that would touch a device throws that reason. Work is queued on the calling thread's
// default stream (the backend is compiled with per-thread default streams, and cuDNN and cuBLAS
// are set to it, so that it can be captured into a CUDA graph: CapturedWork); timing is by CUDA
// events (make_event_timer).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "nnperf/core/clock.h"

namespace nnperf::cuda {

// True when this binary contains the CUDA backend.
bool compiled();

// "" when a CUDA device is usable (device 0 is selected); otherwise one line saying why not, e.g.
// "nnperf was built without the CUDA backend" or "no CUDA device: no CUDA driver (libcuda.so.1:
// cannot open ...)".
// Probed once and cached.
const std::string& unavailable_reason();
inline bool available() { return unavailable_reason().empty(); }

// Throws Error("<what>: no CUDA device: <reason>") when no device is usable; `what` names the flag
// ("--device cuda").
void require(std::string_view what);

// Name, SMs, compute capability and memory of the selected device ("NVIDIA H100 80GB HBM3, 132
// SMs, sm_90, 79.1 GiB"); "" when none.
std::string device_summary();

// What a measurement sizes itself by, of the selected device. Throws Error (the reason) when no
// device is usable.
struct DeviceProperties {
  std::string name;
  int multiprocessors = 0;
  int compute_major = 0, compute_minor = 0;
  int clock_mhz = 0;  // peak SM clock from the runtime; 0 = not reported
  int64_t l2_bytes = 0;
  std::size_t total_bytes = 0, free_bytes = 0;
  std::string pci_bus_id;  // "0000:3B:00.0" (cudaDeviceGetPCIBusId); "" when not reported
};
DeviceProperties device_properties();

// Device memory for `count` floats (uninitialised), freed on destruction. Throws Error when no
// device is usable or the allocation fails (the message gives the bytes asked for and free).
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(std::size_t count);
  ~Buffer();
  Buffer(Buffer&& other) noexcept : data_(other.data_), count_(other.count_) {
    other.data_ = nullptr;
    other.count_ = 0;
  }
  Buffer& operator=(Buffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  float* data() { return data_; }
  const float* data() const { return data_; }
  std::size_t size() const { return count_; }
  // Synchronous copies of exactly size() floats.
  void upload(std::span<const float> host);
  // Synchronous copy of host.size() <= size() floats into the buffer's start (the rest is left
  // as it is): a short batch in a buffer sized for a larger one.
  void upload_prefix(std::span<const float> host);
  void download(std::span<float> host) const;

 private:
  float* data_ = nullptr;
  std::size_t count_ = 0;
};

// A device copy of `host` (empty for an empty span).
inline Buffer to_device(std::span<const float> host) {
  Buffer b(host.size());
  if (!host.empty()) b.upload(host);
  return b;
}

// Copies the bytes of a trivially copyable value to the start of `b` (as float bit patterns, a
// synchronous upload_prefix): a step's counter or coefficients that a captured graph reads from
// device memory.
template <typename T>
void upload_value(Buffer& b, const T& value) {
  static_assert(std::is_trivially_copyable_v<T>);
  std::vector<float> words((sizeof(T) + sizeof(float) - 1) / sizeof(float), 0.0f);
  std::memcpy(words.data(), &value, sizeof(T));
  b.upload_prefix(words);
}

// Process-wide scratch (cuDNN's shared workspace, the kernels' per-thread scratch) grows through
// grow_scratch, which counts every reallocation: a CUDA graph captured while a scratch buffer
// had one address holds that address, so it is stale once scratch_generation() has moved
// (CapturedWork::current; an address comparison alone would miss a new buffer at the old
// address).
inline std::atomic<std::uint64_t>& scratch_generation_counter() {
  static std::atomic<std::uint64_t> generation{0};  // per-thread scratch grows on any thread
  return generation;
}
inline std::uint64_t scratch_generation() { return scratch_generation_counter().load(); }
// `b` grown to at least `floats` (its contents are not kept) and its address. The old buffer is
// freed first (cudaFree waits for the work queued on it), so growing needs only the new size.
inline float* grow_scratch(Buffer& b, std::size_t floats) {
  if (b.size() < floats) {
    b = Buffer();
    ++scratch_generation_counter();  // graphs holding the old address are stale from here on
    b = Buffer(floats);
  }
  return b.data();
}
// `b` made exactly `floats` long: grown as grow_scratch does, or shrunk (freed, counted, then
// allocated again) when it is longer.
inline float* fit_scratch(Buffer& b, std::size_t floats) {
  if (b.size() > floats) {
    b = Buffer();
    ++scratch_generation_counter();
  }
  return grow_scratch(b, floats);
}

// Waits for all queued work; throws Error naming the failed call if a kernel failed.
void synchronize();

// A host copy of `b` once the queued work has finished.
inline std::vector<float> to_host(const Buffer& b) {
  synchronize();
  std::vector<float> host(b.size());
  if (!host.empty()) b.download(host);
  return host;
}

// An IntervalTimer whose begin/end record CUDA events into the stream. resolve() synchronises once
// on the last event recorded and reads every interval with cudaEventElapsedTime, so timing a pass
// of many layers costs one synchronisation, not one per layer. `slots` intervals, any number of
// begin/end pairs per slot between resolves.
std::unique_ptr<IntervalTimer> make_event_timer(int slots);

// A Timeline of CUDA events: mark() records one into the stream (events are created ahead by
// reserve(marks), else at first use, and reused); read() synchronises once on the last and returns
// each mark's time after the first (cudaEventElapsedTime between consecutive marks, summed; about
// 0.5 us resolution), then starts over. make_event_timer's intervals are pairs of marks on one.
std::unique_ptr<Timeline> make_event_timeline();

// Work that one function queues, captured into a CUDA graph (cudaStreamBeginCapture on this
// thread's stream, relaxed mode) and replayed by launch(): the host submits the whole of it in one
// call, so a pass of many short kernels is no longer bound by their launches. Pointers, sizes and
// algorithms are those of the capture: capture again after any of them changes. Event timeline
// marks made during a capture become event-record nodes of the graph (they are recorded at each
// launch).
class CapturedWork {
 public:
  CapturedWork();
  ~CapturedWork();
  CapturedWork(const CapturedWork&) = delete;
  CapturedWork& operator=(const CapturedWork&) = delete;
  // Runs `queue` with this thread's stream capturing (nothing executes) and makes the result
  // launchable, updating the last capture's executable graph in place where CUDA allows.
  // Throws Error naming the CUDA call that failed (a call that cannot be captured ends the
  // capture: the stream is usable again, and the last capture is dropped). When `queue`
  // reallocated process-wide scratch (grow_scratch: another owner had shrunk a shared workspace),
  // the nodes queued before it hold the freed address: `queue` then runs a second time, and a
  // second reallocation is an Error. So what is captured is always current() on return. With
  // `rerun` false (work whose queueing has effects of its own, such as a hook's timeline marks)
  // the first reallocation is the Error.
  void capture(const std::function<void()>& queue, bool rerun = true);
  bool captured() const;
  // Captured, and no process-wide scratch reallocated since the capture began (grow_scratch):
  // the graph's addresses still hold. Owners capture again when it is not.
  bool current() const;
  // Queues the captured work once (asynchronously). Throws Error when nothing is captured.
  void launch();
  // The nodes of the last capture (kernels, memsets, event records...).
  std::size_t nodes() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Times n pieces of work alternately as the GPU runs them: `queue(i)` queues piece i. With
// `as_graph` each piece is captured once into a CUDA graph (CapturedWork) and launched, else
// `queue` is called at each run. `warmup` untimed rounds, then `rounds` timed ones, the pieces of
// each in core/clock.h's round_order (a permutation of its own per round); each piece
// sits between two CUDA events, read after each round (one synchronisation per round, none between
// pieces); `after_round`, when given, runs after each round's read. Returns ms[piece][timed round].
std::vector<std::vector<double>> time_alternately(int n, const std::function<void(int)>& queue,
                                                  bool as_graph, int warmup, int rounds,
                                                  const std::function<void()>& after_round = {});

// cudaProfilerStart / cudaProfilerStop: the window a profiler started with
// `--profile-from-start off` (ncu, nsys) collects; without one attached they do nothing.
void profiler_start();
void profiler_stop();

// What one begin/end pair of the event timer costs: host microseconds to record two events, and the
// device milliseconds an empty pair measures (the timer's resolution floor). Medians of `pairs`.
struct EventTimerOverhead {
  double host_us_per_pair = 0.0;
  double device_ms_empty_pair = 0.0;
};
EventTimerOverhead measure_event_timer_overhead(int pairs);

}  // namespace nnperf::cuda
