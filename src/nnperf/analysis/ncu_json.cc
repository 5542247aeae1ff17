// Nsight Compute import rendered as JSON (ncu.h: ncu_json, ncu_utilisation_summary): each launch
// and each kernel name with its FLOPs, bytes, time, intensity and, under the given ceilings, its
// attainable rate and bound; the conventions written into the context.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "nnperf/analysis/ncu.h"
#include "nnperf/analysis/ncu_internal.h"
#include "nnperf/core/error.h"

namespace nnperf {

namespace {

using ncu_detail::kMetricsHint;
using ncu_detail::kNaN;
using ncu_detail::ratio;
using ncu_detail::valid_utf8;

nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

struct Roofed {
  double attainable = kNaN;
  double pct = kNaN;
  const char* bound = nullptr;
};

Roofed roof_of(double flops, double dram_bytes, double gflops, const NcuRoof& roof) {
  Roofed r;
  if (std::isnan(roof.peak_gflops) || std::isnan(roof.peak_gbps)) return r;
  if (dram_bytes == 0 && flops > 0) {
    r.attainable = roof.peak_gflops;
    r.bound = "compute";
  } else {
    const double ai = ratio(flops, dram_bytes);
    if (std::isnan(ai)) return r;
    const double memory = ai * roof.peak_gbps;
    if (memory < roof.peak_gflops) {
      r.attainable = memory;
      r.bound = "memory";
    } else {
      r.attainable = roof.peak_gflops;
      r.bound = "compute";
    }
  }
  r.pct = r.attainable > 0 ? 100 * gflops / r.attainable : kNaN;
  return r;
}

void check_roof(const NcuRoof& roof) {
  for (const auto& [name, v] :
       {std::pair{"peak_gflops", roof.peak_gflops}, std::pair{"peak_gbps", roof.peak_gbps}}) {
    if (!std::isnan(v) && !(std::isfinite(v) && v > 0)) {
      throw UsageError(
          fmt::format("ncu roofline: {} must be a positive number (or unknown), got {}", name, v));
    }
  }
}

nlohmann::json convention_lines() {
  return {
      "FLOPs per precision (fp32, fp64, fp16) = 2 x FMA + MUL + ADD thread instructions "
      "(sm__sass_thread_inst_executed_op_{f,d,h}{fma,mul,add}_pred_on.sum, or smsp__); flops is "
      "the sum of the precisions available",
      "tensor-pipe work (sm__inst_executed_pipe_tensor.sum > 0) is not in flops: such launches are "
      "flagged tensor_pipe_not_counted",
      "fp16 counters count instructions, so packed half2 work may be undercounted: launches with "
      "fp16 work are flagged fp16_half2_may_be_undercounted",
      "bytes: dram__bytes.sum (or dram__bytes_read.sum + dram__bytes_write.sum), lts__t_bytes.sum, "
      "l1tex__t_bytes.sum; decimal prefixes, 1 Kbyte = 1000 bytes; each row's own unit",
      "time: gpu__time_duration.sum, else sm__cycles_elapsed.avg / "
      "sm__cycles_elapsed.avg.per_second",
      "GFLOP/s and GB/s are decimal (1e9); intensity = flops / bytes of that level",
      "a launch is its ncu ID; by_name sums the launches with identical names",
      "attainable_gflops = min(peak_gflops, ai_dram x peak_gbps); a missing (n/a) value is null, "
      "and so is everything computed from it"};
}

}  // namespace

nlohmann::json ncu_utilisation_summary(const NcuImport& imp) {
  nlohmann::json out;
  out["path"] = valid_utf8(imp.path);
  out["utilisation_only"] = imp.utilisation_only;
  if (imp.utilisation_only) {
    out["message"] = valid_utf8(fmt::format(
        "{} holds only utilisation metrics ({}), no FLOP or byte counters: no counter roofline can "
        "be drawn from it; {}",
        imp.path,
        imp.pct_metrics.empty() ? std::string("...pct...")
                                : quote_input(imp.pct_metrics.front(), 80),
        kMetricsHint));
  } else {
    out["message"] = nullptr;
  }
  out["launches"] = imp.launches.size();
  const auto summarise = [&](double NcuLaunch::*field) -> nlohmann::json {
    double weighted = 0, weights = 0, plain = 0, lo = kNaN, hi = kNaN;
    std::size_t count = 0, untimed = 0;
    for (const NcuLaunch& l : imp.launches) {
      const double u = l.*field;
      if (!std::isfinite(u)) continue;
      ++count;
      plain += u;
      lo = std::isnan(lo) ? u : std::min(lo, u);
      hi = std::isnan(hi) ? u : std::max(hi, u);
      if (std::isfinite(l.time_s) && l.time_s >= 0) {
        weighted += u * l.time_s;
        weights += l.time_s;
      } else {
        ++untimed;
      }
    }
    if (count == 0) return nullptr;
    nlohmann::json s;
    if (untimed == 0 && weights > 0) {
      s["mean"] = weighted / weights;
      s["weighting"] = "time";
    } else {
      s["mean"] = plain / static_cast<double>(count);
      s["weighting"] =
          untimed > 0 ? fmt::format("unweighted: no time for {} of {} launches", untimed, count)
                      : std::string("unweighted: every time is zero");
    }
    s["min"] = lo;
    s["max"] = hi;
    s["launches"] = count;
    return s;
  };
  out["sm_throughput_pct"] = summarise(&NcuLaunch::sm_throughput_pct);
  out["dram_throughput_pct"] = summarise(&NcuLaunch::dram_throughput_pct);
  out["pct_metrics"] = imp.pct_metrics;
  nlohmann::json records = nlohmann::json::array();
  for (const NcuLaunch& l : imp.launches) {
    records.push_back({{"id", l.id},
                       {"name", l.name},
                       {"time_s", num(l.time_s)},
                       {"sm_throughput_pct", num(l.sm_throughput_pct)},
                       {"dram_throughput_pct", num(l.dram_throughput_pct)}});
  }
  out["records"] = std::move(records);
  return out;
}

namespace {

nlohmann::json import_context(const NcuImport& imp, const NcuRoof& roof) {
  nlohmann::json context;
  context["tool"] = "ncu";
  context["path"] = valid_utf8(imp.path);
  context["layout"] = imp.layout;
  context["number_convention"] = imp.number_convention;
  context["number_convention_source"] = imp.number_convention_source;
  context["launches"] = imp.launches.size();
  context["utilisation_only"] = imp.utilisation_only;
  context["peak_gflops"] = num(roof.peak_gflops);
  context["peak_gbps"] = num(roof.peak_gbps);
  context["units"] = {{"flops", "FLOP"},
                      {"bytes", "byte (1 Kbyte = 1000 bytes)"},
                      {"time_s", "second"},
                      {"ai", "FLOP/byte"},
                      {"gflops", "1e9 FLOP/s"},
                      {"dram_gbs", "1e9 byte/s"},
                      {"tensor_inst", "warp instructions"},
                      {"pct_of_attainable", "percent"}};
  context["convention"] = convention_lines();
  nlohmann::json warnings = nlohmann::json::array();
  for (const std::string& w : imp.warnings) warnings.push_back(valid_utf8(w));
  context["warnings"] = std::move(warnings);
  return context;
}

nlohmann::json bound_json(const Roofed& rf) {
  return rf.bound ? nlohmann::json(rf.bound) : nlohmann::json();
}

nlohmann::json launch_json(const NcuLaunch& l, const NcuRoof& roof) {
  const Roofed rf = roof_of(l.flops, l.dram_bytes, l.gflops, roof);
  return {{"id", l.id},
          {"name", l.name},
          {"block", l.block},
          {"grid", l.grid},
          {"flops_fp32", num(l.flops_fp32)},
          {"flops_fp64", num(l.flops_fp64)},
          {"flops_fp16", num(l.flops_fp16)},
          {"flops", num(l.flops)},
          {"tensor_inst", num(l.tensor_inst)},
          {"dram_bytes", num(l.dram_bytes)},
          {"l2_bytes", num(l.l2_bytes)},
          {"l1_bytes", num(l.l1_bytes)},
          {"time_s", num(l.time_s)},
          {"ai_dram", num(l.ai_dram)},
          {"ai_l2", num(l.ai_l2)},
          {"ai_l1", num(l.ai_l1)},
          {"gflops", num(l.gflops)},
          {"dram_gbs", num(l.dram_gbs)},
          {"attainable_gflops", num(rf.attainable)},
          {"pct_of_attainable", num(rf.pct)},
          {"bound", bound_json(rf)},
          {"flags", l.flags}};
}

// The launches of one kernel name, summed.
struct Group {
  std::string name;
  std::vector<std::string> ids;
  double time_s = 0, fp32 = 0, fp64 = 0, fp16 = 0, flops = 0, tensor = 0;
  double dram = 0, l2 = 0, l1 = 0;
  std::set<std::string> flags;

  void add(const NcuLaunch& l) {
    ids.push_back(l.id);
    time_s += l.time_s;
    fp32 += l.flops_fp32;
    fp64 += l.flops_fp64;
    fp16 += l.flops_fp16;
    flops += l.flops;
    tensor += l.tensor_inst;
    dram += l.dram_bytes;
    l2 += l.l2_bytes;
    l1 += l.l1_bytes;
    flags.insert(l.flags.begin(), l.flags.end());
  }
};

// Groups in the order their names first appear.
std::vector<Group> group_by_name(const std::vector<NcuLaunch>& launches) {
  std::vector<Group> groups;
  std::unordered_map<std::string, std::size_t> group_of;
  for (const NcuLaunch& l : launches) {
    auto [it, fresh] = group_of.try_emplace(l.name, groups.size());
    if (fresh) {
      groups.emplace_back();
      groups.back().name = l.name;
    }
    groups[it->second].add(l);
  }
  return groups;
}

nlohmann::json group_json(const Group& g, const NcuRoof& roof) {
  const double gflops = ratio(g.flops, g.time_s) / 1e9;
  const Roofed rf = roof_of(g.flops, g.dram, gflops, roof);
  return {{"name", g.name},
          {"launches", g.ids.size()},
          {"ids", g.ids},
          {"time_s", num(g.time_s)},
          {"flops_fp32", num(g.fp32)},
          {"flops_fp64", num(g.fp64)},
          {"flops_fp16", num(g.fp16)},
          {"flops", num(g.flops)},
          {"tensor_inst", num(g.tensor)},
          {"dram_bytes", num(g.dram)},
          {"l2_bytes", num(g.l2)},
          {"l1_bytes", num(g.l1)},
          {"ai_dram", num(ratio(g.flops, g.dram))},
          {"ai_l2", num(ratio(g.flops, g.l2))},
          {"ai_l1", num(ratio(g.flops, g.l1))},
          {"gflops", num(gflops)},
          {"dram_gbs", num(ratio(g.dram, g.time_s) / 1e9)},
          {"attainable_gflops", num(rf.attainable)},
          {"pct_of_attainable", num(rf.pct)},
          {"bound", bound_json(rf)},
          {"flags", std::vector<std::string>(g.flags.begin(), g.flags.end())}};
}

}  // namespace

nlohmann::json ncu_json(const NcuImport& imp, const NcuRoof& roof) {
  check_roof(roof);
  nlohmann::json context = import_context(imp, roof);
  nlohmann::json records = nlohmann::json::array();
  nlohmann::json by_name = nlohmann::json::array();
  if (imp.utilisation_only) {
    context["kernels"] = nullptr;
    nlohmann::json doc = {{"context", context}, {"records", records}, {"by_name", by_name}};
    doc["utilisation"] = ncu_utilisation_summary(imp);
    return doc;
  }
  for (const NcuLaunch& l : imp.launches) records.push_back(launch_json(l, roof));
  const std::vector<Group> groups = group_by_name(imp.launches);
  for (const Group& g : groups) by_name.push_back(group_json(g, roof));
  context["kernels"] = groups.size();
  return {{"context", context}, {"records", records}, {"by_name", by_name}};
}

}  // namespace nnperf
