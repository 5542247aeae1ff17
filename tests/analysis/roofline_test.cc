// The roofline: ceilings read from peaks.json, each point's bound computed by hand, points
// collected from real profile / mlp-bench / train folders with FLOPs equal to the complexity
// model's, and the reporters (seed CSV columns first, summary, plot) rendered from saved JSON.
#include "nnperf/analysis/roofline.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "nnperf/analysis/complexity.h"
#include "nnperf/core/error.h"
#include "nnperf/io/csv.h"
#include "nnperf/io/files.h"
#include "nnperf/io/json_read.h"
#include "nnperf/io/plot.h"
#include "nnperf/io/run_info.h"
#include "test_util.h"

namespace nnperf {
namespace {

nlohmann::json peaks_doc() {
  return nlohmann::json::parse(R"({
    "lab": {"description": "test box", "peak_gbps": 20, "peak_gflops": {"fp32": 190},
      "compute_ceilings": [
        {"name": "avx2 fma", "simd": "avx2", "threads": 1, "gflops": 100},
        {"name": "scalar fma", "simd": "scalar", "threads": 1, "gflops": 20},
        {"name": "avx2 fma", "simd": "avx2", "threads": 2, "gflops": 190}],
      "memory_ceilings": [
        {"level": "DRAM", "kernel": "triad", "threads": 1, "gbps": 15, "working_set_bytes": [1e8, 1e12]},
        {"level": "L1", "kernel": "triad", "threads": 1, "gbps": 200, "working_set_bytes": [4096, 16384]},
        {"level": "L2", "kernel": "triad", "threads": 1, "gbps": 100, "working_set_bytes": [32768, 262144]},
        {"level": "DRAM", "kernel": "triad", "threads": 2, "gbps": 20, "working_set_bytes": [1e8, 1e12]}]
    }})");
}

RooflinePoint point(double flops, double bytes, double ms, int threads) {
  RooflinePoint p;
  p.source = "profile";
  p.label = "p";
  p.arch = "m";
  p.layer = "l";
  p.layer_type = "Conv2d";
  p.algorithm = "gemm";
  p.batch_size = 4;
  p.threads = threads;
  p.flops = flops;
  p.bytes = bytes;
  p.time_ms = ms;
  p.elapsed_sec = ms * 1e-3;
  return p;
}

TEST(Roofline, CeilingsFromPeaksJson) {
  const MachineCeilings m = ceilings_from_json(peaks_doc(), "", "p.json");
  EXPECT_EQ(m.env, "lab");
  EXPECT_EQ(m.peak_gbps, 20);
  EXPECT_EQ(m.peak_gflops_fp32, 190);
  EXPECT_EQ(m.compute.size(), 3u);
  ASSERT_EQ(m.memory.size(), 4u);
  EXPECT_EQ(m.memory[1].working_set_hi, 16384);
  // cloudml-project1's own file: only the three seed fields.
  const auto seed = nlohmann::json::parse(
      R"({"a100": {"description": "x", "peak_gbps": 1555, "peak_gflops": {"fp32": 19500, "fp16": 312000}},
          "cpu": {"description": "y", "peak_gbps": 20, "peak_gflops": {"fp32": 200}}})");
  EXPECT_EQ(ceilings_from_json(seed, "a100", "s.json").peak_gflops_fp32, 19500);
  EXPECT_TRUE(ceilings_from_json(seed, "cpu", "s.json").compute.empty());
  try {
    ceilings_from_json(seed, "", "s.json");
    FAIL() << "two environments without --env";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("a100, cpu"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ceilings_from_json(seed, "tpu", "s.json"), UsageError);
  try {
    ceilings_from_json(
        nlohmann::json::parse(R"({"e": {"peak_gbps": "fast", "peak_gflops": {"fp32": 1}}})"), "",
        "bad.json");
    FAIL() << "a string bandwidth";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("peak_gbps"), std::string::npos) << e.what();
  }
}

TEST(Roofline, BoundsByHand) {
  const MachineCeilings m = ceilings_from_json(peaks_doc(), "lab", "p.json");
  // 0: 2 GFLOP over 1 GB in 100 ms on 1 thread: ai 2, 20 GFLOP/s attained; 1 GB is beyond L2, so
  //    DRAM's 15 GB/s bounds it at 30 GFLOP/s (below the 100 GFLOP/s 1-thread FMA roof): 66.7%.
  // 1: the same intensity with 10 KB: L1 (200 GB/s -> 400) is above the roof: compute, 100.
  // 2: ai 2 with 100 KB: L2 (100 GB/s -> 200): compute bound at 100.
  // 3: 2 threads, ai 2, 1 GB: DRAM 20 GB/s -> 40 below 190: memory, 40.
  // 4: 3 threads: held to the 2-thread ceilings (the most threads measured below 3).
  const std::vector<RooflinePoint> pts{point(2e9, 1e9, 100, 1), point(2e4, 1e4, 0.001, 1),
                                       point(2e5, 1e5, 0.01, 1), point(2e9, 1e9, 100, 2),
                                       point(4e11, 1e9, 10000, 3)};
  const nlohmann::json doc = roofline_json(pts, m, {});
  const auto& r = doc["records"];
  ASSERT_EQ(r.size(), 5u);
  EXPECT_DOUBLE_EQ(r[0]["ai"].get<double>(), 2.0);
  EXPECT_NEAR(r[0]["attained_gflops"].get<double>(), 20.0, 1e-9);
  EXPECT_NEAR(r[0]["attainable_gflops"].get<double>(), 30.0, 1e-9);
  EXPECT_NEAR(r[0]["pct_of_roof"].get<double>(), 200.0 / 3, 1e-9);
  EXPECT_EQ(r[0]["bound"], "memory");
  EXPECT_EQ(r[0]["ceiling"], "DRAM");
  EXPECT_EQ(r[0]["peak_gflops"], 100.0);
  EXPECT_EQ(r[0]["peak_gbps"], 20.0);  // the seed column: the DRAM figure of peaks.json
  EXPECT_EQ(r[1]["bound"], "compute");
  EXPECT_EQ(r[1]["ceiling"], "avx2 fma");
  EXPECT_NEAR(r[1]["attainable_gflops"].get<double>(), 100.0, 1e-9);
  EXPECT_EQ(r[2]["bound"], "compute");
  EXPECT_EQ(r[2]["ceiling_gbps"], 100.0);
  EXPECT_EQ(r[3]["bound"], "memory");
  EXPECT_NEAR(r[3]["attainable_gflops"].get<double>(), 40.0, 1e-9);
  // ai 400: compute bound at the 2-thread roof.
  EXPECT_EQ(r[4]["bound"], "compute");
  EXPECT_NEAR(r[4]["attainable_gflops"].get<double>(), 190.0, 1e-9);
  EXPECT_NEAR(r[4]["images_per_sec"].get<double>(), 4 / 10.0, 1e-12);
  // Time shares: points 0 and 3 (200 ms of 10200.011) are memory bound.
  EXPECT_NEAR(doc["context"]["memory_bound_time_share"].get<double>(), 200 / 10200.011, 1e-12);
}

TEST(Roofline, GivenPeaksAndBadFlags) {
  const MachineCeilings m = ceilings_from_peaks(0.5, 25);
  EXPECT_EQ(m.peak_gflops_fp32, 500);
  const auto doc = roofline_json({point(1e9, 1e8, 10, 1)}, m, {});
  // ai 10 x 25 GB/s = 250 < 500: memory bound at 250; 100 GFLOP/s attained: 40%.
  EXPECT_NEAR(doc["records"][0]["pct_of_roof"].get<double>(), 40.0, 1e-9);
  EXPECT_THROW(ceilings_from_peaks(0, 25), UsageError);
  EXPECT_THROW(ceilings_from_peaks(1, std::nan("")), UsageError);
  EXPECT_THROW(roofline_json({}, m, {}, "colour"), UsageError);
}

TEST(Roofline, CsvColumnsAndSummary) {
  const MachineCeilings m = ceilings_from_json(peaks_doc(), "lab", "p.json");
  const auto doc = roofline_json({point(2e9, 1e9, 100, 1)}, m, {"a note"});
  const CsvDoc csv = roofline_points_csv(doc);
  const std::vector<std::string> seed{
      "label",       "env",         "arch",           "backend", "batch_size",
      "precision",   "elapsed_sec", "images_per_sec", "ai",      "attained_gflops",
      "peak_gflops", "peak_gbps"};
  ASSERT_GE(csv.header.size(), seed.size() + 9);
  EXPECT_TRUE(std::equal(seed.begin(), seed.end(), csv.header.begin()));
  const std::vector<std::string> ours{"layer",       "algorithm", "flops",
                                      "bytes",       "time_ms",   "attainable_gflops",
                                      "pct_of_roof", "bound",     "ceiling"};
  EXPECT_TRUE(std::equal(ours.begin(), ours.end(), csv.header.begin() + 12));
  ASSERT_EQ(csv.rows.size(), 1u);
  EXPECT_EQ(csv.rows[0][1], "lab");
  EXPECT_EQ(csv.rows[0][19], "memory");
  const CsvDoc sum = roofline_summary_csv(doc);
  EXPECT_EQ(sum.header[2], "attained_gflops");
  EXPECT_EQ(sum.rows[0][5], "memory");
  EXPECT_NE(roofline_text(doc).find("a note"), std::string::npos);
}

// A real sweep: every conv layer of a resnet18 sanity profile is a point whose FLOPs and bytes
// are the complexity model's for that layer.
TEST(Roofline, ProfileSweepPointsCarryTheComplexityCounts) {
  test::TempDir dir;
  const auto r =
      test::run_nnperf(fmt::format("profile --model resnet18 --algorithm gemm --stage sanity "
                                   "--sizes 40 --batch-size 2 --threads 1 "
                                   "--output-dir {}",
                                   (dir / "sweep").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> notes;
  const auto points = collect_roofline_points(dir.path(), notes);
  const ModelComplexity mc = model_complexity("resnet18", 40, 2);
  int convs = 0;
  for (const auto& l : mc.layers) {
    if (l.type != "Conv2d") continue;
    ++convs;
    const auto it = std::find_if(points.begin(), points.end(),
                                 [&](const RooflinePoint& p) { return p.layer == l.name; });
    ASSERT_NE(it, points.end()) << l.name;
    EXPECT_EQ(it->flops, l.flops) << l.name;
    EXPECT_EQ(it->bytes, l.bytes) << l.name;
    EXPECT_EQ(it->batch_size, 2);
    EXPECT_EQ(it->threads, 1);
    EXPECT_EQ(it->algorithm, "gemm");
    EXPECT_GT(it->time_ms, 0);
  }
  EXPECT_EQ(convs, 20);
  // The JSON re-renders: plot with the ten slowest labelled, CSVs.
  const auto doc = roofline_json(points, ceilings_from_json(peaks_doc(), "lab", "p.json"), notes);
  write_json_atomic(dir / "roofline.json", doc);
  const auto back = read_json(dir / "roofline.json");
  EXPECT_EQ(roofline_points_csv(back).rows, roofline_points_csv(doc).rows);
  const PlotResult plot = roofline_plot(back, dir / "roofline");
  // The .dat and .gp files are written with or without gnuplot; only the images need it.
  ASSERT_TRUE(std::filesystem::exists(dir / "roofline.dat"));
  EXPECT_GT(std::filesystem::file_size(dir / "roofline.dat"), 0u);
  ASSERT_TRUE(std::filesystem::exists(dir / "roofline.gp"));
  const std::string gp = test::read_text(dir / "roofline.gp");
  EXPECT_NE(gp.find("set logscale x"), std::string::npos);
  EXPECT_NE(gp.find("L1 200.0 GB/s"), std::string::npos);
  EXPECT_NE(gp.find("scalar fma"), std::string::npos);
  std::size_t labels = 0;
  for (std::size_t p = gp.find("set label"); p != std::string::npos;
       p = gp.find("set label", p + 1))
    ++labels;
  EXPECT_EQ(labels, 10u);
  if (!gnuplot_available()) {
    EXPECT_FALSE(plot.rendered);
    GTEST_SKIP() << "gnuplot not installed: the roofline images are not checked";
  }
  ASSERT_TRUE(plot.rendered) << plot.message;
  for (const char* ext : {".svg", ".png"}) {
    const auto img = dir / (std::string("roofline") + ext);
    ASSERT_TRUE(std::filesystem::exists(img)) << img;
    EXPECT_GT(std::filesystem::file_size(img), 0u) << img;
  }
}

// mlp-bench and train folders: one point per case / run, counted as a training iteration (or a
// forward pass) of that MLP.
TEST(Roofline, MlpBenchAndTrainPoints) {
  test::TempDir dir;
  auto r = test::run_nnperf(
      fmt::format("mlp-bench --impls blocked --batch-sizes 32 --hidden 64,32 --warmup 1 --measure "
                  "3 --threads 1 "
                  "--consistency-steps 0 --overhead-reps 0 --synthetic --out-dir {}",
                  (dir / "bench").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::run_nnperf(fmt::format(
      "train --synthetic --epochs 1 --hidden 64,32 --batch-size 50 --threads 1 --no-tensorboard "
      "--out-dir {}",
      (dir / "train").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> notes;
  const auto points = collect_roofline_points(dir.path(), notes);
  ASSERT_EQ(points.size(), 3u);
  ComplexityOptions train_opts;
  train_opts.training = true;
  train_opts.optimizer = "adam";
  ModelOptions mo;
  mo.hidden = {64, 32};
  const ModelComplexity fwd = model_complexity("mlp", 28, 32, {}, mo);
  const ModelComplexity step = model_complexity("mlp", 28, 32, train_opts, mo);
  const ModelComplexity run = model_complexity("mlp", 28, 50, train_opts, mo);
  int seen = 0;
  for (const auto& p : points) {
    if (p.source == "mlp-bench" && p.pass == "inference") {
      EXPECT_EQ(p.flops, fwd.totals.flops_iteration());
      ++seen;
    } else if (p.source == "mlp-bench") {
      EXPECT_EQ(p.flops, step.totals.flops_iteration());
      EXPECT_EQ(p.bytes, step.totals.bytes_iteration());
      ++seen;
    } else {
      EXPECT_EQ(p.source, "train");
      EXPECT_EQ(p.flops, run.totals.flops_iteration());
      EXPECT_EQ(p.batch_size, 50);
      ++seen;
    }
  }
  EXPECT_EQ(seen, 3);
}

TEST(Roofline, BrokenFolderNamesTheFile) {
  test::TempDir dir;
  std::filesystem::create_directories(dir / "s");
  write_file_atomic(
      dir / "s" / "run.json",
      R"({"job": "profile", "model": "resnet18", "algorithm": "gemm", "sizes": [64], "setup": {"model": "resnet18", "algorithm": "gemm", "batch_size": 1,
                        "threads": 1, "fold_bn": false}})");
  write_file_atomic(dir / "s" / "resnet18_gemm_layers.csv",
                    "model,algorithm,input_size,layer,mean_ms,layer_type,algorithm_used\n"
                    "resnet18,gemm,64,conv1,abc,Conv2d,gemm\n");
  std::vector<std::string> notes;
  try {
    collect_roofline_points(dir.path(), notes);
    FAIL() << "a non-numeric time";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("resnet18_gemm_layers.csv:2"), std::string::npos) << m;
    EXPECT_NE(m.find("mean_ms"), std::string::npos) << m;
  }
  write_file_atomic(dir / "s" / "resnet18_gemm_layers.csv",
                    "model,algorithm,input_size,layer,mean_ms,layer_type,algorithm_used\n"
                    "resnet18,gemm,64,nosuchlayer,1.5,Conv2d,gemm\n");
  try {
    collect_roofline_points(dir.path(), notes);
    FAIL() << "a layer resnet18 does not have";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("resnet18_gemm_layers.csv:2: layer nosuchlayer is not a layer of resnet18"),
              std::string::npos)
        << m;
  }
  EXPECT_THROW(collect_roofline_points(dir / "missing", notes), UsageError);
}

}  // namespace
}  // namespace nnperf
