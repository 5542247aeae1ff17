// nnperf peaks: the peak kernels compute what they claim (FLOPs, sums, copies), plateau detection
// on a made-up sweep, peaks.json merging (other envs kept, a corrupt file refused and left as it
// is), the reader on seed-003 and multi-env files, and one quick measurement with every section.
// No timing is asserted beyond "positive and finite".
#include "nnperf/analysis/peaks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <tuple>
#include <vector>

#include "nnperf/core/cpu.h"
#include "nnperf/core/error.h"
#include "nnperf/io/records.h"
#include "nnperf/io/run_info.h"
#include "nnperf/kernels/peak/peak.h"
#include "test_util.h"

namespace nnperf {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<SimdLevel> runnable_levels() {
  std::vector<SimdLevel> levels;
  for (SimdLevel l : {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    if (l <= active_simd()) levels.push_back(l);
  }
  return levels;
}

TEST(PeakKernels, EveryFmaLoopCountsFlopsAndComputesTheRecurrence) {
  // Each chain c computes x <- 0.999999 x + 1e-7 from x = c + 1, `iters` times; the recurrence in
  // double is the reference for the sum the loop reports.
  const int64_t iters = 1000;
  int ran = 0;
  for (const FmaKernel& k : fma_kernels()) {
    if (k.needs > active_simd()) continue;
    ++ran;
    float sink = 0;
    const double flops = k.run(iters, &sink);
    EXPECT_EQ(flops, 2.0 * k.lanes * k.chains * iters) << k.name << " x" << k.chains;
    double expect = 0;
    for (int c = 0; c < k.chains; ++c) {
      double x = c + 1;
      for (int64_t i = 0; i < iters; ++i) x = x * 0.999999 + 1e-7;
      expect += k.lanes * x;
    }
    EXPECT_NEAR(sink, expect, 1e-4 * expect) << k.name << " x" << k.chains;
  }
  EXPECT_GE(ran, 4);  // scalar and sse at least
}

TEST(PeakKernels, BandwidthKernelsMatchTheReference) {
  for (SimdLevel level : runnable_levels()) {
    const BandwidthKernels& k = bandwidth_kernels(level);
    const int64_t n = 3 * k.block;
    // 64-byte aligned: the kernels use aligned loads.
    Tensor a(Shape{n}), b(Shape{n}), c(Shape{n});
    for (int64_t i = 0; i < n; ++i) {
      b[i] = 0.5f * static_cast<float>(i) + 1.0f;
      c[i] = 1.0f - 0.25f * static_cast<float>(i);
    }
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += b[i];
    EXPECT_NEAR(k.read(b.data(), n, 2), 2 * sum, 1e-5 * 2 * sum) << k.simd;
    k.copy(a.data(), b.data(), n, 2);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(a[i], b[i]) << k.simd << " copy at " << i;
    k.triad(a.data(), b.data(), c.data(), 3.0f, n, 2);
    for (int64_t i = 0; i < n; ++i) ASSERT_FLOAT_EQ(a[i], b[i] + 3.0f * c[i]) << k.simd << " " << i;
    // The STREAM loop over doubles, any n (no block rule), on two threads.
    std::vector<double> da(1001), db(1001), dc(1001);
    for (std::size_t i = 0; i < db.size(); ++i) {
      db[i] = 0.5 * static_cast<double>(i);
      dc[i] = 2.0 - static_cast<double>(i);
    }
    stream_triad_f64(da.data(), db.data(), dc.data(), 3.0, 1001, 2, 2, level);
    for (std::size_t i = 0; i < da.size(); ++i) ASSERT_EQ(da[i], db[i] + 3.0 * dc[i]) << i;
  }
}

// A made-up sweep: 4 points per octave from 4 KiB to 128 MiB, flat inside each level and
// something else at the edges, so a wrong window shows up in the medians.
std::vector<SweepPoint> synthetic_sweep(const CacheSizes& c, int threads, double scale) {
  std::vector<SweepPoint> sweep;
  for (int i = 0; i <= 60; ++i) {
    const auto ws = static_cast<int64_t>(std::llround(4096 * std::exp2(i / 4.0)));
    const double t = threads;
    double g = 5;  // transition between levels
    if (ws <= c.l1d * t / 2) g = 200;
    if (ws >= 2 * c.l1d * t && ws <= c.l2 * t / 2) g = 100;
    if (ws >= 2 * c.l2 * t && ws <= c.l3 / 2) g = 70;
    if (ws >= 4 * c.l3 * 0.98) g = 20;
    // Rounded down a little, as whole blocks per thread make them.
    const int64_t bytes = ws - 96;
    sweep.push_back({"triad", threads, bytes, g * scale, g * scale * 0.9, g * scale * 1.1});
  }
  return sweep;
}

TEST(PeakPlateaus, OneMedianPerLevelFromTheSizesWellInsideIt) {
  const CacheSizes c{32 << 10, 512 << 10, 32 << 20};
  std::vector<SweepPoint> sweep = synthetic_sweep(c, 1, 1.0);
  for (const SweepPoint& p : synthetic_sweep(c, 2, 2.0)) sweep.push_back(p);
  const std::vector<BandwidthPlateau> pl = detect_plateaus(sweep, c);
  ASSERT_EQ(pl.size(), 8u);
  const char* levels[] = {"L1", "L2", "L3", "DRAM"};
  const double gbps[] = {200, 100, 70, 20};
  for (int i = 0; i < 8; ++i) {
    const BandwidthPlateau& p = pl[static_cast<std::size_t>(i)];
    const int threads = i < 4 ? 1 : 2;
    EXPECT_EQ(p.level, levels[i % 4]);
    EXPECT_EQ(p.kernel, "triad");
    EXPECT_EQ(p.threads, threads);
    EXPECT_DOUBLE_EQ(p.gbps, gbps[i % 4] * threads) << p.level << " " << threads;
    EXPECT_DOUBLE_EQ(p.min, 0.9 * gbps[i % 4] * threads);
    EXPECT_DOUBLE_EQ(p.max, 1.1 * gbps[i % 4] * threads);
    EXPECT_GE(p.sizes, 1);
    EXPECT_LE(p.lo, p.hi);
  }
  // Windows: L1 up to half of L1d (per thread), DRAM from 4 x L3 (shared, not per thread); the
  // edges have 2% slack for sizes rounded down to whole blocks.
  EXPECT_EQ(pl[0].lo, 4096 - 96);
  EXPECT_LE(pl[0].hi, 16 << 10);
  EXPECT_GT(pl[4].hi, 16 << 10);
  EXPECT_LE(pl[4].hi, 32 << 10);
  EXPECT_GE(pl[1].lo, 0.98 * (64 << 10));
  EXPECT_LE(pl[1].hi, 256 << 10);
  EXPECT_GE(pl[5].lo, 0.98 * (128 << 10));
  EXPECT_LE(pl[5].hi, 512 << 10);
  EXPECT_GE(pl[3].lo, (128 << 20) - 4096);
  EXPECT_GE(pl[7].lo, (128 << 20) - 4096);
}

TEST(PeakPlateaus, LevelsWithoutSizesOrWithoutACacheAreLeftOut) {
  // No L3: DRAM starts at 4 x the largest private level on as many threads.
  const CacheSizes c{32 << 10, 512 << 10, 0};
  std::vector<SweepPoint> sweep;
  for (int64_t ws : {int64_t{8} << 10, int64_t{128} << 10, int64_t{4} << 20}) {
    sweep.push_back({"copy", 2, ws, 1, 1, 1});
  }
  const std::vector<BandwidthPlateau> pl = detect_plateaus(sweep, c);
  ASSERT_EQ(pl.size(), 3u);
  EXPECT_EQ(pl[0].level, "L1");
  EXPECT_EQ(pl[1].level, "L2");
  EXPECT_EQ(pl[2].level, "DRAM");  // 4 MiB = 4 x (2 x 512 KiB)
  EXPECT_EQ(pl[2].kernel, "copy");
}

json seed003_env(double gbps, double gflops) {
  return {{"description", "made up"}, {"peak_gbps", gbps}, {"peak_gflops", {{"fp32", gflops}}}};
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

TEST(PeaksJson, MergeKeepsTheOtherEnvironments) {
  test::TempDir dir;
  const fs::path f = dir / "peaks.json";
  merge_peaks_json(f, "mine", seed003_env(10, 100));  // a new file
  json doc = json::parse(test::read_text(f));
  json other = seed003_env(20, 200);
  other["extra"] = {1, 2, 3};  // fields we do not know survive too
  doc["other"] = other;
  write_text(f, doc.dump());
  merge_peaks_json(f, "mine", seed003_env(11, 110));
  doc = json::parse(test::read_text(f));
  ASSERT_EQ(doc.size(), 2u);
  EXPECT_EQ(doc["other"], other);
  EXPECT_EQ(doc["mine"]["peak_gbps"], 11);
  merge_peaks_json(f, "third", seed003_env(12, 120));
  doc = json::parse(test::read_text(f));
  EXPECT_EQ(doc.size(), 3u);
  EXPECT_EQ(doc["other"], other);
  EXPECT_EQ(doc["mine"]["peak_gbps"], 11);
}

TEST(PeaksJson, ACorruptFileIsRefusedByNameAndLeftAsItIs) {
  test::TempDir dir;
  const fs::path f = dir / "peaks.json";
  for (const std::string bad : {"{\"a\": {\"peak_gbps\": 1,", "[1, 2]", "", "42"}) {
    write_text(f, bad);
    try {
      check_peaks_json_mergeable(f);
      FAIL() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(f.string()), std::string::npos) << e.what();
    }
    EXPECT_THROW(merge_peaks_json(f, "mine", seed003_env(1, 1)), Error) << bad;
    EXPECT_EQ(test::read_text(f), bad);
  }
}

// The bandwidth figure is drawn from an env entry of peaks.json: one curve per kernel x threads,
// the cache sizes marked; a file-safe name per env; malformed points refused by file and field.
TEST(PeaksJson, BandwidthFigureFromTheEnvEntry) {
  test::TempDir dir;
  EXPECT_EQ(peaks_bandwidth_stem("end.json", "h-1.x"),
            std::filesystem::path("end_bandwidth_h-1.x"));
  // Replaced characters: the name with '_' and a hash of the env, so that no two envs share a file.
  const std::string replaced = peaks_bandwidth_stem(dir / "peaks.json", "box/1 a").string();
  EXPECT_EQ(replaced.rfind((dir / "peaks_bandwidth_box_1_a-").string(), 0), 0u) << replaced;
  EXPECT_EQ(replaced.size(), (dir / "peaks_bandwidth_box_1_a-").string().size() + 8) << replaced;
  EXPECT_NE(peaks_bandwidth_stem("p.json", "a b"), peaks_bandwidth_stem("p.json", "a_b"));
  EXPECT_NE(peaks_bandwidth_stem("p.json", "a b"), peaks_bandwidth_stem("p.json", "a/b"));
  EXPECT_EQ(peaks_bandwidth_stem("p.json", "a_b"), std::filesystem::path("p_bandwidth_a_b"));
  const nlohmann::json entry = {
      {"method", {{"bandwidth_simd", "avx2"}}},
      {"machine", {{"caches", {{"L1d", 32768}, {"L2", 524288}, {"L3", 0}}}}},
      {"bandwidth_sweep",
       {{{"kernel", "read"}, {"threads", 1}, {"bytes", 4096}, {"gbps", 100.5}},
        {{"kernel", "read"}, {"threads", 1}, {"bytes", 8192}, {"gbps", 90.25}},
        {{"kernel", "triad"}, {"threads", 2}, {"bytes", 6144}, {"gbps", 150}}}}};
  EXPECT_TRUE(has_bandwidth_sweep(entry));
  EXPECT_FALSE(has_bandwidth_sweep({{"peak_gbps", 1}}));
  (void)peaks_bandwidth_plot(entry, JsonPath{"peaks.json", "box"}, dir / "fig");
  const std::string dat = test::read_text(dir / "fig.dat");
  EXPECT_NE(dat.find("(box, avx2, STREAM byte counting)"), std::string::npos) << dat;
  EXPECT_NE(dat.find("# series 0: read, 1 thread\n4 100.5\n8 90.25\n"), std::string::npos) << dat;
  EXPECT_NE(dat.find("# series 1: triad, 2 threads\n6 150\n"), std::string::npos) << dat;
  const std::string gp = test::read_text(dir / "fig.gp");
  EXPECT_NE(gp.find("L1d 32.0 KiB per core"), std::string::npos) << gp;
  EXPECT_NE(gp.find("L2 512.0 KiB per core"), std::string::npos) << gp;
  EXPECT_EQ(gp.find("L3 "), std::string::npos) << gp;
  nlohmann::json bad = entry;
  bad["bandwidth_sweep"][1]["gbps"] = "fast";
  try {
    (void)peaks_bandwidth_plot(bad, JsonPath{"peaks.json", "box"}, dir / "bad");
    ADD_FAILURE() << "a string gbps was plotted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("peaks.json: field 'box.bandwidth_sweep[1].gbps'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)peaks_bandwidth_plot({{"peak_gbps", 1}}, JsonPath{"p", "gpu"}, dir / "g"),
               Error);
  // Members of the wrong type are refused by field, not by a JSON library exception.
  for (const auto& [key, value, field] :
       std::vector<std::tuple<std::string, nlohmann::json, std::string>>{
           {"machine", 3, "'box.machine'"},
           {"method", {{"bandwidth_simd", 2}}, "'box.method.bandwidth_simd'"}}) {
    nlohmann::json wrong = entry;
    wrong[key] = value;
    try {
      (void)peaks_bandwidth_plot(wrong, JsonPath{"peaks.json", "box"}, dir / "w");
      ADD_FAILURE() << key;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
}

TEST(PeaksReader, ReadsASeed003FileFromThePythonProject) {
  test::TempDir dir;
  const fs::path f = dir / "peaks.json";
  write_text(f, R"({"a100": {"description": "NVIDIA A100 40GB", "peak_gbps": 1555,
                   "peak_gflops": {"fp32": 19500, "fp16": 312000, "bf16": 312000}}})");
  const MachineCeilings m = read_peaks_json(f);
  EXPECT_EQ(m.env, "a100");
  EXPECT_EQ(m.description, "NVIDIA A100 40GB");
  EXPECT_EQ(m.peak_gbps, 1555);
  EXPECT_EQ(m.peak_gflops_fp32, 19500);
  EXPECT_TRUE(m.compute.empty());
  EXPECT_TRUE(m.memory.empty());
  EXPECT_EQ(m.peak_gflops.at("fp16"), 312000);
  EXPECT_EQ(m.peak_gflops.size(), 3u);
}

TEST(PeaksReader, PicksTheNamedEnvTheOnlyOneOrThisHost) {
  json doc = {{"gpu-box", seed003_env(900, 19500)}, {"laptop", seed003_env(50, 500)}};
  doc["laptop"]["compute_ceilings"] = {
      {{"name", "avx2 fma"}, {"simd", "avx2"}, {"threads", 1}, {"gflops", 100.5}, {"chains", 12}},
      {{"name", "avx2 fma"}, {"simd", "avx2"}, {"threads", 4}, {"gflops", 400}}};
  doc["laptop"]["memory_ceilings"] = {{{"level", "L1"},
                                       {"kernel", "triad"},
                                       {"threads", 4},
                                       {"gbps", 800},
                                       {"working_set_bytes", {4096, 65536}}}};
  const MachineCeilings m = ceilings_from_json(doc, "laptop", "x.json");
  EXPECT_EQ(m.env, "laptop");
  EXPECT_EQ(m.peak_gbps, 50);
  ASSERT_EQ(m.compute.size(), 2u);
  EXPECT_EQ(m.compute[0].name, "avx2 fma");
  EXPECT_EQ(m.compute[0].simd, "avx2");
  EXPECT_EQ(m.compute[0].threads, 1);
  EXPECT_EQ(m.compute[0].gflops, 100.5);
  EXPECT_EQ(m.compute[1].threads, 4);
  ASSERT_EQ(m.memory.size(), 1u);
  EXPECT_EQ(m.memory[0].level, "L1");
  EXPECT_EQ(m.memory[0].threads, 4);
  EXPECT_EQ(m.memory[0].gbps, 800);
  EXPECT_EQ(m.memory[0].working_set_lo, 4096);
  EXPECT_EQ(m.memory[0].working_set_hi, 65536);

  // No env and none named after this host: a usage error listing them.
  if (!doc.contains(hostname())) {
    try {
      (void)ceilings_from_json(doc, "", "x.json");
      FAIL() << "no env chosen";
    } catch (const UsageError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("gpu-box"), std::string::npos) << msg;
      EXPECT_NE(msg.find("laptop"), std::string::npos) << msg;
      EXPECT_NE(msg.find("x.json"), std::string::npos) << msg;
    }
  }
  // ... one named after this host is chosen.
  json with_host = doc;
  with_host[hostname()] = seed003_env(77, 777);
  EXPECT_EQ(ceilings_from_json(with_host, "", "x.json").peak_gbps, 77);
  // ... a name that is not there is refused with the list.
  EXPECT_THROW((void)ceilings_from_json(doc, "nope", "x.json"), UsageError);
  // A single env needs no name.
  EXPECT_EQ(ceilings_from_json(json{{"only", seed003_env(5, 6)}}, "", "x.json").env, "only");
}

void expect_error_naming(const json& doc, const std::string& field) {
  try {
    (void)ceilings_from_json(doc, "", "dir/peaks.json");
    FAIL() << "accepted " << doc.dump();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("dir/peaks.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find(field), std::string::npos) << msg;
  }
}

TEST(PeaksReader, ErrorsNameTheFileAndTheField) {
  json e = seed003_env(1, 2);
  e.erase("peak_gbps");
  expect_error_naming({{"box", e}}, "box.peak_gbps");
  e = seed003_env(1, 2);
  e["peak_gbps"] = "fast";
  expect_error_naming({{"box", e}}, "box.peak_gbps");
  e = seed003_env(1, 2);
  e["peak_gflops"]["fp32"] = nullptr;
  expect_error_naming({{"box", e}}, "box.peak_gflops.fp32");
  e = seed003_env(1, 2);
  e["peak_gflops"] = {{"fp16", 5}};
  expect_error_naming({{"box", e}}, "box.peak_gflops.fp32");
  e = seed003_env(1, 2);
  e["peak_gflops"] = 3;
  expect_error_naming({{"box", e}}, "box.peak_gflops");
  e = seed003_env(1, 2);
  e["compute_ceilings"] = {{{"name", "x"}, {"simd", "avx2"}, {"threads", 1}}};
  expect_error_naming({{"box", e}}, "box.compute_ceilings[0].gflops");
  expect_error_naming(json::array(), "object");
  expect_error_naming(json::object(), "no environments");
  // Values no machine has, and ceilings that contradict the headline peaks.
  expect_error_naming({{"box", seed003_env(-3, 2)}}, "box.peak_gbps': expected a positive number");
  expect_error_naming({{"box", seed003_env(1, 1e308)}}, "box.peak_gflops.fp32': 1e+308 GFLOP/s is more than any");
  e = seed003_env(10, 100);
  e["peak_gflops"]["fp16"] = -1;
  expect_error_naming({{"box", e}}, "box.peak_gflops.fp16");
  const json ok_compute = {{"name", "avx2 fma"}, {"simd", "avx2"}, {"threads", 1}, {"gflops", 90}};
  const json ok_memory = {{"level", "L2"}, {"threads", 1}, {"gbps", 50}, {"working_set_bytes", {1000, 5000}}};
  e = seed003_env(10, 100);
  e["compute_ceilings"] = {ok_compute};
  e["memory_ceilings"] = {ok_memory};
  EXPECT_EQ(ceilings_from_json({{"box", e}}, "", "dir/peaks.json").memory.size(), 1u);
  json bad = ok_compute;
  bad["gflops"] = 1e9;
  e["compute_ceilings"] = {bad};
  expect_error_naming({{"box", e}}, "box.compute_ceilings[0].gflops");
  bad["gflops"] = 400;
  e["compute_ceilings"] = {bad};
  expect_error_naming({{"box", e}}, "400.0 GFLOP/s is above peak_gflops.fp32 (100.0)");
  bad = ok_compute;
  bad["threads"] = 0;
  e["compute_ceilings"] = {bad};
  expect_error_naming({{"box", e}}, "box.compute_ceilings[0].threads");
  e["compute_ceilings"] = {ok_compute};
  bad = ok_memory;
  bad["gbps"] = -3;
  e["memory_ceilings"] = {bad};
  expect_error_naming({{"box", e}}, "box.memory_ceilings[0].gbps");
  bad = ok_memory;
  bad["working_set_bytes"] = {5000, 10};
  e["memory_ceilings"] = {bad};
  expect_error_naming({{"box", e}}, "box.memory_ceilings[0].working_set_bytes': expected [lo, hi] with 0 <= lo <= hi");

  test::TempDir dir;
  EXPECT_THROW((void)read_peaks_json(dir / "missing.json"), Error);
  try {
    (void)read_peaks_json(dir / "missing.json");
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("missing.json"), std::string::npos) << err.what();
  }
  write_text(dir / "bad.json", "{");
  try {
    (void)read_peaks_json(dir / "bad.json");
    FAIL();
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("bad.json"), std::string::npos) << err.what();
  }
}

bool positive_finite(const json& v) {
  return v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() > 0;
}

TEST(Peaks, AQuickRunWritesEverySection) {
  PeakOptions o = quick_peak_options();
  o.rounds = 1;
  o.fma_seconds = 0.002;
  o.fma_trial_seconds = 0.001;
  o.min_sample_seconds = 1e-4;
  // Made up so that every level has sizes on 1 and 2 threads and the sweep stops at 4 MiB.
  o.caches = {8 << 10, 64 << 10, 1 << 20};
  o.threads = 2;
  o.sgemm_n = 48;
  const Peaks p = measure_peaks(o);
  const int all = p.threads;
  const json j = peaks_to_json(p, "test-env");
  ASSERT_TRUE(j.contains("test-env"));
  const json& e = j["test-env"];
  EXPECT_TRUE(e["description"].is_string());
  EXPECT_TRUE(positive_finite(e["peak_gbps"]));
  EXPECT_TRUE(positive_finite(e["peak_gflops"]["fp32"]));
  EXPECT_EQ(e["machine"]["caches"]["L1d"], 8 << 10);
  EXPECT_GE(e["machine"]["simd"].size(), 2u);
  EXPECT_EQ(e["method"]["statistic"], "median");
  EXPECT_EQ(e["method"]["bytes_counting"], "STREAM (no write-allocate)");
  EXPECT_EQ(e["method"]["quick"], true);
  EXPECT_EQ(e["method"]["rounds"], 1);
  const std::size_t ts = all > 1 ? 2 : 1;
  EXPECT_EQ(e["compute_ceilings"].size(), e["machine"]["simd"].size() * ts);
  for (const json& c : e["compute_ceilings"]) {
    EXPECT_TRUE(positive_finite(c["gflops"])) << c;
    EXPECT_LE(c["min"].get<double>(), c["gflops"].get<double>());
    EXPECT_GE(c["max"].get<double>(), c["gflops"].get<double>());
    EXPECT_GE(c["chains"].get<int>(), 8);
  }
  // Every level on 1 and all threads.
  EXPECT_EQ(e["memory_ceilings"].size(), 4 * ts) << e["memory_ceilings"];
  for (const json& m : e["memory_ceilings"]) {
    EXPECT_EQ(m["kernel"], "triad");
    EXPECT_TRUE(positive_finite(m["gbps"])) << m;
    EXPECT_EQ(m["working_set_bytes"].size(), 2u);
  }
  EXPECT_EQ(e["bandwidth_plateaus"].size(), 3 * 4 * ts);
  EXPECT_GE(e["bandwidth_sweep"].size(), 3 * ts * 9);
  for (const json& s : e["bandwidth_sweep"]) EXPECT_TRUE(positive_finite(s["gbps"])) << s;
  ASSERT_TRUE(e["stream_triad"].is_object()) << e["stream_triad"];
  EXPECT_TRUE(positive_finite(e["stream_triad"]["gbps"]));
  EXPECT_TRUE(positive_finite(e["stream_triad"]["ours_gbps"]));
  EXPECT_TRUE(positive_finite(e["stream_triad"]["ratio"]));
  EXPECT_GE(e["stream_triad"]["working_set_bytes"].get<int64_t>(), (4 << 20) - 4096);
  EXPECT_EQ(e["sgemm"].size(), 2 * ts);
  for (const json& s : e["sgemm"]) EXPECT_TRUE(positive_finite(s["gflops"])) << s;
  for (const char* key :
       {"threads", "simd", "fma_gflops_per_s_1thread", "fma_gflops_per_s", "triad_gbytes_per_s",
        "sgemm_gflops_per_s_1thread", "sgemm_gflops_per_s", "flops_per_cycle_at_nominal_clock"}) {
    EXPECT_TRUE(e["measured"].contains(key)) << key;
  }

  // Written, merged and read back through the reader the roofline uses.
  test::TempDir dir;
  merge_peaks_json(dir / "peaks.json", "test-env", e);
  const MachineCeilings m = read_peaks_json(dir / "peaks.json");
  EXPECT_EQ(m.peak_gbps, e["peak_gbps"].get<double>());
  EXPECT_EQ(m.compute.size(), e["compute_ceilings"].size());
  EXPECT_EQ(m.memory.size(), 4 * ts);
  EXPECT_EQ(m.memory.back().level, "DRAM");
}

TEST(Peaks, FmaPeakAloneIsPositive) {
  const double g = measure_fma_peak(1, 1, 0.002);
  EXPECT_GT(g, 0);
  EXPECT_TRUE(std::isfinite(g));
}

}  // namespace
}  // namespace nnperf
