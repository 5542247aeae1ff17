// The machine model: the estimate from fabricated CPU features, peaks.json in the layout
// `nnperf peaks` writes now (compute_ceilings, memory_ceilings) and in the older one
// (measured.*), errors that name the file and the field, and where the model comes from at run
// time ($NNPERF_PEAKS, ./peaks.json, the estimate).
#include "nnperf/core/machine_model.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "nnperf/core/error.h"
#include "nnperf/io/machine_model_file.h"
#include "nnperf/io/run_info.h"
#include "test_util.h"

namespace nnperf {
namespace {

CpuInfo zen3_like(SimdLevel simd, double mhz) {
  CpuInfo c;
  c.model_name = "made-up";
  c.logical_cpus = 4;
  c.simd = simd;
  c.has_avx2 = c.has_fma = simd >= SimdLevel::kAvx2;
  c.l1d_bytes = 32 << 10;
  c.l2_bytes = 512 << 10;
  c.l3_bytes = 32 << 20;
  c.nominal_mhz = mhz;
  return c;
}

TEST(MachineModel, EstimateIsLanesTimesTwoPipesTimesTwoFlopsTimesTheClock) {
  const CpuInfo avx2 = zen3_like(SimdLevel::kAvx2, 3000);
  const MachineModel m = estimate_machine_model(avx2, SimdLevel::kAvx2);
  EXPECT_DOUBLE_EQ(m.fma_gflops_per_core, 96.0);  // 8 lanes x 2 pipes x 2 FLOPs x 3 GHz
  EXPECT_EQ(m.simd, SimdLevel::kAvx2);
  EXPECT_EQ(m.blas_simd, SimdLevel::kAvx2);
  EXPECT_DOUBLE_EQ(m.dram_gbps_per_core, kEstimateDramGbpsPerCore);
  EXPECT_DOUBLE_EQ(m.dram_gbps_total, kEstimateDramGbpsPerCore);
  EXPECT_EQ(m.l3_bytes, 32L << 20);
  EXPECT_EQ(m.source, "estimate from detected features");

  // NNPERF_SIMD=scalar on the same CPU: our kernels at 1 lane, OpenBLAS still at AVX2.
  const MachineModel s = estimate_machine_model(avx2, SimdLevel::kScalar);
  EXPECT_DOUBLE_EQ(s.fma_gflops_per_core, 12.0);
  EXPECT_EQ(s.simd, SimdLevel::kScalar);
  EXPECT_EQ(s.blas_simd, SimdLevel::kAvx2);
  EXPECT_DOUBLE_EQ(fma_gflops_at(s, SimdLevel::kAvx2), 96.0);

  EXPECT_DOUBLE_EQ(estimate_machine_model(zen3_like(SimdLevel::kAvx512, 3000), SimdLevel::kAvx512)
                       .fma_gflops_per_core,
                   192.0);
  // A CPU without AVX2: everything at 1 lane.
  const MachineModel old =
      estimate_machine_model(zen3_like(SimdLevel::kScalar, 3000), SimdLevel::kScalar);
  EXPECT_EQ(old.blas_simd, SimdLevel::kScalar);
  EXPECT_DOUBLE_EQ(old.fma_gflops_per_core, 12.0);
}

TEST(MachineModel, EstimateWithoutAClockOrCachesUsesStatedDefaults) {
  CpuInfo c = zen3_like(SimdLevel::kAvx2, 0);
  c.l1d_bytes = c.l2_bytes = c.l3_bytes = 0;
  const MachineModel m = estimate_machine_model(c, SimdLevel::kAvx2);
  EXPECT_DOUBLE_EQ(m.fma_gflops_per_core, 80.0);  // 2.5 GHz
  EXPECT_GT(m.l1d_bytes, 0);
  EXPECT_GT(m.l2_bytes, 0);
  EXPECT_GT(m.l3_bytes, 0);
  c.nominal_mhz = 1e7;  // nonsense from /proc/cpuinfo: clamped to 6 GHz
  EXPECT_DOUBLE_EQ(estimate_machine_model(c, SimdLevel::kAvx2).fma_gflops_per_core, 192.0);
}

// The layout `nnperf peaks` wrote before ceilings (tests/data/bench_conv/peaks.json).
nlohmann::json old_layout(int threads, double triad) {
  return {{"box1",
           {{"description", "AMD EPYC, avx2 kernels (measured by nnperf peaks)"},
            {"measured",
             {{"fma_gflops_per_s", 203.8},
              {"fma_gflops_per_s_1thread", 101.9},
              {"simd", "avx2"},
              {"threads", threads},
              {"triad_gbytes_per_s", triad}}},
            {"peak_gbps", triad},
            {"peak_gflops", {{"fp32", 203.8}}}}}};
}

TEST(MachineModel, ReadsTheOldLayout) {
  const CpuInfo cpu = zen3_like(SimdLevel::kAvx2, 2445);
  const MachineModel m =
      machine_model_from_peaks_json(old_layout(1, 21.0), "", "p/peaks.json", cpu, SimdLevel::kAvx2);
  EXPECT_DOUBLE_EQ(m.fma_gflops_per_core, 101.9);
  EXPECT_DOUBLE_EQ(m.dram_gbps_per_core, 21.0);
  EXPECT_DOUBLE_EQ(m.dram_gbps_total, 21.0);
  EXPECT_EQ(m.source, "peaks.json p/peaks.json env box1");
  EXPECT_EQ(m.l3_bytes, 32L << 20);  // not in the file: detected

  // Measured at avx2, used at scalar (NNPERF_SIMD=scalar): scaled by the lanes.
  const MachineModel s =
      machine_model_from_peaks_json(old_layout(1, 21.0), "box1", "p", cpu, SimdLevel::kScalar);
  EXPECT_DOUBLE_EQ(s.fma_gflops_per_core, 101.9 / 8);

  // Two threads: the triad is both threads'; one core is assumed to get at most the estimate's.
  const MachineModel two =
      machine_model_from_peaks_json(old_layout(2, 40.0), "", "p", cpu, SimdLevel::kAvx2);
  EXPECT_DOUBLE_EQ(two.dram_gbps_total, 40.0);
  EXPECT_DOUBLE_EQ(two.dram_gbps_per_core, kEstimateDramGbpsPerCore);
}

TEST(MachineModel, ReadsOnlyTheCloudmlFields) {
  const auto doc =
      nlohmann::json::parse(R"({"box": {"peak_gbps": 30, "peak_gflops": {"fp32": 400}}})");
  const MachineModel m = machine_model_from_peaks_json(
      doc, "", "p", zen3_like(SimdLevel::kAvx2, 3000), SimdLevel::kAvx2);
  EXPECT_DOUBLE_EQ(m.fma_gflops_per_core, 100.0);  // 400 over the 4 logical CPUs
  EXPECT_DOUBLE_EQ(m.dram_gbps_total, 30.0);
  EXPECT_DOUBLE_EQ(m.dram_gbps_per_core, kEstimateDramGbpsPerCore);
}

// The layout with ceilings: FMA per SIMD width at 1 and 2 threads, triad plateaus per level.
const char* kNewLayout = R"({"box1": {
  "peak_gbps": 18.0, "peak_gflops": {"fp32": 204.0},
  "machine": {"caches": {"L1d": 49152, "L2": 1310720, "L3": 50331648}},
  "compute_ceilings": [
    {"name": "scalar fma", "simd": "scalar", "threads": 1, "gflops": 12.6},
    {"name": "sse fma", "simd": "sse", "threads": 1, "gflops": 50.5},
    {"name": "avx2 fma", "simd": "avx2", "threads": 1, "gflops": 102.3},
    {"name": "avx2 fma", "simd": "avx2", "threads": 2, "gflops": 204.0}],
  "memory_ceilings": [
    {"level": "L1", "threads": 1, "gbps": 400.0, "working_set_bytes": [4096, 16384]},
    {"level": "L3", "threads": 1, "gbps": 60.0, "working_set_bytes": [1048576, 16777216]},
    {"level": "DRAM", "threads": 1, "gbps": 21.5, "working_set_bytes": [134217728, 268435456]},
    {"level": "DRAM", "threads": 2, "gbps": 27.0, "working_set_bytes": [134217728, 268435456]}],
  "measured": {"fma_gflops_per_s_1thread": 99.0, "simd": "avx2", "threads": 2,
               "triad_gbytes_per_s": 18.0}}})";

TEST(MachineModel, ReadsTheCeilingsLayout) {
  const auto doc = nlohmann::json::parse(kNewLayout);
  const CpuInfo cpu = zen3_like(SimdLevel::kAvx2, 2445);
  const MachineModel m = machine_model_from_peaks_json(doc, "", "p", cpu, SimdLevel::kAvx2);
  EXPECT_DOUBLE_EQ(m.fma_gflops_per_core, 102.3);  // the 1-thread avx2 ceiling, not measured.*
  EXPECT_DOUBLE_EQ(m.dram_gbps_per_core, 21.5);
  EXPECT_DOUBLE_EQ(m.dram_gbps_total, 27.0);
  EXPECT_EQ(m.l1d_bytes, 49152);
  EXPECT_EQ(m.l2_bytes, 1310720);
  EXPECT_EQ(m.l3_bytes, 50331648);
  // The scalar ceiling for the portable kernels; AVX-512 has none here: avx2's, doubled.
  EXPECT_DOUBLE_EQ(
      machine_model_from_peaks_json(doc, "", "p", cpu, SimdLevel::kScalar).fma_gflops_per_core,
      12.6);
  EXPECT_DOUBLE_EQ(
      machine_model_from_peaks_json(doc, "", "p", cpu, SimdLevel::kAvx512).fma_gflops_per_core,
      204.6);
}

// AVX-512 on AMD family 25 (Zen 4) runs a 512-bit FMA on both 256-bit pipes: its estimate, a
// peaks.json's conversions between levels and the line `nnperf devices` prints say so; elsewhere
// (Intel, unknown vendors) AVX-512 is twice AVX2; two measured ceilings replace either rule.
TEST(MachineModel, Avx512FmaRateFollowsTheCpuOrTheMeasuredCeilings) {
  CpuInfo zen4 = zen3_like(SimdLevel::kAvx512, 3000);
  zen4.vendor = "AuthenticAMD";
  zen4.family = 25;
  CpuInfo intel = zen4;
  intel.vendor = "GenuineIntel";
  intel.family = 6;
  EXPECT_DOUBLE_EQ(avx512_fma_speedup(zen4), 1.0);
  EXPECT_DOUBLE_EQ(avx512_fma_speedup(intel), 2.0);
  const MachineModel z = estimate_machine_model(zen4, SimdLevel::kAvx512);
  EXPECT_DOUBLE_EQ(z.fma_gflops_per_core, 96.0);  // 8 x 2 pipes x 2 FLOPs x 3 GHz, as AVX2
  EXPECT_DOUBLE_EQ(fma_gflops_at(z, SimdLevel::kAvx2), 96.0);
  EXPECT_NE(describe(z).find(", AVX-512 FMA at 1.00x AVX2's"), std::string::npos) << describe(z);
  const MachineModel i = estimate_machine_model(intel, SimdLevel::kAvx512);
  EXPECT_DOUBLE_EQ(i.fma_gflops_per_core, 192.0);
  EXPECT_DOUBLE_EQ(fma_gflops_at(i, SimdLevel::kAvx2), 96.0);
  EXPECT_EQ(describe(i).find("AVX-512 FMA at"), std::string::npos);
  // NNPERF_SIMD=avx2 on Zen 4: our kernels at AVX2, OpenBLAS at AVX-512, the same rate.
  const MachineModel capped = estimate_machine_model(zen4, SimdLevel::kAvx2);
  EXPECT_DOUBLE_EQ(fma_gflops_at(capped, capped.blas_simd), capped.fma_gflops_per_core);

  // The ceilings layout with AVX2 only, used at AVX-512: converted by the CPU's rule.
  const auto doc = nlohmann::json::parse(kNewLayout);
  EXPECT_DOUBLE_EQ(
      machine_model_from_peaks_json(doc, "", "p", zen4, SimdLevel::kAvx512).fma_gflops_per_core,
      102.3);
  EXPECT_DOUBLE_EQ(
      machine_model_from_peaks_json(doc, "", "p", intel, SimdLevel::kAvx512).fma_gflops_per_core,
      204.6);
  // With both 1-thread ceilings the ratio is measured, whatever the CPU's rule says.
  auto both = doc;
  both["box1"]["compute_ceilings"].push_back(
      {{"name", "avx512 fma"}, {"simd", "avx512"}, {"threads", 1}, {"gflops", 112.53}});
  const MachineModel mz = machine_model_from_peaks_json(both, "", "p", intel, SimdLevel::kAvx512);
  EXPECT_DOUBLE_EQ(mz.fma_gflops_per_core, 112.53);
  EXPECT_NEAR(mz.avx512_over_avx2, 1.1, 1e-12);
  EXPECT_NEAR(fma_gflops_at(mz, SimdLevel::kAvx2), 102.3, 1e-9);
  const MachineModel m2 = machine_model_from_peaks_json(both, "", "p", zen4, SimdLevel::kAvx2);
  EXPECT_DOUBLE_EQ(m2.fma_gflops_per_core, 102.3);
  EXPECT_NEAR(fma_gflops_at(m2, SimdLevel::kAvx512), 112.53, 1e-9);
}

std::string error_of(const nlohmann::json& doc, const std::string& env = "") {
  try {
    machine_model_from_peaks_json(doc, env, "dir/peaks.json", zen3_like(SimdLevel::kAvx2, 3000),
                                  SimdLevel::kAvx2);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(MachineModel, ErrorsNameTheFileAndTheField) {
  auto doc = nlohmann::json::parse(kNewLayout);
  doc["box1"].erase("peak_gbps");
  EXPECT_EQ(error_of(doc), "dir/peaks.json: field 'box1.peak_gbps' is missing");

  doc = nlohmann::json::parse(kNewLayout);
  doc["box1"]["peak_gflops"]["fp32"] = "fast";
  EXPECT_EQ(error_of(doc),
            "dir/peaks.json: field 'box1.peak_gflops.fp32': expected a number, found a string");

  doc = nlohmann::json::parse(kNewLayout);
  doc["box1"]["compute_ceilings"][2]["gflops"] = -1;
  EXPECT_EQ(error_of(doc),
            "dir/peaks.json: field 'box1.compute_ceilings[2].gflops': expected a positive number, "
            "found -1");

  doc = nlohmann::json::parse(kNewLayout);
  doc["box1"]["memory_ceilings"][3].erase("threads");
  EXPECT_EQ(error_of(doc), "dir/peaks.json: field 'box1.memory_ceilings[3].threads' is missing");

  doc = nlohmann::json::parse(kNewLayout);
  doc["box1"]["memory_ceilings"] = 5;
  EXPECT_EQ(error_of(doc), "dir/peaks.json: field 'box1.memory_ceilings': expected an array");

  doc = nlohmann::json::parse(kNewLayout);
  doc["box1"]["compute_ceilings"].clear();
  doc["box1"]["measured"]["simd"] = "neon";
  EXPECT_EQ(error_of(doc),
            "dir/peaks.json: field 'box1.measured.simd': expected scalar, sse, avx2 or avx512");

  EXPECT_EQ(error_of(nlohmann::json::array()),
            "dir/peaks.json: expected an object of environments");
  EXPECT_EQ(error_of(nlohmann::json::parse(kNewLayout), "lab"),
            "dir/peaks.json: no env lab (it holds: box1)");
  // Two envs, none named after this host.
  auto two = nlohmann::json::parse(kNewLayout);
  two["other-" + hostname()] = two["box1"];
  const std::string e = error_of(two);
  EXPECT_NE(e.find("dir/peaks.json holds 2 environments"), std::string::npos) << e;
  EXPECT_NE(e.find("NNPERF_PEAKS_ENV"), std::string::npos) << e;
}

using test::ScopedEnv;

// Runs in `dir` for one scope (./peaks.json is looked up in the working directory).
class ScopedCwd {
 public:
  explicit ScopedCwd(const std::filesystem::path& dir) : old_(std::filesystem::current_path()) {
    std::filesystem::current_path(dir);
  }
  ~ScopedCwd() { std::filesystem::current_path(old_); }

 private:
  std::filesystem::path old_;
};

TEST(MachineModel, NnperfPeaksNamesTheFileToReadAndABrokenOneIsRefused) {
  test::TempDir dir("machine_model");
  const ScopedCwd cwd(dir.path());  // and no ./peaks.json there
  const std::string good = (dir / "good.json").string();
  std::ofstream(good) << old_layout(1, 21.0).dump();
  {
    const ScopedEnv env("NNPERF_PEAKS", good);
    const MachineModel m = detect_machine_model();
    EXPECT_EQ(m.source, "peaks.json " + good + " env box1");
    // Measured at avx2, converted to this machine's level by the FMA widths.
    EXPECT_DOUBLE_EQ(m.fma_gflops_per_core, 101.9 * fma_width(m, active_simd()) / 8);
  }
  const std::string broken = (dir / "broken.json").string();
  std::ofstream(broken) << R"({"box1": {"peak_gbps": 21.0, "peak_gflops": {"fp32": )";
  for (const std::string& path : {broken, (dir / "missing.json").string()}) {
    const ScopedEnv env("NNPERF_PEAKS", path);
    try {
      detect_machine_model();
      ADD_FAILURE() << path << " was accepted";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("$NNPERF_PEAKS: " + path, 0), 0u) << what;
    }
  }
  {  // A file without the fields is refused too, naming the field.
    const std::string empty_env = (dir / "empty_env.json").string();
    std::ofstream(empty_env) << R"({"box1": {}})";
    const ScopedEnv env("NNPERF_PEAKS", empty_env);
    EXPECT_THROW(
        {
          try {
            detect_machine_model();
          } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("field 'box1.peak_gbps' is missing"),
                      std::string::npos)
                << e.what();
            throw;
          }
        },
        Error);
  }
}

TEST(MachineModel, UsesAPeaksJsonInTheWorkingDirectoryWhenItFitsThisHost) {
  test::TempDir dir("machine_model");
  const ScopedCwd cwd(dir.path());
  unsetenv("NNPERF_PEAKS");  // the tests run without it; make sure
  EXPECT_EQ(detect_machine_model().source, "estimate from detected features");

  auto doc = old_layout(1, 21.0);
  std::ofstream("peaks.json") << doc.dump();
  EXPECT_EQ(detect_machine_model().source, "peaks.json ./peaks.json env box1");  // the only env

  doc["box2"] = doc["box1"];  // (the test host is called neither)
  std::ofstream("peaks.json") << doc.dump();
  const std::string passed = detect_machine_model().source;
  EXPECT_EQ(passed.rfind("estimate from detected features (./peaks.json passed over: 2 "
                         "environments, none named after this host",
                         0),
            0u)
      << passed;

  doc[hostname()] = doc["box1"];
  doc[hostname()]["measured"]["fma_gflops_per_s_1thread"] = 77.0;
  std::ofstream("peaks.json") << doc.dump();
  EXPECT_EQ(detect_machine_model().source, "peaks.json ./peaks.json env " + hostname());

  // Not JSON (another tool's file): passed over, and said so.
  std::ofstream("peaks.json") << "fma,triad\n1,2\n";
  EXPECT_NE(
      detect_machine_model().source.find("./peaks.json passed over: ./peaks.json: not valid JSON"),
      std::string::npos);
  // This host's env, broken: an error, not a silent estimate.
  doc[hostname()].erase("peak_gflops");
  std::ofstream("peaks.json") << doc.dump();
  EXPECT_THROW(detect_machine_model(), Error);
}

TEST(MachineModel, SetReplacesTheModelInUseAndKeepsEarlierReferencesValid) {
  const MachineModel& before = machine_model();
  const MachineModel saved = before;
  MachineModel m = estimate_machine_model(zen3_like(SimdLevel::kAvx2, 3000), SimdLevel::kAvx2);
  m.source = "test";
  set_machine_model(m);
  EXPECT_EQ(machine_model().source, "test");
  EXPECT_EQ(before.source, saved.source);  // still readable
  set_machine_model(saved);
  EXPECT_EQ(machine_model().source, saved.source);
  EXPECT_NE(describe(machine_model()).find(" GFLOP/s per core ("), std::string::npos);
}

}  // namespace
}  // namespace nnperf
