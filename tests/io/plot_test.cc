// Tests for io/plot: every kind renders an SVG (XML) and a PNG (PNG signature) beside its .dat and
// .gp; hostile titles stay literal text; a missing or failing gnuplot yields rendered=false with a
// message, never an exception; malformed specs throw naming the plot.
#include "nnperf/io/plot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "nnperf/core/error.h"
#include "test_util.h"

namespace nnperf {
namespace {

namespace fs = std::filesystem;

using test::ScopedEnv;

void expect_images(const fs::path& stem) {
  for (const char* ext : {".dat", ".gp", ".svg", ".png"}) {
    const fs::path p = stem.string() + ext;
    ASSERT_TRUE(fs::exists(p)) << p;
    EXPECT_GT(fs::file_size(p), 0u) << p;
  }
  const std::string svg = test::read_text(stem.string() + ".svg");
  EXPECT_TRUE(svg.starts_with("<?xml") || svg.starts_with("<svg")) << svg.substr(0, 80);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  const std::string png = test::read_text(stem.string() + ".png");
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
}

#define REQUIRE_GNUPLOT() \
  if (!gnuplot_available()) GTEST_SKIP() << "gnuplot not on PATH (Debian package gnuplot-nox)"

TEST(Plot, LinesWithHostileTitleStayLiteral) {
  REQUIRE_GNUPLOT();
  test::TempDir dir("nnperf-plot");
  const fs::path pwned = dir / "pwned";
  PlotSpec spec;
  // Quotes, backslash, backquote command, macro, underscore (enhanced-text subscript), newline.
  spec.title = "it's conv_im2col \"x\" \\ `touch " + pwned.string() + "` @title\nsecond line";
  spec.xlabel = "epoch";
  spec.ylabel = "loss";
  for (int s = 0; s < 3; ++s) {
    Series ser;
    ser.title = "act_" + std::to_string(s);
    for (int i = 0; i < 12; ++i) {
      ser.x.push_back(i);
      ser.y.push_back(std::exp(-0.2 * i) * (1 + 0.3 * s));
    }
    spec.series.push_back(ser);
  }
  const PlotResult r = render_plot(spec, dir / "sub" / "loss");
  ASSERT_TRUE(r.rendered) << r.message;
  expect_images(dir / "sub" / "loss");
  EXPECT_FALSE(fs::exists(pwned)) << "a backquote in a title must not run a command";
  const std::string svg = test::read_text(dir / "sub" / "loss.svg");
  EXPECT_NE(svg.find("conv_im2col"), std::string::npos) << "underscore kept (noenhanced)";
  EXPECT_NE(svg.find("@title"), std::string::npos);
  EXPECT_NE(svg.find("second line"), std::string::npos);
  EXPECT_NE(svg.find("act_2"), std::string::npos);
  const std::string dat = test::read_text(dir / "sub" / "loss.dat");
  EXPECT_NE(dat.find("# series 2: act_2"), std::string::npos);
  // The title's line break must not leak a non-numeric line into the data file.
  std::istringstream lines(dat);
  int data_lines = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    double x, y;
    char rest;
    EXPECT_EQ(std::sscanf(line.c_str(), "%lf %lf %c", &x, &y, &rest), 2) << line;
    ++data_lines;
  }
  EXPECT_EQ(data_lines, 36);
}

TEST(Plot, PointsWithLabelsAndLogAxes) {
  REQUIRE_GNUPLOT();
  test::TempDir dir("nnperf-plot");
  PlotSpec spec;
  spec.kind = PlotSpec::Kind::kPoints;
  spec.title = "roofline";
  spec.xlabel = "arithmetic intensity (FLOP/byte)";
  spec.ylabel = "GFLOP/s";
  spec.logx = spec.logy = true;
  spec.label_points = true;
  const char* names[] = {"vgg16/conv1_1", "resnet50/fc", "gemm 512"};
  for (int i = 0; i < 3; ++i)
    spec.series.push_back({names[i], {0.5 * (i + 1) * (i + 1)}, {3.0 * (i + 2)}});
  const PlotResult r = render_plot(spec, dir / "roofline");
  ASSERT_TRUE(r.rendered) << r.message;
  expect_images(dir / "roofline");
  const std::string svg = test::read_text(dir / "roofline.svg");
  EXPECT_NE(svg.find("resnet50/fc"), std::string::npos) << "point labels are drawn";
}

TEST(Plot, BarsWithCategories) {
  REQUIRE_GNUPLOT();
  test::TempDir dir("nnperf-plot");
  PlotSpec spec;
  spec.kind = PlotSpec::Kind::kBars;
  spec.title = "time per algorithm";
  spec.ylabel = "time_ms";
  spec.categories = {"direct", "im2col_gemm", "winograd", "fft", "implicit_gemm"};
  spec.series.push_back({"resnet18", {}, {12.5, 7.25, 5.5, 9.0, 8.125}});
  spec.series.push_back({"vgg16", {}, {30, 17, 11, 20, 19}});
  const PlotResult r = render_plot(spec, dir / "bars");
  ASSERT_TRUE(r.rendered) << r.message;
  expect_images(dir / "bars");
  const std::string svg = test::read_text(dir / "bars.svg");
  EXPECT_NE(svg.find("im2col_gemm"), std::string::npos);
  EXPECT_NE(svg.find("7.25"), std::string::npos) << "bar values are printed";
}

TEST(Plot, HeatmapWithLabelsAndCellValues) {
  REQUIRE_GNUPLOT();
  test::TempDir dir("nnperf-plot");
  PlotSpec spec;
  spec.kind = PlotSpec::Kind::kHeatmap;
  spec.title = "speed-up over direct";
  spec.categories = {"conv3x3 s1", "conv5x5", "conv1x1", "depthwise"};
  spec.columns = {"im2col", "winograd", "fft"};
  spec.matrix = {{1.5, 2.25, 0.75}, {1.25, 0.5, 3.125}, {4, 1, 0.25}, {0.875, 1.75, 2}};
  const PlotResult r = render_plot(spec, dir / "heat");
  ASSERT_TRUE(r.rendered) << r.message;
  expect_images(dir / "heat");
  const std::string svg = test::read_text(dir / "heat.svg");
  EXPECT_NE(svg.find("3.12"), std::string::npos) << "cell values are printed (%.3g)";
  EXPECT_NE(svg.find("depthwise"), std::string::npos);
  EXPECT_NE(svg.find("winograd"), std::string::npos);
}

TEST(Plot, MissingOrFailingGnuplotIsReportedNotThrown) {
  test::TempDir dir("nnperf-plot");
  PlotSpec spec;
  spec.title = "t";
  spec.series.push_back({"s", {1, 2, 3}, {4, 5, 6}});
  {
    ScopedEnv g("NNPERF_GNUPLOT", (dir / "no-gnuplot-here").c_str());
    EXPECT_FALSE(gnuplot_available());
    const PlotResult r = render_plot(spec, dir / "a");
    EXPECT_FALSE(r.rendered);
    EXPECT_NE(r.message.find("gnuplot not found"), std::string::npos) << r.message;
    EXPECT_TRUE(fs::exists(dir / "a.dat"));
    EXPECT_TRUE(fs::exists(dir / "a.gp"));
    EXPECT_FALSE(fs::exists(dir / "a.svg"));
  }
  {
    ScopedEnv g("NNPERF_GNUPLOT", nullptr);
    ScopedEnv path("PATH", "");
    EXPECT_FALSE(gnuplot_available());
    const PlotResult r = render_plot(spec, dir / "b");
    EXPECT_FALSE(r.rendered);
    EXPECT_NE(r.message.find("gnuplot-nox"), std::string::npos) << r.message;
  }
  {
    ScopedEnv g("NNPERF_GNUPLOT", "/bin/false");
    const PlotResult r = render_plot(spec, dir / "c");
    EXPECT_FALSE(r.rendered);
    EXPECT_NE(r.message.find("failed"), std::string::npos) << r.message;
  }
}

TEST(Plot, MalformedSpecsThrow) {
  test::TempDir dir("nnperf-plot");
  PlotSpec spec;
  spec.title = "bad";
  EXPECT_THROW(render_plot(spec, dir / "none"), Error);
  spec.series.push_back({"s", {1, 2}, {1, 2, 3}});
  try {
    render_plot(spec, dir / "mismatch");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("2 x values but 3 y values"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("mismatch"), std::string::npos) << e.what();
  }
  PlotSpec heat;
  heat.kind = PlotSpec::Kind::kHeatmap;
  heat.matrix = {{1, 2}, {3}};
  EXPECT_THROW(render_plot(heat, dir / "ragged"), Error);
  PlotSpec bars;
  bars.kind = PlotSpec::Kind::kBars;
  bars.categories = {"a", "b"};
  bars.series.push_back({"s", {}, {1, 2, 3}});
  EXPECT_THROW(render_plot(bars, dir / "bars"), Error);
}

}  // namespace
}  // namespace nnperf
