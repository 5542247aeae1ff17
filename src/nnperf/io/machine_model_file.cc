// Reading the machine model from measured ceilings: one env of a peaks.json ($NNPERF_PEAKS, else
// ./peaks.json), else the estimate. Field names follow `nnperf peaks` (analysis/peaks.cc); every
// read goes through io/json_read.h, so a broken file is an error naming the file and field.
#include "nnperf/io/machine_model_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <vector>

#include "nnperf/core/error.h"
#include "nnperf/io/json_read.h"
#include "nnperf/io/run_info.h"

namespace nnperf {

namespace {

// Lanes of a compute ceiling's "simd" field ("scalar", "sse", "avx2", "avx512"); 0 = unknown.
int lanes_of(const std::string& simd) {
  if (simd == "scalar") return 1;
  if (simd == "sse") return 4;
  if (simd == "avx2") return 8;
  if (simd == "avx512") return 16;
  return 0;
}

double positive(double v, const JsonPath& where) {
  if (!(v > 0)) fail("{}: expected a positive number, found {}", where.str(), v);
  return v;
}

const nlohmann::json* optional_array(const nlohmann::json& e, const char* key, const JsonPath& at) {
  const auto it = e.find(key);
  if (it == e.end() || it->is_null()) return nullptr;
  if (!it->is_array()) fail("{}: expected an array", at.at(key).str());
  return &*it;
}

std::string env_names(const nlohmann::json& doc) {
  std::vector<std::string> names;
  for (const auto& [k, v] : doc.items()) names.push_back(quote_input(k));
  return fmt::format("{}", fmt::join(names, ", "));
}

// The env `env` names, else this host's, else the only one; nullopt when none fits.
std::optional<std::string> pick_env(const nlohmann::json& doc, const std::string& env) {
  if (!env.empty()) return doc.contains(env) ? std::optional(env) : std::nullopt;
  if (doc.contains(hostname())) return hostname();
  if (doc.size() == 1) return doc.begin().key();
  return std::nullopt;
}

// The cloudml fields' optional "measured" object, and its path.
struct Measured {
  const nlohmann::json* json = nullptr;
  JsonPath at;
};

// FMA, one thread, into m: the active level's compute ceiling, else the widest one converted by
// FMA width, else measured.fma_gflops_per_s_1thread (at measured.simd), else peak_gflops /
// threads; m.avx512_over_avx2 measured when both 1-thread AVX2 and AVX-512 ceilings are there.
void read_fma(const nlohmann::json& e, const JsonPath& at, const Measured& measured,
              double peak_gflops, const CpuInfo& cpu, SimdLevel level, MachineModel& m) {
  std::map<int, double> best;  // lanes -> the best 1-thread ceiling
  if (const nlohmann::json* cc = optional_array(e, "compute_ceilings", at)) {
    for (std::size_t i = 0; i < cc->size(); ++i) {
      const JsonPath ip = at.at("compute_ceilings").item(i);
      const nlohmann::json& c = (*cc)[i];
      if (!c.is_object()) fail("{}: expected an object", ip.str());
      const std::string simd = json_string(c, "simd", ip);
      const int64_t threads = json_integer(c, "threads", ip);
      const double gflops = positive(json_number(c, "gflops", ip), ip.at("gflops"));
      const int lanes = lanes_of(simd);
      if (threads == 1 && lanes != 0) best[lanes] = std::max(best[lanes], gflops);
    }
  }
  if (best.contains(8) && best.contains(16)) m.avx512_over_avx2 = best[16] / best[8];
  // GFLOP/s measured at `lanes` converted to the active level.
  const auto at_level = [&](double gflops, int lanes) {
    const double from = lanes == 16 ? fma_width(m, SimdLevel::kAvx512) : lanes;
    return gflops * fma_width(m, level) / from;
  };
  if (best.contains(simd_lanes(level))) {
    m.fma_gflops_per_core = best[simd_lanes(level)];
    return;
  }
  if (!best.empty()) {
    m.fma_gflops_per_core = at_level(best.rbegin()->second, best.rbegin()->first);
    return;
  }
  const JsonPath& mp = measured.at;
  if (measured.json != nullptr && measured.json->contains("fma_gflops_per_s_1thread")) {
    const double g = positive(json_number(*measured.json, "fma_gflops_per_s_1thread", mp),
                              mp.at("fma_gflops_per_s_1thread"));
    int lanes = simd_lanes(level);
    if (measured.json->contains("simd")) {
      lanes = lanes_of(json_string(*measured.json, "simd", mp));
      if (lanes == 0) fail("{}: expected scalar, sse, avx2 or avx512", mp.at("simd").str());
    }
    m.fma_gflops_per_core = at_level(g, lanes);
    return;
  }
  int64_t threads = cpu.logical_cpus;
  if (measured.json != nullptr && measured.json->contains("threads")) {
    threads = json_integer(*measured.json, "threads", mp);
    if (threads < 1) fail("{}: expected at least 1", mp.at("threads").str());
  }
  m.fma_gflops_per_core = peak_gflops / static_cast<double>(std::max<int64_t>(1, threads));
}

// DRAM into m: the triad plateau at one thread and at the most threads, else the older figures
// (peak_gbps; measured.triad_gbytes_per_s when measured at one thread).
void read_dram(const nlohmann::json& e, const JsonPath& at, const Measured& measured,
               double peak_gbps, MachineModel& m) {
  double dram1 = 0, dram_all = 0;
  int64_t most_threads = 0;
  if (const nlohmann::json* mc = optional_array(e, "memory_ceilings", at)) {
    for (std::size_t i = 0; i < mc->size(); ++i) {
      const JsonPath ip = at.at("memory_ceilings").item(i);
      const nlohmann::json& c = (*mc)[i];
      if (!c.is_object()) fail("{}: expected an object", ip.str());
      const std::string lvl = json_string(c, "level", ip);
      const int64_t threads = json_integer(c, "threads", ip);
      const double gbps = positive(json_number(c, "gbps", ip), ip.at("gbps"));
      if (lvl != "DRAM") continue;
      if (threads == 1) dram1 = std::max(dram1, gbps);
      if (threads > most_threads || (threads == most_threads && gbps > dram_all)) {
        most_threads = threads;
        dram_all = gbps;
      }
    }
  }
  if (dram_all <= 0) dram_all = peak_gbps;
  const JsonPath& mp = measured.at;
  if (dram1 <= 0 && measured.json != nullptr && measured.json->contains("triad_gbytes_per_s") &&
      measured.json->contains("threads") && json_integer(*measured.json, "threads", mp) == 1) {
    dram1 = positive(json_number(*measured.json, "triad_gbytes_per_s", mp),
                     mp.at("triad_gbytes_per_s"));
  }
  // No one-thread figure: one core gets at most all of it, and is assumed to get the estimate's.
  if (dram1 <= 0) dram1 = std::min(dram_all, kEstimateDramGbpsPerCore);
  m.dram_gbps_per_core = dram1;
  m.dram_gbps_total = std::max(dram_all, dram1);
}

// The caches the file names (`nnperf peaks` writes machine.caches) into m; the others stay.
void read_caches(const nlohmann::json& e, const JsonPath& at, MachineModel& m) {
  if (!e.contains("machine") || !e["machine"].is_object() || !e["machine"].contains("caches"))
    return;
  const JsonPath cp = at.at("machine");
  const nlohmann::json& caches = json_object(e["machine"], "caches", cp);
  const JsonPath cap = cp.at("caches");
  auto size = [&](const char* name, long& out) {
    if (const std::optional<double> v = json_optional_number(caches, name, cap); v && *v > 0) {
      out = static_cast<long>(*v);
    }
  };
  size("L1d", m.l1d_bytes);
  size("L2", m.l2_bytes);
  size("L3", m.l3_bytes);
}

}  // namespace

MachineModel machine_model_from_peaks_json(const nlohmann::json& doc, const std::string& env,
                                           const std::string& path, const CpuInfo& cpu,
                                           SimdLevel level) {
  const JsonPath root{path, ""};
  if (!doc.is_object() || doc.empty()) fail("{}: expected an object of environments", path);
  const std::optional<std::string> key = pick_env(doc, env);
  if (!key) {
    if (!env.empty()) fail("{}: no env {} (it holds: {})", path, quote_input(env), env_names(doc));
    fail(
        "{} holds {} environments ({}) and none is named after this host ({}); name one with "
        "$NNPERF_PEAKS_ENV",
        path, doc.size(), env_names(doc), quote_input(hostname()));
  }
  const JsonPath at = root.at(*key);
  const nlohmann::json& e = json_object(doc, *key, root);
  // The cloudml fields, in every layout: all threads' triad and FMA figures.
  const double peak_gbps = positive(json_number(e, "peak_gbps", at), at.at("peak_gbps"));
  const JsonPath pg = at.at("peak_gflops");
  const double peak_gflops =
      positive(json_number(json_object(e, "peak_gflops", at), "fp32", pg), pg.at("fp32"));
  Measured measured{nullptr, at.at("measured")};
  if (e.contains("measured") && !e["measured"].is_null())
    measured.json = &json_object(e, "measured", at);

  MachineModel m = estimate_machine_model(cpu, level);  // caches and blas_simd as detected
  m.source = fmt::format("peaks.json {} env {}", path, quote_input(*key));
  read_fma(e, at, measured, peak_gflops, cpu, level, m);
  read_dram(e, at, measured, peak_gbps, m);
  read_caches(e, at, m);
  return m;
}

MachineModel detect_machine_model() {
  const CpuInfo& cpu = cpu_info();
  const SimdLevel level = active_simd();
  if (const char* path = std::getenv("NNPERF_PEAKS"); path != nullptr && *path != '\0') {
    const char* env = std::getenv("NNPERF_PEAKS_ENV");
    try {
      return machine_model_from_peaks_json(read_json(path), env != nullptr ? env : "", path, cpu,
                                           level);
    } catch (const Error& e) {
      fail("$NNPERF_PEAKS: {}", e.what());
    }
  }
  std::string why;
  std::error_code ec;
  if (std::filesystem::is_regular_file("peaks.json", ec)) {
    const std::string path = "./peaks.json";
    nlohmann::json doc;
    try {
      doc = read_json(path);
    } catch (const Error& e) {
      why = e.what();  // not ours (another tool's file, unreadable): passed over, and said so
    }
    if (why.empty()) {
      if (!doc.is_object() || doc.empty()) {
        why = "not an object of environments";
      } else if (!pick_env(doc, "")) {
        why = fmt::format("{} environments, none named after this host ({})", doc.size(),
                          quote_input(hostname()));
      } else {
        return machine_model_from_peaks_json(doc, "", path, cpu, level);  // a broken env throws
      }
    }
  }
  MachineModel m = estimate_machine_model(cpu, level);
  if (!why.empty()) m.source += fmt::format(" (./peaks.json passed over: {})", why);
  return m;
}

}  // namespace nnperf
