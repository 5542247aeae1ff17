// analysis/ncu: Nsight Compute CSV import on hand-written fixtures (tests/data/ncu/): both page
// layouts, the preamble, extra and early-ending columns, units that change from row to row, both
// number conventions, n/a, tensor / fp16 / fp64 work, launches with one name and two IDs,
// utilisation-only files, a hostile kernel name, and every refusal. Expected values are worked
// out by hand in the comments; tests/data/ncu/reference.py (Python's csv module, written apart)
// reads every valid fixture again and must agree to 1e-6.
#include "nnperf/analysis/ncu.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "nnperf/analysis/roofline.h"
#include "nnperf/core/error.h"
#include "test_util.h"

namespace nnperf {
namespace {

constexpr double kRel = 1e-6;
constexpr double kPeakGflops = 19500;
constexpr double kPeakGbps = 760;

std::string fixture(const std::string& name) {
  return std::string(NNPERF_TEST_DATA_DIR) + "/ncu/" + name;
}

NcuImport load(const std::string& name) { return read_ncu_csv(fixture(name)); }

const NcuLaunch& launch(const NcuImport& imp, const std::string& id) {
  for (const NcuLaunch& l : imp.launches) {
    if (l.id == id) return l;
  }
  throw Error("test: no launch " + id);
}

bool has_flag(const NcuLaunch& l, const std::string& flag) {
  for (const std::string& f : l.flags) {
    if (f == flag) return true;
  }
  return false;
}

// Both missing, or equal within kRel (exactly, for zero).
void expect_value(double actual, double expected, const std::string& what) {
  if (std::isnan(expected)) {
    EXPECT_TRUE(std::isnan(actual)) << what << ": expected missing, got " << actual;
    return;
  }
  EXPECT_NEAR(actual, expected, kRel * std::fabs(expected)) << what;
}

// The message of the nnperf::Error that `f` throws ("" and a failure when it throws none).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find('\n'), std::string::npos) << "multi-line message: " << m;
    return m;
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

std::string parse_error(const std::string& text, const std::string& name = "t.csv") {
  return error_of([&] { (void)parse_ncu_csv(text, name); });
}

std::string file_error(const std::string& name) {
  return error_of([&] { (void)load(name); });
}

// A details page from (id, kernel, metric, unit, value) rows.
std::string details(const std::vector<std::array<std::string, 5>>& rows) {
  std::string out = "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n";
  for (const auto& r : rows) {
    out += fmt::format("\"{}\",\"{}\",\"{}\",\"{}\",\"{}\"\n", r[0], r[1], r[2], r[3], r[4]);
  }
  return out;
}

// One complete launch: 1 Kbyte of DRAM, 1 usecond, ffma = fma_count.
std::vector<std::array<std::string, 5>> minimal(const std::string& id, const std::string& dram,
                                                const std::string& dram_unit = "Kbyte") {
  return {{id, "k", "dram__bytes.sum", dram_unit, dram},
          {id, "k", "gpu__time_duration.sum", "usecond", "1"},
          {id, "k", "sm__sass_thread_inst_executed_op_ffma_pred_on.sum", "inst", "10"},
          {id, "k", "sm__sass_thread_inst_executed_op_fmul_pred_on.sum", "inst", "0"},
          {id, "k", "sm__sass_thread_inst_executed_op_fadd_pred_on.sum", "inst", "0"}};
}

// ---- layouts ----

TEST(NcuDetails, PreambleExtraColumnsAndRowsEndingEarly) {
  const NcuImport imp = load("details_extra_columns.csv");
  EXPECT_EQ(imp.layout, "details");
  EXPECT_FALSE(imp.utilisation_only);
  EXPECT_EQ(imp.number_convention, "1,234,567.89");
  ASSERT_EQ(imp.launches.size(), 2u);
  const NcuLaunch& a = launch(imp, "0");
  EXPECT_EQ(a.name, "saxpy(int, float, const float *, float *)");
  EXPECT_EQ(a.block, "(256, 1, 1)");
  EXPECT_EQ(a.grid, "(4096, 1, 1)");
  EXPECT_EQ(a.line, 8);  // after six lines of preamble and the header
  // ffma 1,048,576 -> 2 x 1,048,576 FLOPs; 12.58 Mbyte; 15.49 usecond.
  expect_value(a.flops_fp32, 2097152, "fp32");
  expect_value(a.flops_fp64, 0, "fp64");
  expect_value(a.flops_fp16, 0, "fp16");
  expect_value(a.flops, 2097152, "flops");
  expect_value(a.tensor_inst, 0, "tensor");
  expect_value(a.dram_bytes, 12.58e6, "dram");
  expect_value(a.l2_bytes, 16.78e6, "l2");
  expect_value(a.l1_bytes, 12.58e6, "l1");
  expect_value(a.time_s, 15.49e-6, "time");
  expect_value(a.ai_dram, 2097152 / 12.58e6, "ai_dram");  // 0.1667
  expect_value(a.ai_l2, 2097152 / 16.78e6, "ai_l2");
  expect_value(a.gflops, 2097152 / 15.49e-6 / 1e9, "gflops");      // 135.4
  expect_value(a.dram_gbs, 12.58e6 / 15.49e-6 / 1e9, "dram_gbs");  // 812.1
  EXPECT_TRUE(a.flags.empty()) << a.flags.front();
  // 4,198.40 Kbyte = 4,198,400 bytes (1 Kbyte = 1000); 5,824 nsecond; fadd 1,048,320.
  const NcuLaunch& b = launch(imp, "1");
  EXPECT_EQ(b.name, "reduce_sum(const float *, float *, int)");
  expect_value(b.dram_bytes, 4198400, "dram Kbyte");
  expect_value(b.time_s, 5824e-9, "time nsecond");
  expect_value(b.flops, 1048320, "flops");
  expect_value(b.gflops, 180.0, "gflops");  // 1,048,320 / 5.824 us
}

TEST(NcuRaw, UnitsRowTensorFp16AndFp64) {
  const NcuImport imp = load("raw_units_row.csv");
  EXPECT_EQ(imp.layout, "raw");
  ASSERT_EQ(imp.launches.size(), 3u);
  // Launch 0: 1.07 Gbyte, 2.34 msecond, 2,147.48 / 3,221.23 Mbyte, ffma 2^30.
  const NcuLaunch& sgemm = launch(imp, "0");
  EXPECT_EQ(sgemm.grid, "(8, 16, 1)");
  expect_value(sgemm.dram_bytes, 1.07e9, "dram Gbyte");
  expect_value(sgemm.time_s, 2.34e-3, "time msecond");
  expect_value(sgemm.l1_bytes, 2147.48e6, "l1");
  expect_value(sgemm.l2_bytes, 3221.23e6, "l2");
  expect_value(sgemm.flops, 2147483648.0, "flops");
  expect_value(sgemm.sm_throughput_pct, 91.2, "sm pct");
  EXPECT_TRUE(std::isnan(sgemm.dram_throughput_pct));
  EXPECT_TRUE(sgemm.flags.empty());
  // Launch 1: tensor work is flagged, not counted; hfma 4,096, hmul 512, hadd 1,024 -> 9,728.
  const NcuLaunch& hmma = launch(imp, "1");
  expect_value(hmma.tensor_inst, 2097152, "tensor");
  expect_value(hmma.flops_fp16, 2 * 4096 + 512 + 1024, "fp16");
  expect_value(hmma.flops, 9728, "flops without tensor work");
  EXPECT_TRUE(has_flag(hmma, "tensor_pipe_not_counted"));
  EXPECT_TRUE(has_flag(hmma, "fp16_half2_may_be_undercounted"));
  // Launch 2: dfma 33,554,432, dmul 2,000, dadd 1,000.
  const NcuLaunch& dgemm = launch(imp, "2");
  EXPECT_EQ(dgemm.name, "void dgemm_kernel<double, 64>(int, int, const double *, double *)");
  expect_value(dgemm.flops_fp64, 2 * 33554432.0 + 2000 + 1000, "fp64");
  expect_value(dgemm.flops_fp32, 0, "fp32");
  expect_value(dgemm.flops, 67111864, "flops");
  expect_value(dgemm.time_s, 12.5e-3, "time");
  EXPECT_TRUE(dgemm.flags.empty());
}

TEST(NcuRaw, WithoutUnitsRowEveryUnitIsRefusedByName) {
  const std::string m = parse_error(
      "\"ID\",\"Kernel Name\",\"dram__bytes.sum\",\"gpu__time_duration.sum\"\n"
      "\"0\",\"k\",\"4\",\"1\"\n");
  EXPECT_NE(m.find("t.csv:2: metric "), std::string::npos) << m;
  EXPECT_NE(m.find("unit '' is not understood"), std::string::npos) << m;
}

// ---- units ----

TEST(NcuUnits, EveryRowCarriesItsOwnUnit) {
  // 14 launches with the same work written in different units: 1e6 bytes of DRAM as byte, Kbyte,
  // Mbyte, Gbyte; 1 ms as nsecond ... s; 1,410,000 cycles at 1.41 GHz written six ways.
  const NcuImport imp = load("mixed_units.csv");
  ASSERT_EQ(imp.launches.size(), 14u);
  for (const NcuLaunch& l : imp.launches) {
    expect_value(l.dram_bytes, 1e6, l.name + " dram");
    expect_value(l.l2_bytes, 2e6, l.name + " l2");
    expect_value(l.l1_bytes, 4e6, l.name + " l1");
    expect_value(l.time_s, 1e-3, l.name + " time");
    expect_value(l.flops, 1e6, l.name + " flops");
    expect_value(l.gflops, 1.0, l.name + " gflops");
    expect_value(l.dram_gbs, 1.0, l.name + " dram_gbs");
    expect_value(l.ai_dram, 1.0, l.name + " ai_dram");
    expect_value(l.ai_l1, 0.25, l.name + " ai_l1");
    EXPECT_EQ(has_flag(l, "time_from_cycles"), l.name.starts_with("k_freq")) << l.name;
  }
}

TEST(NcuUnits, UnknownUnitNamesFileLineAndMetric) {
  const std::string m = file_error("broken_unknown_unit.csv");
  EXPECT_NE(m.find("broken_unknown_unit.csv:3: metric dram__bytes.sum: unit 'KiB'"),
            std::string::npos)
      << m;
  // A unit that does not fit the metric's kind is unknown too: bytes in seconds.
  auto rows = minimal("0", "4", "usecond");
  const std::string wrong_kind = parse_error(details(rows));
  EXPECT_NE(wrong_kind.find("t.csv:2: metric dram__bytes.sum: unit 'usecond'"), std::string::npos)
      << wrong_kind;
  // Metrics that are not used may carry any unit and any value.
  rows = minimal("0", "4");
  rows.push_back({"0", "k", "launch__registers_per_thread", "register/thread", "x"});
  EXPECT_NO_THROW((void)parse_ncu_csv(details(rows), "t.csv"));
}

TEST(NcuUnits, TimeFromCyclesAndDramFromReadPlusWrite) {
  const std::string text =
      details({{"5", "k", "dram__bytes_read.sum", "Kbyte", "3"},
               {"5", "k", "dram__bytes_write.sum", "byte", "500"},
               {"5", "k", "sm__cycles_elapsed.avg", "cycle", "2,000"},
               {"5", "k", "sm__cycles_elapsed.avg.per_second", "Mhz", "1,000"},
               {"5", "k", "sm__sass_thread_inst_executed_op_ffma_pred_on.sum", "inst", "7"},
               {"5", "k", "sm__sass_thread_inst_executed_op_fmul_pred_on.sum", "inst", "0"},
               {"5", "k", "sm__sass_thread_inst_executed_op_fadd_pred_on.sum", "inst", "0"}});
  const NcuLaunch l = parse_ncu_csv(text, "t.csv").launches.at(0);
  expect_value(l.dram_bytes, 3500, "read + write");
  expect_value(l.time_s, 2000 / 1e9, "2,000 cycles at 1,000 MHz");
  EXPECT_TRUE(has_flag(l, "time_from_cycles"));
  EXPECT_TRUE(has_flag(l, "dram_bytes_from_read_write"));
  EXPECT_TRUE(has_flag(l, "fp64_flops_missing"));
  EXPECT_TRUE(has_flag(l, "fp16_flops_missing"));
  EXPECT_TRUE(has_flag(l, "tensor_pipe_not_measured"));
}

// ---- numbers ----

TEST(NcuNumbers, CommaDecimalConventionDecidedPerFile) {
  const NcuImport imp = load("comma_decimal.csv");
  EXPECT_EQ(imp.number_convention, "1.234.567,89");
  EXPECT_EQ(imp.number_convention_source, "line 4: '8,39'");
  const NcuLaunch& a = launch(imp, "0");
  expect_value(a.dram_bytes, 8.39e6 + 4.19e6, "8,39 + 4,19 Mbyte");
  expect_value(a.time_s, 15.49e-6, "15,49 usecond");
  expect_value(a.flops_fp32, 2097152, "smsp__ ffma 1.048.576");
  EXPECT_TRUE(std::isnan(a.l2_bytes));  // not collected: missing, not an error
  EXPECT_TRUE(has_flag(a, "fp64_flops_missing"));
  const NcuLaunch& b = launch(imp, "1");
  expect_value(b.dram_bytes, 1234.5e9, "1.234,5 Gbyte");
  expect_value(b.time_s, 1.234567, "1.234,567 msecond");
  expect_value(b.flops, 2 * 2147483648.0 + 7 + 12345678, "2.147.483.648 ffma");
}

TEST(NcuNumbers, AmbiguousFileAssumesPointDecimalAndSaysSo) {
  const NcuImport imp = parse_ncu_csv(details(minimal("0", "1,234")), "t.csv");
  EXPECT_EQ(imp.number_convention, "1,234,567.89");
  EXPECT_NE(imp.number_convention_source.find("assumed"), std::string::npos);
  ASSERT_FALSE(imp.warnings.empty());
  EXPECT_NE(imp.warnings.front().find("t.csv:2: '1,234'"), std::string::npos)
      << imp.warnings.front();
  expect_value(imp.launches[0].dram_bytes, 1.234e6, "1,234 Kbyte");
}

TEST(NcuNumbers, MixedConventionsAndBadGroupsAreRefused) {
  const std::string m = file_error("broken_mixed_conventions.csv");
  EXPECT_NE(m.find("broken_mixed_conventions.csv:3: '12,5' reads as 1.234.567,89 but '1,234.5' "
                   "on line 2"),
            std::string::npos)
      << m;
  // Group separators must group by three.
  for (const std::string bad : {"12,34,5", "1,23,456", ",5", "5.", "1e", "0x10", "inf", "nan"}) {
    const std::string e = parse_error(details(minimal("0", bad)));
    EXPECT_NE(e.find("t.csv:2: metric dram__bytes.sum: expected a number"), std::string::npos)
        << bad << ": " << e;
  }
  EXPECT_NE(parse_error(details(minimal("0", "-4"))).find("non-negative"), std::string::npos);
  EXPECT_NE(parse_error(details(minimal("0", "1e300", "Pbyte"))).find("out of range"),
            std::string::npos);
}

TEST(NcuNumbers, NonNumericValueNamesFileLineAndMetric) {
  const std::string m = file_error("broken_non_numeric.csv");
  EXPECT_NE(m.find("broken_non_numeric.csv:3: metric dram__bytes.sum: expected a number, got "
                   "'twelve'"),
            std::string::npos)
      << m;
  // Control bytes and long values are quoted, never copied raw into the message.
  const std::string hostile =
      parse_error(details(minimal("0", "\x1b[31m" + std::string(500, 'x'))));
  EXPECT_NE(hostile.find("\\x1b[31m"), std::string::npos) << hostile;
  EXPECT_LT(hostile.size(), 400u);
}

// ---- missing values ----

TEST(NcuMissing, NaKeepsTheLaunchAndNullsOnlyWhatDependsOnIt) {
  const NcuImport imp = load("na_values.csv");
  ASSERT_EQ(imp.launches.size(), 3u);
  // 10: DRAM n/a -> ai_dram, dram_gbs missing; flops 2 x 200 + 300 + 100 = 800 and time remain.
  const NcuLaunch& a = launch(imp, "10");
  EXPECT_TRUE(std::isnan(a.dram_bytes));
  EXPECT_TRUE(std::isnan(a.ai_dram));
  EXPECT_TRUE(std::isnan(a.dram_gbs));
  expect_value(a.flops, 800, "flops");
  expect_value(a.gflops, 800 / 2.5e-6 / 1e9, "gflops");
  expect_value(a.ai_l2, 800 / 64e3, "ai_l2");
  EXPECT_TRUE(has_flag(a, "n/a:dram__bytes.sum"));
  // 11: ffma n/a -> fp32 missing; fp64 2 x 20 + 30 + 10 = 80 is the flops; tensor n/a.
  const NcuLaunch& b = launch(imp, "11");
  EXPECT_TRUE(std::isnan(b.flops_fp32));
  expect_value(b.flops_fp64, 80, "fp64");
  expect_value(b.flops, 80, "flops = available precisions");
  EXPECT_TRUE(std::isnan(b.tensor_inst));
  EXPECT_TRUE(has_flag(b, "fp32_flops_missing"));
  EXPECT_TRUE(has_flag(b, "n/a:sm__sass_thread_inst_executed_op_ffma_pred_on.sum"));
  EXPECT_TRUE(has_flag(b, "tensor_pipe_not_measured"));
  // 12: time n/a -> gflops, dram_gbs missing; ai_dram 8,000 / 16,000.
  const NcuLaunch& c = launch(imp, "12");
  EXPECT_TRUE(std::isnan(c.time_s));
  EXPECT_TRUE(std::isnan(c.gflops));
  expect_value(c.ai_dram, 0.5, "ai_dram");
  const nlohmann::json doc = ncu_json(imp, {kPeakGflops, kPeakGbps});
  EXPECT_TRUE(doc["records"][0]["dram_bytes"].is_null());
  EXPECT_TRUE(doc["records"][0]["attainable_gflops"].is_null());
  EXPECT_TRUE(doc["records"][0]["bound"].is_null());
  EXPECT_DOUBLE_EQ(doc["records"][2]["attainable_gflops"].get<double>(), 0.5 * kPeakGbps);
  EXPECT_EQ(doc["records"][2]["bound"], "memory");
  EXPECT_TRUE(doc["records"][2]["pct_of_attainable"].is_null());
  ASSERT_FALSE(imp.warnings.empty());
  EXPECT_NE(imp.warnings.back().find("3 launch(es) have n/a values"), std::string::npos);
}

// ---- launches and names ----

TEST(NcuLaunches, SameNameTwoIdsStayTwoLaunches) {
  const NcuImport imp = load("same_name_two_ids.csv");
  ASSERT_EQ(imp.launches.size(), 3u);
  EXPECT_EQ(imp.launches[0].id, "3");
  EXPECT_EQ(imp.launches[2].id, "7");
  // 3: 2 x 5e6 FLOPs, 2 Mbyte, 10 us; 7: 2 x 2e7 + 1e6, 6 Mbyte, 30 us.
  expect_value(launch(imp, "3").flops, 1e7, "id 3");
  expect_value(launch(imp, "7").flops, 4.1e7, "id 7");
  expect_value(launch(imp, "3").ai_dram, 5.0, "ai id 3");
  expect_value(launch(imp, "7").ai_dram, 4.1e7 / 6e6, "ai id 7");
  const nlohmann::json doc = ncu_json(imp, {kPeakGflops, kPeakGbps});
  ASSERT_EQ(doc["records"].size(), 3u);
  ASSERT_EQ(doc["by_name"].size(), 2u);
  const nlohmann::json& conv = doc["by_name"][0];
  EXPECT_EQ(conv["name"], "conv2d_kernel");
  EXPECT_EQ(conv["launches"], 2);
  EXPECT_EQ(conv["ids"], nlohmann::json({"3", "7"}));
  // Sums: 5.1e7 FLOPs, 8e6 bytes, 40 us -> ai 6.375, 1,275 GFLOP/s, 200 GB/s;
  // attainable min(19,500, 6.375 x 760 = 4,845) -> memory; 1,275 / 4,845.
  expect_value(conv["flops"].get<double>(), 5.1e7, "by_name flops");
  expect_value(conv["time_s"].get<double>(), 40e-6, "by_name time");
  expect_value(conv["ai_dram"].get<double>(), 6.375, "by_name ai");
  expect_value(conv["gflops"].get<double>(), 1275, "by_name gflops");
  expect_value(conv["dram_gbs"].get<double>(), 200, "by_name dram_gbs");
  expect_value(conv["attainable_gflops"].get<double>(), 4845, "by_name attainable");
  expect_value(conv["pct_of_attainable"].get<double>(), 100 * 1275.0 / 4845, "by_name pct");
  EXPECT_EQ(conv["bound"], "memory");
  // relu: no FLOPs -> intensity 0, attainable 0, no percentage.
  const nlohmann::json& relu = doc["by_name"][1];
  EXPECT_EQ(relu["ai_dram"].get<double>(), 0.0);
  EXPECT_TRUE(relu["pct_of_attainable"].is_null());
}

TEST(NcuLaunches, OneIdWithTwoNamesOrTwoRawRowsIsRefused) {
  const std::string m = file_error("broken_two_names_one_id.csv");
  EXPECT_NE(m.find("broken_two_names_one_id.csv:3: launch ID '0' is kernel 'second_name' here but "
                   "'first_name' on line 2"),
            std::string::npos)
      << m;
  const std::string raw = parse_error(
      "\"ID\",\"Kernel Name\",\"dram__bytes.sum\",\"gpu__time_duration.sum\"\n"
      "\"\",\"\",\"byte\",\"ns\"\n\"0\",\"k\",\"4\",\"1\"\n\"0\",\"k\",\"4\",\"1\"\n");
  EXPECT_NE(raw.find("t.csv:4: launch ID '0' appears again (first on line 3)"), std::string::npos)
      << raw;
}

TEST(NcuLaunches, HostileKernelNameIsKeptVerbatimAsData) {
  const NcuImport imp = load("xss_name.csv");
  ASSERT_EQ(imp.launches.size(), 1u);
  EXPECT_EQ(imp.launches[0].name, "<img src=x onerror=alert(1)>");
  expect_value(imp.launches[0].gflops, 500 / 500e-9 / 1e9, "gflops");
  const nlohmann::json doc = ncu_json(imp, {});
  EXPECT_EQ(doc["records"][0]["name"], "<img src=x onerror=alert(1)>");
  EXPECT_EQ(doc["by_name"][0]["name"], "<img src=x onerror=alert(1)>");
  // Kernel names with control bytes quoted in messages stay on one line.
  auto rows = minimal("0", "1");
  rows.erase(rows.begin());  // no DRAM bytes
  for (auto& r : rows) r[1] = "evil\x1b]0;title\x07";
  const std::string m = parse_error(details(rows));
  EXPECT_NE(m.find("kernel 'evil\\x1b]0;title\\x07'"), std::string::npos) << m;
}

TEST(NcuLaunches, InvalidUtf8BecomesReplacementAndDuplicatesWarn) {
  auto rows = minimal("0", "1");
  for (auto& r : rows) r[1] = "k\xff\xe2\x82";  // a name cut inside a character
  rows.push_back({"0", "k\xff\xe2\x82", "dram__bytes.sum", "Kbyte", "2"});  // a second value
  const NcuImport imp = parse_ncu_csv(details(rows), "t.csv");
  EXPECT_EQ(imp.launches[0].name, "k\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
  expect_value(imp.launches[0].dram_bytes, 1000, "the first value is used");
  ASSERT_FALSE(imp.warnings.empty());
  EXPECT_NE(imp.warnings[0].find("t.csv:7: metric dram__bytes.sum appears twice"),
            std::string::npos)
      << imp.warnings[0];
  EXPECT_NO_THROW((void)ncu_json(imp, {}).dump());
}

// ---- utilisation-only ----

TEST(NcuUtilisation, OnlyThroughputPercentagesGiveTheSummaryNotARoofline) {
  const NcuImport imp = load("utilisation_only.csv");
  EXPECT_TRUE(imp.utilisation_only);
  ASSERT_EQ(imp.launches.size(), 3u);
  EXPECT_TRUE(std::isnan(imp.launches[0].flops));
  EXPECT_TRUE(std::isnan(imp.launches[0].dram_bytes));
  expect_value(imp.launches[2].time_s, 0.6e-3, "time");
  const nlohmann::json s = ncu_utilisation_summary(imp);
  EXPECT_NE(s["message"].get<std::string>().find("no counter roofline can be drawn"),
            std::string::npos);
  // Weights 100, 300, 600 us: sm (90, 10, 70) -> 54; dram (20, 80, 30) -> 44.
  expect_value(s["sm_throughput_pct"]["mean"].get<double>(), 54.0, "sm mean");
  expect_value(s["dram_throughput_pct"]["mean"].get<double>(), 44.0, "dram mean");
  EXPECT_EQ(s["sm_throughput_pct"]["weighting"], "time");
  EXPECT_EQ(s["sm_throughput_pct"]["min"].get<double>(), 10.0);
  EXPECT_EQ(s["dram_throughput_pct"]["max"].get<double>(), 80.0);
  EXPECT_EQ(s["records"].size(), 3u);
  const nlohmann::json doc = ncu_json(imp, {kPeakGflops, kPeakGbps});
  EXPECT_TRUE(doc["context"]["utilisation_only"].get<bool>());
  EXPECT_TRUE(doc["records"].empty());
  EXPECT_EQ(doc["utilisation"]["sm_throughput_pct"], s["sm_throughput_pct"]);
}

TEST(NcuUtilisation, SectionNamesAndMissingTimeFallBackToAPlainMean) {
  // --section SpeedOfLight names; launch 1 has no duration, so the mean is unweighted.
  const NcuImport imp = parse_ncu_csv(details({{"0", "a", "Compute (SM) Throughput", "%", "40"},
                                               {"0", "a", "DRAM Throughput", "%", "10"},
                                               {"0", "a", "Duration", "usecond", "9"},
                                               {"1", "b", "Compute (SM) Throughput", "%", "60"}}),
                                      "t.csv");
  EXPECT_TRUE(imp.utilisation_only);
  const nlohmann::json s = ncu_utilisation_summary(imp);
  expect_value(s["sm_throughput_pct"]["mean"].get<double>(), 50.0, "unweighted");
  EXPECT_EQ(s["sm_throughput_pct"]["weighting"], "unweighted: no time for 1 of 2 launches");
  EXPECT_EQ(s["dram_throughput_pct"]["mean"].get<double>(), 10.0);
  // Any "...pct" metric counts as utilisation; with a byte counter present it is not enough.
  EXPECT_TRUE(
      parse_ncu_csv(details({{"0", "a", "l1tex__t_sector_hit_rate.pct", "%", "5"}}), "t.csv")
          .utilisation_only);
  auto rows = minimal("0", "1");
  rows.push_back({"0", "k", "sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", "12"});
  const NcuImport both = parse_ncu_csv(details(rows), "t.csv");
  EXPECT_FALSE(both.utilisation_only);
  expect_value(both.launches[0].sm_throughput_pct, 12, "sm pct beside counters");
}

// ---- JSON and the roofline ----

TEST(NcuJson, RecordsHaveExactlyTheFieldsAndTheRooflineBound) {
  const NcuImport imp = load("details_extra_columns.csv");
  const nlohmann::json doc = ncu_json(imp, {kPeakGflops, kPeakGbps});
  const std::set<std::string> expected = {"id",
                                          "name",
                                          "block",
                                          "grid",
                                          "flops_fp32",
                                          "flops_fp64",
                                          "flops_fp16",
                                          "flops",
                                          "tensor_inst",
                                          "dram_bytes",
                                          "l2_bytes",
                                          "l1_bytes",
                                          "time_s",
                                          "ai_dram",
                                          "ai_l2",
                                          "ai_l1",
                                          "gflops",
                                          "dram_gbs",
                                          "attainable_gflops",
                                          "pct_of_attainable",
                                          "bound",
                                          "flags"};
  for (const nlohmann::json& r : doc["records"]) {
    std::set<std::string> keys;
    for (const auto& [k, v] : r.items()) keys.insert(k);
    EXPECT_EQ(keys, expected);
  }
  const nlohmann::json& ctx = doc["context"];
  EXPECT_EQ(ctx["layout"], "details");
  EXPECT_EQ(ctx["number_convention"], "1,234,567.89");
  EXPECT_EQ(ctx["peak_gflops"].get<double>(), kPeakGflops);
  EXPECT_EQ(ctx["launches"], 2);
  EXPECT_EQ(ctx["kernels"], 2);
  EXPECT_TRUE(ctx.contains("units"));
  EXPECT_FALSE(ctx["convention"].empty());
  // saxpy: ai 0.1667 x 760 GB/s = 126.7 GFLOP/s < 19,500: memory bound at 135.4 / 126.7.
  const double ai = 2097152 / 12.58e6;
  const nlohmann::json& r = doc["records"][0];
  EXPECT_EQ(r["bound"], "memory");
  expect_value(r["attainable_gflops"].get<double>(), ai * kPeakGbps, "attainable");
  expect_value(r["pct_of_attainable"].get<double>(),
               100 * (2097152 / 15.49e-6 / 1e9) / (ai * kPeakGbps), "pct");
  // A compute roof below the memory roof: the raw sgemm (ai 2.007) against 500 GFLOP/s.
  const nlohmann::json raw = ncu_json(load("raw_units_row.csv"), {500, kPeakGbps});
  EXPECT_EQ(raw["records"][0]["bound"], "compute");
  EXPECT_EQ(raw["records"][0]["attainable_gflops"].get<double>(), 500.0);
  expect_value(raw["records"][0]["pct_of_attainable"].get<double>(),
               100 * (2147483648.0 / 2.34e-3 / 1e9) / 500, "pct compute");
  // Unknown peaks: nothing roofline-shaped.
  const nlohmann::json none = ncu_json(imp, {});
  EXPECT_TRUE(none["records"][0]["attainable_gflops"].is_null());
  EXPECT_TRUE(none["records"][0]["bound"].is_null());
  EXPECT_TRUE(none["context"]["peak_gbps"].is_null());
  EXPECT_THROW((void)ncu_json(imp, {-1, kPeakGbps}), UsageError);
  EXPECT_THROW((void)ncu_json(imp, {kPeakGflops, INFINITY}), UsageError);
}

TEST(NcuJson, ZeroBytesAndZeroTimeAreFlaggedNotInfinite) {
  auto rows = minimal("0", "0");
  rows[1][4] = "0";  // zero time
  const NcuImport imp = parse_ncu_csv(details(rows), "t.csv");
  const NcuLaunch& l = imp.launches[0];
  EXPECT_TRUE(has_flag(l, "dram_bytes_zero"));
  EXPECT_TRUE(has_flag(l, "time_zero"));
  EXPECT_TRUE(std::isnan(l.ai_dram));
  EXPECT_TRUE(std::isnan(l.gflops));
  const nlohmann::json doc = ncu_json(imp, {kPeakGflops, kPeakGbps});
  EXPECT_EQ(doc["records"][0]["bound"], "compute");  // 20 FLOPs, no DRAM traffic
  EXPECT_EQ(doc["records"][0]["attainable_gflops"].get<double>(), kPeakGflops);
  EXPECT_NO_THROW((void)doc.dump());
}

// ffma collected without fmul and fadd: fp32 FLOPs (2 fma + mul + add) cannot be computed. The
// import says once which counters are missing, and the roofline's note counts the launches left
// out by what they lack.
TEST(NcuMissing, AFlopCounterSetCollectedInPartIsNamedOnce) {
  auto rows = minimal("0", "1");
  rows.resize(3);  // DRAM, time, ffma
  auto second = minimal("1", "2");
  second.resize(3);
  rows.insert(rows.end(), second.begin(), second.end());
  const NcuImport imp = parse_ncu_csv(details(rows), "t.csv");
  ASSERT_EQ(imp.launches.size(), 2u);
  EXPECT_TRUE(std::isnan(imp.launches[0].flops));
  EXPECT_TRUE(has_flag(imp.launches[0], "fp32_flops_missing"));
  int named = 0;
  for (const std::string& w : imp.warnings) {
    if (w.find("fp32 FLOPs are 2 fma + mul + add") == std::string::npos) continue;
    ++named;
    EXPECT_NE(w.find("has sm__sass_thread_inst_executed_op_ffma_pred_on.sum but not "
                     "sm__sass_thread_inst_executed_op_fmul_pred_on.sum, "
                     "sm__sass_thread_inst_executed_op_fadd_pred_on.sum"),
              std::string::npos)
        << w;
  }
  EXPECT_EQ(named, 1);
  // A complete set says nothing of the kind.
  for (const std::string& w : parse_ncu_csv(details(minimal("0", "1")), "t.csv").warnings)
    EXPECT_EQ(w.find("FLOPs are"), std::string::npos) << w;
  std::vector<std::string> notes;
  EXPECT_TRUE(ncu_roofline_points(imp, notes).empty());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("2 of 2 launches are not points (2 without FLOPs:"), std::string::npos)
      << notes[0];
}

// ---- the independent reference ----

TEST(NcuReference, PythonReadingAgreesOnEveryValidFixture) {
  if (test::run_command("python3 -c 'import csv, json'").exit_code != 0) {
    GTEST_SKIP() << "python3 not available";
  }
  const std::string script = fixture("reference.py");
  for (const std::string name :
       {"details_extra_columns.csv", "raw_units_row.csv", "mixed_units.csv", "comma_decimal.csv",
        "na_values.csv", "same_name_two_ids.csv", "xss_name.csv"}) {
    const test::CommandResult r = test::run_command(
        fmt::format("python3 '{}' '{}' {} {}", script, fixture(name), kPeakGflops, kPeakGbps));
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    const nlohmann::json ref = nlohmann::json::parse(r.out);
    const NcuImport imp = load(name);
    EXPECT_EQ(imp.number_convention, ref["convention"]) << name;
    const nlohmann::json doc = ncu_json(imp, {kPeakGflops, kPeakGbps});
    ASSERT_EQ(doc["records"].size(), ref["records"].size()) << name;
    for (const nlohmann::json& rec : doc["records"]) {
      const std::string id = rec["id"];
      ASSERT_TRUE(ref["records"].contains(id)) << name << " id " << id;
      for (const auto& [field, want] : ref["records"][id].items()) {
        const std::string what = fmt::format("{} id {} {}", name, id, field);
        ASSERT_TRUE(rec.contains(field)) << what;
        if (want.is_null()) {
          EXPECT_TRUE(rec[field].is_null()) << what << " = " << rec[field];
        } else {
          ASSERT_TRUE(rec[field].is_number()) << what << " is " << rec[field];
          expect_value(rec[field].get<double>(), want.get<double>(), what);
        }
      }
    }
  }
}

// ---- broken files ----

TEST(NcuBroken, EachRefusalNamesFileLineAndMetric) {
  struct Case {
    const char* file;
    const char* needle;
  };
  for (const Case& c : {
           Case{"broken_truncated_quote.csv",
                "broken_truncated_quote.csv:4: the file ends inside a quoted field"},
           Case{"broken_raw_fields.csv",
                "broken_raw_fields.csv:4: a raw row has 5 fields but the header has 4"},
           Case{"broken_no_header.csv",
                "broken_no_header.csv: no ncu CSV header (a line starting with \"ID\",); ncu said "
                "'==WARNING== No kernels were profiled.'"},
           Case{"broken_no_dram.csv",
                "broken_no_dram.csv:4: launch ID '1' (kernel 'lacks_dram'): no DRAM-bytes metric: "
                "dram__bytes.sum"},
           Case{"broken_no_time.csv",
                "broken_no_time.csv:2: launch ID '0' (kernel 'lacks_time'): no time metric: "
                "gpu__time_duration.sum, or sm__cycles_elapsed.avg and "
                "sm__cycles_elapsed.avg.per_second"},
       }) {
    const std::string m = file_error(c.file);
    EXPECT_EQ(m.find(fixture(c.file)), 0u) << m;
    EXPECT_NE(m.find(c.needle), std::string::npos) << m;
  }
}

TEST(NcuBroken, StructuralProblemsInline) {
  EXPECT_NE(parse_error("").find("t.csv: the file is empty"), std::string::npos);
  EXPECT_NE(parse_error("==PROF== x\n").find("t.csv: no ncu CSV header"), std::string::npos);
  const std::string hdr =
      "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n";
  EXPECT_NE(parse_error(hdr).find("t.csv:1: a header but no kernel launch"), std::string::npos);
  EXPECT_NE(parse_error(hdr + "\"0\",\"k\",\"dram__bytes.sum\"\n")
                .find("t.csv:2: a details row has 3 fields; expected 5 to 5"),
            std::string::npos);
  EXPECT_NE(parse_error(hdr + hdr).find("t.csv:2: a second header row"), std::string::npos);
  EXPECT_NE(parse_error(hdr + "\"\",\"k\",\"dram__bytes.sum\",\"byte\",\"1\"\n")
                .find("t.csv:2: a row without an ID"),
            std::string::npos);
  EXPECT_NE(parse_error(hdr + "\"0\"x,\"k\",\"a\",\"b\",\"c\"\n")
                .find("t.csv:2: unexpected character 'x' after a closing quote"),
            std::string::npos);
  EXPECT_NE(
      parse_error("\"ID\",\"Metric Name\"\n\"0\",\"x\"\n")
          .find("t.csv:1: the header has no \"Kernel Name\" column (columns: ID, Metric Name)"),
      std::string::npos);
  // The metric-only header from the no-header case: dram present, no time, one line each.
  EXPECT_NE(parse_error(details({{"0", "k", "dram__bytes_read.sum", "byte", "1"},
                                 {"0", "k", "gpu__time_duration.sum", "ns", "1"}}))
                .find("(dram__bytes_write.sum is absent)"),
            std::string::npos);
}

TEST(NcuBroken, CrlfBomAndNcuLinesAfterTheHeaderAreAccepted) {
  std::string text = "\xEF\xBB\xBF" + details(minimal("0", "2"));
  std::string crlf;
  for (char c : text) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  crlf += "==PROF== Report: done\r\n\r\n";
  const NcuImport imp = parse_ncu_csv(crlf, "t.csv");
  ASSERT_EQ(imp.launches.size(), 1u);
  expect_value(imp.launches[0].dram_bytes, 2000, "dram");
  ASSERT_FALSE(imp.warnings.empty());
  EXPECT_NE(imp.warnings[0].find("t.csv:7: 1 line(s) of ncu's own output"), std::string::npos)
      << imp.warnings[0];
}

TEST(NcuBroken, FilesAboveTheCapAreRefusedBeforeReading) {
  test::TempDir dir("ncu");
  const std::filesystem::path big = dir / "huge.csv";
  { std::ofstream(big) << ""; }
  std::filesystem::resize_file(big, kNcuMaxFileBytes + 1);  // sparse: no disk used
  const std::string m = error_of([&] { (void)read_ncu_csv(big); });
  EXPECT_EQ(m.find(big.string() + ": 2147483649 bytes; ncu CSV files are read up to 2 GiB"), 0u)
      << m;
  const std::string missing = error_of([&] { (void)read_ncu_csv(dir / "absent.csv"); });
  EXPECT_NE(missing.find("absent.csv: cannot open for reading"), std::string::npos) << missing;
}

// ---- shipped files ----

TEST(NcuShipped, MetricListIsOneLineOfEveryMetricUsed) {
  const std::string text =
      test::read_text(std::string(NNPERF_SOURCE_DIR) + "/share/ncu-roofline-metrics.txt");
  ASSERT_FALSE(text.empty());
  const std::string line = text.back() == '\n' ? text.substr(0, text.size() - 1) : text;
  EXPECT_EQ(line.find_first_of(" \n\t"), std::string::npos) << "one line, no spaces";
  std::set<std::string> listed;
  std::size_t pos = 0;
  while (pos <= line.size()) {
    const std::size_t comma = std::min(line.find(',', pos), line.size());
    listed.insert(line.substr(pos, comma - pos));
    pos = comma + 1;
  }
  std::vector<std::string> needed = {"dram__bytes.sum", "lts__t_bytes.sum", "l1tex__t_bytes.sum",
                                     "gpu__time_duration.sum", "sm__inst_executed_pipe_tensor.sum"};
  for (const char* p : {"f", "d", "h"}) {
    for (const char* op : {"fma", "mul", "add"}) {
      needed.push_back(fmt::format("sm__sass_thread_inst_executed_op_{}{}_pred_on.sum", p, op));
    }
  }
  for (const std::string& m : needed) EXPECT_TRUE(listed.count(m)) << m;
  // nvprof's names (seed 003's mistake) are not ncu metrics.
  for (const std::string& m : listed) {
    EXPECT_NE(m.find("__"), std::string::npos) << "not an ncu metric name: " << m;
  }
  // A file of exactly the listed metrics imports (details layout, one launch).
  std::vector<std::array<std::string, 5>> rows;
  for (const std::string& m : listed) {
    const std::string unit = m.find("bytes") != std::string::npos  ? "byte"
                             : m.find("time") != std::string::npos ? "ns"
                             : m.find("pct") != std::string::npos  ? "%"
                             : m.ends_with("per_second")           ? "cycle/nsecond"
                                                                   : "inst";
    rows.push_back({"0", "k", m, unit, "1"});
  }
  const NcuImport imp = parse_ncu_csv(details(rows), "listed.csv");
  EXPECT_FALSE(imp.utilisation_only);
  const std::vector<std::string> flags = {"fp16_half2_may_be_undercounted",
                                          "tensor_pipe_not_counted"};
  EXPECT_EQ(imp.launches[0].flags, flags);
  const std::string doc = test::read_text(std::string(NNPERF_SOURCE_DIR) + "/docs/ncu.md");
  EXPECT_NE(doc.find("ncu --metrics \"$(cat share/ncu-roofline-metrics.txt)\" --csv"),
            std::string::npos);
  EXPECT_NE(doc.find("--page raw --csv"), std::string::npos);
}

}  // namespace
}  // namespace nnperf
