#include "nnperf/profile/power.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>

#include "nnperf/core/error.h"
#include "nnperf/core/clock.h"

namespace nnperf {

namespace fs = std::filesystem;

namespace {

// The first line of a sysfs attribute, or nothing with `why` set to the system's reason
// ("Permission denied": energy_uj is root-only since the CVE-2020-8694 fix).
std::optional<std::string> read_line(const fs::path& p, std::string* why = nullptr) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (why) *why = std::strerror(errno);
    return std::nullopt;
  }
  char buf[256];
  const ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  const int err = errno;
  ::close(fd);
  if (n < 0) {
    if (why) *why = std::strerror(err);
    return std::nullopt;
  }
  std::string s(buf, static_cast<std::size_t>(n));
  if (const auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  return s;
}

std::optional<uint64_t> read_u64(const fs::path& p, std::string* why = nullptr) {
  auto s = read_line(p, why);
  if (!s) return std::nullopt;
  std::size_t used = 0;
  uint64_t v = 0;
  try {
    v = std::stoull(*s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (s->empty() || used != s->size() || (*s)[0] == '-') {
    if (why) *why = fmt::format("expected a counter in microjoules, found '{}'", *s);
    return std::nullopt;
  }
  return v;
}

}  // namespace

RaplReader::RaplReader(fs::path root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    reason_ =
        fmt::format("no RAPL powercap interface ({} does not exist; common in VMs and containers)",
                    root.string());
    return;
  }
  std::vector<fs::path> zones;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("intel-rapl:", 0) == 0) zones.push_back(e.path());
  }
  std::sort(zones.begin(), zones.end());
  std::string unreadable;
  for (const auto& z : zones) {
    const std::string id = z.filename().string();
    const bool top = std::count(id.begin(), id.end(), ':') == 1;
    std::string why;
    const auto energy = read_u64(z / "energy_uj", &why);
    if (!energy) {
      if (unreadable.empty()) unreadable = fmt::format("{}: {}", (z / "energy_uj").string(), why);
      continue;
    }
    const auto range = read_u64(z / "max_energy_range_uj", &why);
    if (!range || *range == 0) {
      if (unreadable.empty())
        unreadable = fmt::format("{}: {}", (z / "max_energy_range_uj").string(),
                                 range ? "a range of 0" : why);
      continue;
    }
    RaplDomain d;
    d.name = read_line(z / "name").value_or(id);
    if (!top) {
      const std::string parent_id = id.substr(0, id.rfind(':'));
      d.name = read_line(root / parent_id / "name").value_or(parent_id) + "/" + d.name;
    }
    d.energy_file = z / "energy_uj";
    d.max_range_uj = *range;
    d.top_level = top;
    domains_.push_back(d);
  }
  if (domains_.empty()) {
    reason_ =
        zones.empty()
            ? fmt::format("no intel-rapl zones under {}", root.string())
            : fmt::format(
                  "RAPL counters not readable ({}; since the CVE-2020-8694 fix they need root)",
                  unreadable);
  }
}

std::vector<uint64_t> RaplReader::read() const {
  std::vector<uint64_t> out;
  out.reserve(domains_.size());
  for (const auto& d : domains_) {
    std::string why;
    const auto v = read_u64(d.energy_file, &why);
    if (!v)
      throw Error(fmt::format("{}: could not read the RAPL energy counter: {}",
                              d.energy_file.string(), why));
    out.push_back(*v);
  }
  return out;
}

double RaplReader::delta_joules(uint64_t before, uint64_t after, uint64_t max_range_uj) {
  // The counter runs from 0 to max_range_uj and wraps; one wrap per window is assumed (a package
  // at 200 W wraps a 262 J range in about 20 minutes, far longer than a sampling interval).
  const uint64_t d = after >= before ? after - before : (max_range_uj - before) + after + 1;
  return static_cast<double>(d) * 1e-6;
}

double RaplReader::package_joules(const std::vector<uint64_t>& before,
                                  const std::vector<uint64_t>& after) const {
  double j = 0;
  for (std::size_t i = 0; i < domains_.size() && i < before.size() && i < after.size(); ++i) {
    if (domains_[i].top_level) j += delta_joules(before[i], after[i], domains_[i].max_range_uj);
  }
  return j;
}

// NVML entry points by their documented C signatures (no header on this machine).
NvmlReader::NvmlReader(const std::string& library, const std::string& pci_bus_id) {
  lib_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib_ == nullptr) {
    const char* e = dlerror();
    reason_ = fmt::format("NVML not available ({})", e != nullptr ? e : library + " not found");
    return;
  }
  auto init = reinterpret_cast<int (*)()>(dlsym(lib_, "nvmlInit_v2"));
  auto count = reinterpret_cast<int (*)(unsigned int*)>(dlsym(lib_, "nvmlDeviceGetCount_v2"));
  auto handle =
      reinterpret_cast<int (*)(unsigned int, void**)>(dlsym(lib_, "nvmlDeviceGetHandleByIndex_v2"));
  get_power_ =
      reinterpret_cast<int (*)(void*, unsigned int*)>(dlsym(lib_, "nvmlDeviceGetPowerUsage"));
  get_energy_ = reinterpret_cast<int (*)(void*, unsigned long long*)>(
      dlsym(lib_, "nvmlDeviceGetTotalEnergyConsumption"));
  shutdown_ = reinterpret_cast<int (*)()>(dlsym(lib_, "nvmlShutdown"));
  if (!init || !count || !handle || !get_power_) {
    reason_ = fmt::format("{} lacks the expected NVML entry points", library);
    return;
  }
  if (const int rc = init(); rc != 0) {
    auto text = reinterpret_cast<const char* (*)(int)>(dlsym(lib_, "nvmlErrorString"));
    const char* s = text != nullptr ? text(rc) : nullptr;
    reason_ = fmt::format("nvmlInit failed: {} (error {})", s != nullptr ? s : "unknown", rc);
    shutdown_ = nullptr;
    return;
  }
  unsigned int n = 0;
  count(&n);
  auto by_bus = reinterpret_cast<int (*)(const char*, void**)>(
      dlsym(lib_, "nvmlDeviceGetHandleByPciBusId_v2"));
  int bus_rc = 0;  // the lookup's NVML error, where one was made and failed
  if (void* h = nullptr;
      !pci_bus_id.empty() && by_bus != nullptr && (bus_rc = by_bus(pci_bus_id.c_str(), &h)) == 0) {
    handles_.push_back(h);
    scope_ = fmt::format("the board at {}", pci_bus_id);
  } else {
    for (unsigned int i = 0; i < n; ++i) {
      if (handle(i, &h) == 0) handles_.push_back(h);
    }
    scope_ = fmt::format("all {} boards NVML sees, summed", handles_.size());
    if (!pci_bus_id.empty()) {
      scope_ += by_bus == nullptr
                    ? fmt::format(" (this NVML cannot look up bus {})", pci_bus_id)
                    : fmt::format(" (NVML error {} looking up bus {})", bus_rc, pci_bus_id);
    }
  }
  devices_ = static_cast<int>(handles_.size());
  if (devices_ == 0) {
    reason_ = "NVML reports no device";
  } else if (unsigned int mw = 0; get_power_(handles_[0], &mw) != 0) {
    reason_ = "NVML cannot read the board power (nvmlDeviceGetPowerUsage failed)";
    devices_ = 0;
  }
}

NvmlReader::~NvmlReader() {
  if (shutdown_ != nullptr) shutdown_();
  if (lib_ != nullptr) dlclose(lib_);
}

std::optional<double> NvmlReader::energy_joules() const {
  if (devices_ == 0 || get_energy_ == nullptr) return std::nullopt;
  double j = 0;
  for (void* h : handles_) {
    unsigned long long mj = 0;
    if (get_energy_(h, &mj) != 0) return std::nullopt;  // e.g. NVML_ERROR_NOT_SUPPORTED
    j += static_cast<double>(mj) * 1e-3;
  }
  return j;
}

std::optional<double> NvmlReader::power_watts() const {
  if (devices_ == 0) return std::nullopt;
  double w = 0;
  for (void* h : handles_) {
    unsigned int mw = 0;
    if (get_power_(h, &mw) != 0) return std::nullopt;
    w += mw * 1e-3;
  }
  return w;
}

double trapezoid_joules(const std::vector<PowerSample>& s, double t_end) {
  if (s.empty()) return 0.0;
  double j = s.front().power_w * std::max(0.0, s.front().t_s);
  for (std::size_t i = 1; i < s.size(); ++i)
    j += 0.5 * (s[i - 1].power_w + s[i].power_w) * (s[i].t_s - s[i - 1].t_s);
  j += s.back().power_w * std::max(0.0, t_end - s.back().t_s);
  return j;
}

PowerWindow summarize_power(double seconds, std::optional<double> counter_energy_j,
                            const std::vector<PowerSample>& samples, const std::string& source) {
  PowerWindow w;
  w.seconds = seconds;
  w.samples = static_cast<int64_t>(samples.size());
  w.source = source.empty() ? "none" : source;
  if (counter_energy_j) {
    w.energy_j = counter_energy_j;
  } else if (!samples.empty()) {
    w.energy_j = trapezoid_joules(samples, seconds);
  } else {
    return w;
  }
  if (seconds > 0) w.power_mean_w = *w.energy_j / seconds;
  if (!samples.empty()) {
    double lo = samples[0].power_w, hi = lo, mean = 0;
    for (const auto& p : samples) {
      lo = std::min(lo, p.power_w);
      hi = std::max(hi, p.power_w);
      mean += p.power_w;
    }
    mean /= static_cast<double>(samples.size());
    double ss = 0;
    for (const auto& p : samples) ss += (p.power_w - mean) * (p.power_w - mean);
    w.power_std_w = std::sqrt(ss / static_cast<double>(samples.size()));
    w.power_min_w = lo;
    w.power_max_w = hi;
  }
  return w;
}

PowerMonitor::PowerMonitor(const PowerOptions& options)
    : options_(options), rapl_(options.rapl_root) {
  const std::string& src = options_.source;
  if (src != "auto" && src != "rapl" && src != "nvml" && src != "none") {
    throw UsageError(fmt::format("--power-source {}: expected auto, rapl, nvml or none", src));
  }
  if (src == "none") return;
  // auto: the run's own device decides; a CPU run never opens NVML.
  const bool use_nvml = src == "nvml" || (src == "auto" && options_.device == Device::kCuda);
  if (!use_nvml) {
    if (rapl_.available()) {
      active_ = "rapl";
    } else if (src == "rapl") {
      throw Error(
          fmt::format("--power-source rapl: RAPL cannot be read: {}", rapl_.unavailable_reason()));
    }
    return;
  }
  nvml_ = std::make_unique<NvmlReader>(options_.nvml_library, options_.nvml_pci_bus_id);
  if (nvml_->available()) {
    active_ = "nvml";
  } else if (src == "nvml") {
    throw Error(
        fmt::format("--power-source nvml: NVML cannot be read: {}", nvml_->unavailable_reason()));
  }
}

PowerMonitor::~PowerMonitor() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = false;
  }
  stop_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool PowerMonitor::available() const { return !active_.empty(); }
std::string PowerMonitor::source() const { return active_.empty() ? "none" : active_; }
std::string PowerMonitor::scope() const { return active_ == "nvml" ? nvml_->scope() : ""; }

std::string PowerMonitor::unavailable_reason() const {
  if (available()) return {};
  if (options_.source == "none") return "--power-source none";
  if (nvml_) return nvml_->unavailable_reason() + " (a CUDA run is measured with NVML only)";
  return rapl_.unavailable_reason() +
         " (a CPU run is measured with RAPL only, never with a GPU board's power)";
}

void PowerMonitor::begin() {
  NNPERF_CHECK(!running_, "PowerMonitor::begin() called twice");
  samples_.clear();
  t0_ns_ = now_ns();
  if (active_ == "rapl") {
    rapl_begin_ = rapl_.read();
    rapl_last_ = rapl_begin_;
    rapl_last_t_ = 0;
  }
  nvml_begin_j_ = active_ == "nvml" ? nvml_->energy_joules() : std::nullopt;
  if (active_.empty()) return;
  running_ = true;
  thread_ = std::thread([this] { sample_loop(); });
}

void PowerMonitor::sample_loop() {
  const auto interval =
      std::chrono::microseconds(static_cast<int64_t>(options_.interval_ms * 1000));
  std::unique_lock<std::mutex> lock(mutex_);
  while (running_) {
    if (stop_.wait_for(lock, interval, [this] { return !running_; })) break;
    const double t = static_cast<double>(now_ns() - t0_ns_) * 1e-9;
    if (active_ == "rapl") {
      // A failed read skips this sample (the next one spans the gap); exceptions must not
      // escape the thread.
      try {
        const auto cur = rapl_.read();
        const double dt = t - rapl_last_t_;
        if (dt > 0) samples_.push_back({t, rapl_.package_joules(rapl_last_, cur) / dt});
        rapl_last_ = cur;
        rapl_last_t_ = t;
      } catch (const Error&) {
        ++failed_reads_;
      }
    } else if (auto w = nvml_->power_watts()) {
      samples_.push_back({t, *w});
    }
  }
}

PowerWindow PowerMonitor::end() {
  // The window closes here: its length and energy are read before the sampler stops, so that
  // stopping it never counts in them.
  const double seconds = static_cast<double>(now_ns() - t0_ns_) * 1e-9;
  std::optional<double> energy;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (active_ == "rapl") energy = rapl_.package_joules(rapl_begin_, rapl_.read());
    if (active_ == "nvml" && nvml_begin_j_) {
      if (const auto now = nvml_->energy_joules(); now && *now >= *nvml_begin_j_) {
        energy = *now - *nvml_begin_j_;
      }
    }
    running_ = false;
  }
  stop_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(samples_, [seconds](const PowerSample& s) { return s.t_s > seconds; });
  // A window shorter than one interval, or one whose sampler was never scheduled (a loaded
  // machine), still gets the board's power: one reading at its end. (RAPL's samples are energy
  // differences; its window energy stands without them.)
  if (active_ == "nvml" && samples_.empty()) {
    if (auto w = nvml_->power_watts()) samples_.push_back({seconds, *w});
  }
  return summarize_power(seconds, energy, samples_, active_);
}

}  // namespace nnperf
