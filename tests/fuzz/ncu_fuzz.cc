// libFuzzer target: Nsight Compute CSV text through parse_ncu_csv, ncu_json and
// ncu_utilisation_summary. Properties beyond "no crash, no UB, no hang": only nnperf::Error
// escapes, one line starting with the file name; an import has launches with distinct, non-empty
// IDs; every number is missing (NaN) or finite and non-negative; flops is the sum of the
// precisions available; a utilisation-only import has no counters; the JSON renders (no infinity
// reaches it) with exactly one record per launch.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "nnperf/analysis/ncu.h"
#include "nnperf/core/error.h"

namespace {

void check_number(double v, const char* what) {
  FUZZ_CHECK(std::isnan(v) || (std::isfinite(v) && v >= 0), "%s = %g", what, v);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  nnperf::NcuImport imp;
  try {
    imp = nnperf::parse_ncu_csv(text, "fuzz.csv");
  } catch (const nnperf::Error& e) {
    nnperf::fuzz::check_error_message(e.what(), "fuzz.csv");
    return 0;
  }
  FUZZ_CHECK(imp.layout == "details" || imp.layout == "raw", "layout '%s'", imp.layout.c_str());
  FUZZ_CHECK(imp.number_convention == "1,234,567.89" || imp.number_convention == "1.234.567,89",
             "convention '%s'", imp.number_convention.c_str());
  FUZZ_CHECK(!imp.launches.empty(), "an import without launches");
  std::set<std::string> ids;
  for (const nnperf::NcuLaunch& l : imp.launches) {
    FUZZ_CHECK(!l.id.empty(), "an empty ID");
    FUZZ_CHECK(ids.insert(l.id).second, "ID '%s' twice", l.id.c_str());
    FUZZ_CHECK(l.line >= 1, "line %lld", static_cast<long long>(l.line));
    for (double v : {l.flops_fp32, l.flops_fp64, l.flops_fp16, l.flops, l.tensor_inst, l.dram_bytes,
                     l.l2_bytes, l.l1_bytes, l.time_s, l.ai_dram, l.ai_l2, l.ai_l1, l.gflops,
                     l.dram_gbs, l.sm_throughput_pct, l.dram_throughput_pct}) {
      check_number(v, "a launch value");
    }
    double sum = 0;
    bool any = false;
    for (double p : {l.flops_fp32, l.flops_fp64, l.flops_fp16}) {
      if (!std::isnan(p)) {
        sum += p;
        any = true;
      }
    }
    FUZZ_CHECK(any ? std::fabs(l.flops - sum) <= 1e-12 * sum : std::isnan(l.flops),
               "flops %g but the precisions sum to %g", l.flops, sum);
    if (imp.utilisation_only) {
      FUZZ_CHECK(std::isnan(l.flops) && std::isnan(l.dram_bytes), "counters in a utilisation file");
    } else {
      FUZZ_CHECK(!std::isnan(l.dram_bytes) || !l.flags.empty(), "DRAM bytes missing unflagged");
    }
    for (std::size_t f = 1; f < l.flags.size(); ++f) {
      FUZZ_CHECK(l.flags[f - 1] < l.flags[f], "flags not sorted and unique");
    }
  }
  const nlohmann::json doc = nnperf::ncu_json(imp, {1000.0, 100.0});
  const std::string dumped = doc.dump();  // throws on invalid UTF-8 only with strict handlers
  FUZZ_CHECK(!dumped.empty(), "an empty JSON dump");
  FUZZ_CHECK(doc["records"].size() == (imp.utilisation_only ? 0 : imp.launches.size()),
             "%zu records for %zu launches", doc["records"].size(), imp.launches.size());
  const nlohmann::json summary = nnperf::ncu_utilisation_summary(imp);
  FUZZ_CHECK(summary["records"].size() == imp.launches.size(), "utilisation records");
  return 0;
}
