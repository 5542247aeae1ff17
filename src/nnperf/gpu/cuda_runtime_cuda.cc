// gpu/cuda.h over the CUDA runtime (compiled only when the CUDA backend is built). Linked with the
// static runtime, so the binary starts on machines without the driver; the driver itself
// (libcuda.so.1) is opened by the runtime on first use, and gpu/probe.h's dlopen probe words the
// reason when it is missing.
#include "nnperf/gpu/cuda.h"

#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <mutex>
#include <vector>

#include "nnperf/core/clock.h"
#include "nnperf/core/error.h"
#include "nnperf/gpu/cuda_check.h"
#include "nnperf/gpu/probe.h"

namespace nnperf::cuda {

void check(cudaError_t rc, const char* call) {
  if (rc == cudaSuccess) return;
  throw Error(fmt::format("CUDA: {} failed: {} ({})", call, cudaGetErrorString(rc),
                          cudaGetErrorName(rc)));
}

void fail(const std::string& message) { throw Error(message); }

void ensure_device() {
  if (!available()) throw Error(unavailable_reason());
}

bool compiled() { return true; }

const std::string& unavailable_reason() {
  static const std::string reason = [] {
    // The driver probe first: it says which library is missing in words the runtime does not.
    const CudaProbe probe = probe_cuda();
    if (!probe.driver_loaded || probe.devices.empty()) return "no CUDA device: " + probe.message;
    int count = 0;
    if (const cudaError_t rc = cudaGetDeviceCount(&count); rc != cudaSuccess) {
      return fmt::format("no CUDA device: cudaGetDeviceCount: {} ({})", cudaGetErrorString(rc),
                         cudaGetErrorName(rc));
    }
    if (count == 0) return std::string("no CUDA device: the CUDA runtime sees none");
    if (const cudaError_t rc = cudaSetDevice(0); rc != cudaSuccess) {
      return fmt::format("CUDA device 0 unusable: cudaSetDevice: {}", cudaGetErrorString(rc));
    }
    return std::string();
  }();
  return reason;
}

void require(std::string_view what) {
  if (!available()) throw UsageError(fmt::format("{}: {}", what, unavailable_reason()));
}

std::string device_summary() {
  if (!available()) return "";
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
  return fmt::format("{}, {} SMs, sm_{}{}, {:.1f} GiB", p.name, p.multiProcessorCount, p.major,
                     p.minor, static_cast<double>(p.totalGlobalMem) / (1u << 30));
}

DeviceProperties device_properties() {
  if (!available()) throw Error(unavailable_reason());
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
  DeviceProperties d;
  d.name = p.name;
  d.multiprocessors = p.multiProcessorCount;
  d.compute_major = p.major;
  d.compute_minor = p.minor;
  int khz = 0;  // cudaDeviceProp::clockRate is gone in CUDA 13; the attribute stays
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0) == cudaSuccess) d.clock_mhz = khz / 1000;
  d.l2_bytes = p.l2CacheSize;
  check(cudaMemGetInfo(&d.free_bytes, &d.total_bytes), "cudaMemGetInfo");
  std::array<char, 32> bus{};
  if (cudaDeviceGetPCIBusId(bus.data(), static_cast<int>(bus.size()), 0) == cudaSuccess) {
    d.pci_bus_id = bus.data();
  }
  return d;
}

Buffer::Buffer(std::size_t count) : count_(count) {
  if (!available()) throw Error(unavailable_reason());
  if (count == 0) return;
  void* p = nullptr;
  if (const cudaError_t rc = cudaMalloc(&p, count * sizeof(float)); rc != cudaSuccess) {
    std::size_t free_bytes = 0, total = 0;
    (void)cudaGetLastError();
    (void)cudaMemGetInfo(&free_bytes, &total);
    throw Error(fmt::format("CUDA: cannot allocate {:.1f} MiB of device memory ({:.1f} MiB free): {}",
                            static_cast<double>(count * sizeof(float)) / (1 << 20),
                            static_cast<double>(free_bytes) / (1 << 20), cudaGetErrorString(rc)));
  }
  data_ = static_cast<float*>(p);
}

Buffer::~Buffer() {
  if (data_ != nullptr) (void)cudaFree(data_);
}

void Buffer::upload(std::span<const float> host) {
  if (host.size() != count_) {
    throw Error(fmt::format("CUDA upload of {} floats into a buffer of {}", host.size(), count_));
  }
  if (count_ > 0) {
    check(cudaMemcpy(data_, host.data(), count_ * sizeof(float), cudaMemcpyHostToDevice),
          "cudaMemcpy (host to device)");
  }
}

void Buffer::upload_prefix(std::span<const float> host) {
  if (host.size() > count_) {
    throw Error(fmt::format("CUDA upload of {} floats into a buffer of {}", host.size(), count_));
  }
  if (!host.empty()) {
    check(cudaMemcpy(data_, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice),
          "cudaMemcpy (host to device)");
  }
}

void Buffer::download(std::span<float> host) const {
  if (host.size() != count_) {
    throw Error(fmt::format("CUDA download of {} floats from a buffer of {}", count_, host.size()));
  }
  if (count_ > 0) {
    check(cudaMemcpy(host.data(), data_, count_ * sizeof(float), cudaMemcpyDeviceToHost),
          "cudaMemcpy (device to host)");
  }
}

void synchronize() {
  check(cudaGetLastError(), "a kernel launch");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

namespace {

// True while this thread's stream is being captured into a graph (CapturedWork).
bool capturing() {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  check(cudaStreamIsCapturing(cudaStreamPerThread, &status), "cudaStreamIsCapturing");
  return status == cudaStreamCaptureStatusActive;
}

class EventTimeline final : public Timeline {
 public:
  EventTimeline() = default;
  ~EventTimeline() override {
    for (cudaEvent_t e : events_) (void)cudaEventDestroy(e);
  }
  EventTimeline(const EventTimeline&) = delete;
  EventTimeline& operator=(const EventTimeline&) = delete;
  const char* name() const override { return "cuda-events"; }
  int mark() override {
    if (next_ == events_.size()) reserve(static_cast<int>(next_ + 1));  // not reserved: now
    if (capturing()) {  // a node of the graph being captured, recorded at each launch
      check(cudaEventRecordWithFlags(events_[next_], cudaStreamPerThread, cudaEventRecordExternal),
            "cudaEventRecordWithFlags (captured)");
    } else {
      check(cudaEventRecord(events_[next_], cudaStreamPerThread), "cudaEventRecord");
    }
    return static_cast<int>(next_++);
  }
  void reserve(int marks) override {
    while (events_.size() < static_cast<std::size_t>(marks)) {
      cudaEvent_t e = nullptr;
      check(cudaEventCreate(&e), "cudaEventCreate");
      events_.push_back(e);
    }
  }
  // Summed from consecutive marks' intervals (each short, so its float milliseconds keep their
  // precision however long the timeline runs).
  std::vector<int64_t> read() override {
    std::vector<int64_t> t(next_, 0);
    if (next_ > 0) check(cudaEventSynchronize(events_[next_ - 1]), "cudaEventSynchronize");
    double ns = 0;
    for (std::size_t i = 1; i < next_; ++i) {
      float ms = 0.0f;
      check(cudaEventElapsedTime(&ms, events_[i - 1], events_[i]), "cudaEventElapsedTime");
      ns += static_cast<double>(ms) * 1e6;
      t[i] = std::llround(ns);
    }
    next_ = 0;
    return t;
  }

 private:
  std::vector<cudaEvent_t> events_;
  std::size_t next_ = 0;
};

// Begin/end are marks on an EventTimeline (events created once and reused: no allocation on the
// timed path); resolve() reads the timeline once and sums each pair's interval into its slot.
class EventTimer final : public IntervalTimer {
 public:
  // Every slot's begin and end event created here, not inside a timed interval.
  explicit EventTimer(int slots) : pending_(static_cast<std::size_t>(slots), -1) {
    timeline_.reserve(2 * slots);
  }
  const char* name() const override { return "cuda-events"; }

  void begin(int slot) override { pending_[static_cast<std::size_t>(slot)] = timeline_.mark(); }

  void end(int slot) override {
    const std::size_t s = static_cast<std::size_t>(slot);
    if (pending_[s] < 0) throw Error(fmt::format("event timer: end({}) without begin", slot));
    pairs_.push_back({pending_[s], timeline_.mark(), slot});
    pending_[s] = -1;
  }

  void resolve(std::vector<double>& ms, std::vector<int64_t>& counts) override {
    ms.resize(pending_.size(), 0.0);
    counts.resize(pending_.size(), 0);
    const std::vector<int64_t> t = timeline_.read();
    for (const Pair& p : pairs_) {
      ms[static_cast<std::size_t>(p.slot)] +=
          static_cast<double>(t[static_cast<std::size_t>(p.end)] -
                              t[static_cast<std::size_t>(p.begin)]) * 1e-6;
      ++counts[static_cast<std::size_t>(p.slot)];
    }
    pairs_.clear();
    std::fill(pending_.begin(), pending_.end(), -1);
  }

 private:
  struct Pair {
    int begin, end, slot;
  };
  EventTimeline timeline_;
  std::vector<int> pending_;  // per slot: index of its open begin mark, or -1
  std::vector<Pair> pairs_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

std::unique_ptr<IntervalTimer> make_event_timer(int slots) {
  require("CUDA event timer");
  if (slots < 1) throw Error("event timer: at least one slot");
  return std::make_unique<EventTimer>(slots);
}

struct CapturedWork::State {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  std::size_t nodes = 0;
  uint64_t generation = 0;  // scratch_generation() when the last capture began
  void drop() {
    if (exec != nullptr) (void)cudaGraphExecDestroy(exec);
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    exec = nullptr;
    graph = nullptr;
    nodes = 0;
  }
  ~State() { drop(); }
};

CapturedWork::CapturedWork() : state_(std::make_unique<State>()) {}
CapturedWork::~CapturedWork() = default;

void CapturedWork::capture(const std::function<void()>& queue, bool rerun) {
  require("CUDA graph capture");
  State& s = *state_;
  const auto once = [&] {
    s.generation = scratch_generation();  // a reallocation during the capture leaves it stale
    // Relaxed: a library's first-use allocation inside `queue` is allowed (it is not captured).
    check(cudaStreamBeginCapture(cudaStreamPerThread, cudaStreamCaptureModeRelaxed),
          "cudaStreamBeginCapture");
    cudaGraph_t g = nullptr;
    try {
      queue();
    } catch (...) {
      (void)cudaStreamEndCapture(cudaStreamPerThread, &g);  // ends it whatever went wrong
      if (g != nullptr) (void)cudaGraphDestroy(g);
      (void)cudaGetLastError();  // the capture's error is not sticky: clear it
      s.drop();
      throw;
    }
    if (const cudaError_t rc = cudaStreamEndCapture(cudaStreamPerThread, &g); rc != cudaSuccess) {
      (void)cudaGetLastError();
      s.drop();
      check(rc, "cudaStreamEndCapture (a queued call could not be captured)");
    }
    if (s.exec != nullptr) {  // the same work again (new event marks, same kernels): in place
      cudaGraphExecUpdateResultInfo info{};
      if (cudaGraphExecUpdate(s.exec, g, &info) != cudaSuccess) {
        (void)cudaGetLastError();
        (void)cudaGraphExecDestroy(s.exec);
        s.exec = nullptr;
      }
    }
    if (s.exec == nullptr) {
      if (const cudaError_t rc = cudaGraphInstantiate(&s.exec, g, 0); rc != cudaSuccess) {
        (void)cudaGraphDestroy(g);
        s.exec = nullptr;
        s.drop();
        check(rc, "cudaGraphInstantiate");
      }
    }
    if (s.graph != nullptr) (void)cudaGraphDestroy(s.graph);
    s.graph = g;
    check(cudaGraphGetNodes(g, nullptr, &s.nodes), "cudaGraphGetNodes");
  };
  // Work that grows shared scratch while it is queued (a workspace another plan owner shrank)
  // leaves the nodes queued before the growth on the freed buffer: capture again, now that the
  // scratch is large enough. A second move means the work reallocates every time it is queued.
  once();
  if (current()) return;
  if (rerun) once();
  if (!current()) {
    s.drop();
    throw Error(rerun ? "CUDA graph capture: process-wide scratch was reallocated during each of "
                        "two captures of the same work (its addresses would not hold)"
                      : "CUDA graph capture: process-wide scratch was reallocated during the "
                        "capture (its addresses would not hold)");
  }
}

bool CapturedWork::captured() const { return state_->exec != nullptr; }

bool CapturedWork::current() const {
  return captured() && state_->generation == scratch_generation();
}

void CapturedWork::launch() {
  if (state_->exec == nullptr) throw Error("CUDA graph: launch() before a capture");
  check(cudaGraphLaunch(state_->exec, cudaStreamPerThread), "cudaGraphLaunch");
}

std::size_t CapturedWork::nodes() const { return state_->nodes; }

std::vector<std::vector<double>> time_alternately(int n, const std::function<void(int)>& queue,
                                                  bool as_graph, int warmup, int rounds,
                                                  const std::function<void()>& after_round) {
  require("CUDA timing");
  if (n < 1 || warmup < 0 || rounds < 1) throw Error("time_alternately: n, rounds >= 1");
  std::vector<std::unique_ptr<CapturedWork>> graphs;
  for (int i = 0; as_graph && i < n; ++i) {
    graphs.push_back(std::make_unique<CapturedWork>());
    graphs.back()->capture([&] { queue(i); });
  }
  EventTimer timer(n);
  std::vector<std::vector<double>> ms(static_cast<std::size_t>(n));
  std::vector<double> sums;
  std::vector<int64_t> counts;
  for (int round = 0; round < warmup + rounds; ++round) {
    for (const int i : round_order(n, round)) {
      timer.begin(i);
      if (as_graph) {
        graphs[static_cast<std::size_t>(i)]->launch();
      } else {
        queue(i);
      }
      timer.end(i);
    }
    sums.assign(ms.size(), 0.0);
    counts.assign(ms.size(), 0);
    timer.resolve(sums, counts);
    if (after_round) after_round();
    for (std::size_t i = 0; round >= warmup && i < ms.size(); ++i) ms[i].push_back(sums[i]);
  }
  return ms;
}

void profiler_start() { check(cudaProfilerStart(), "cudaProfilerStart"); }
void profiler_stop() { check(cudaProfilerStop(), "cudaProfilerStop"); }

std::unique_ptr<Timeline> make_event_timeline() {
  require("CUDA event timeline");
  return std::make_unique<EventTimeline>();
}

EventTimerOverhead measure_event_timer_overhead(int pairs) {
  require("CUDA event timer");
  pairs = std::max(pairs, 1);
  EventTimer timer(pairs);
  std::vector<double> ms;
  std::vector<int64_t> counts;
  // An untimed first round (the events exist already: EventTimer's constructor made them) warms
  // the path; the second is timed.
  for (int i = 0; i < pairs; ++i) {
    timer.begin(i);
    timer.end(i);
  }
  timer.resolve(ms, counts);
  ms.assign(ms.size(), 0.0);
  counts.assign(counts.size(), 0);
  std::vector<double> host_us;
  host_us.reserve(static_cast<std::size_t>(pairs));
  for (int i = 0; i < pairs; ++i) {
    const int64_t t0 = now_ns();
    timer.begin(i);
    timer.end(i);
    host_us.push_back(static_cast<double>(now_ns() - t0) * 1e-3);
  }
  timer.resolve(ms, counts);
  return {median(host_us), median(ms)};
}

}  // namespace nnperf::cuda
