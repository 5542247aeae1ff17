// run.json: everything needed to tell two measurements apart later (machine, build, threads,
// BLAS, libraries, date, OS, relevant environment), gathered once per run from core/ and the
// generated build_info.h.
#include "nnperf/io/run_info.h"

#include <fmt/format.h>
#include <gnu/libc-version.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <ctime>

#include "nnperf/build_info.h"
#include "nnperf/core/cpu.h"
#include "nnperf/core/threads.h"
#include "nnperf/io/files.h"

namespace nnperf {

namespace {

std::string format_time(const char* fmt_str, bool utc) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  if (utc) {
    gmtime_r(&now, &tm);
  } else {
    localtime_r(&now, &tm);
  }
  char buf[64];
  const std::size_t n = std::strftime(buf, sizeof buf, fmt_str, &tm);
  return std::string(buf, n);
}

nlohmann::json env_json() {
  // Variables that change what a run measures; recorded only when set.
  static constexpr const char* kNames[] = {
      "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NNPERF_SIMD", "NNPERF_THREADS",
      "NNPERF_DATA",     "OMP_PROC_BIND",        "OMP_PLACES",  "CUDA_VISIBLE_DEVICES"};
  nlohmann::json env = nlohmann::json::object();
  for (const char* name : kNames) {
    if (const char* v = std::getenv(name)) env[name] = v;
  }
  return env;
}

}  // namespace

std::string iso8601_now() { return format_time("%Y-%m-%dT%H:%M:%SZ", true); }

std::string timestamp_compact() { return format_time("%Y%m%d_%H%M%S", false); }

std::string hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "unknown-host";
  return buf;
}

nlohmann::json run_context() {
  const CpuInfo& cpu = cpu_info();
  nlohmann::json machine = {
      {"hostname", hostname()},
      {"cpu_model", cpu.model_name},
      {"logical_cpus", cpu.logical_cpus},
      {"simd", to_string(cpu.simd)},
      {"simd_active", to_string(active_simd())},
      {"avx2", cpu.has_avx2},
      {"fma", cpu.has_fma},
      {"avx512f", cpu.has_avx512f},
      {"nominal_mhz", cpu.nominal_mhz},
      {"caches",
       {{"l1d_bytes", cpu.l1d_bytes}, {"l2_bytes", cpu.l2_bytes}, {"l3_bytes", cpu.l3_bytes}}},
  };
  nlohmann::json build = {
      {"version", build_info::kVersion},
      {"commit", build_info::kGitCommit},
      {"build_type", build_info::kBuildType},
      {"compiler", build_info::kCompiler},
  };
  nlohmann::json libraries = {
      {"blas", blas_description()},
      {"zlib", zlibVersion()},
      {"fmt",
       fmt::format("{}.{}.{}", FMT_VERSION / 10000, FMT_VERSION / 100 % 100, FMT_VERSION % 100)},
      {"nlohmann_json", fmt::format("{}.{}.{}", NLOHMANN_JSON_VERSION_MAJOR,
                                    NLOHMANN_JSON_VERSION_MINOR, NLOHMANN_JSON_VERSION_PATCH)},
      {"glibc", gnu_get_libc_version()},
  };
  nlohmann::json os = nlohmann::json::object();
  struct utsname u {};
  if (::uname(&u) == 0) {
    os = {{"sysname", u.sysname},
          {"release", u.release},
          {"version", u.version},
          {"machine", u.machine}};
  }
  return {
      {"machine", machine},
      {"build", build},
      {"commit", build_info::kGitCommit},
      {"threads", num_threads()},
      {"blas", blas_description()},
      {"libraries", libraries},
      {"date", iso8601_now()},
      {"os", os},
      {"env", env_json()},
  };
}

void write_json_atomic(const std::filesystem::path& path, const nlohmann::json& j) {
  // Invalid UTF-8 (a path or hostname in a legacy encoding) becomes U+FFFD instead of throwing.
  std::string text = j.dump(4, ' ', false, nlohmann::json::error_handler_t::replace);
  text += '\n';
  write_file_atomic(path, text);
}

void write_run_json(const std::filesystem::path& dir, const std::string& command_line,
                    const nlohmann::json& extra) {
  ensure_writable_dir(dir);
  nlohmann::json j = run_context();
  j["command"] = command_line;
  if (extra.is_object()) {
    for (const auto& [key, value] : extra.items()) j[key] = value;
  } else if (!extra.is_null()) {
    j["extra"] = extra;
  }
  write_json_atomic(dir / "run.json", j);
}

}  // namespace nnperf
