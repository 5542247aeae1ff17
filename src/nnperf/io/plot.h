// Plots through gnuplot: we write the data file and the script beside the outputs (so a person can
// re-render or tweak them), then run gnuplot for SVG and PNG. Without gnuplot on PATH the data and
// script are still written and the call reports that the images were not rendered.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace nnperf {

struct Series {
  std::string title;
  std::vector<double> x;
  std::vector<double> y;
  // kLines/kPoints only: draw this series as lines or as points whatever the plot's kind
  // (a roofline's ceilings are lines, its layers points).
  enum class Style { kDefault, kLines, kPoints } style = Style::kDefault;
  // kLines/kPoints only: text written beside point k when point_labels[k] is not empty (empty
  // vector: none).
  std::vector<std::string> point_labels{};
};

struct PlotSpec {
  std::string title;
  std::string xlabel, ylabel;
  enum class Kind { kLines, kPoints, kBars, kHeatmap } kind = Kind::kLines;
  // kLines/kPoints: one per curve. kBars: y per category (x unused); several series are drawn
  // as clustered bars with a legend.
  std::vector<Series> series;
  std::vector<std::string> categories;      // kBars x labels / kHeatmap row labels
  std::vector<std::string> columns;         // kHeatmap column labels
  std::vector<std::vector<double>> matrix;  // kHeatmap values [row][column]
  bool logx = false, logy = false;
  bool label_points = false;  // kPoints: write each point's series title beside it
  // kLines/kPoints: a dashed vertical line at each x, labelled along it (cache sizes, ...).
  struct XMark {
    double x = 0;
    std::string label;
  };
  std::vector<XMark> x_marks;
};

struct PlotResult {
  bool rendered = false;  // SVG and PNG produced
  std::string message;    // why not, when not
};

// Writes <stem>.dat, <stem>.gp and renders <stem>.svg and <stem>.png (PNG through pngcairo when
// gnuplot has it, else libgd's png). A malformed spec (x/y sizes differ, ragged matrix, label
// count off) throws nnperf::Error; a missing or failing gnuplot only makes rendered=false.
PlotResult render_plot(const PlotSpec& spec, const std::filesystem::path& stem);
// gnuplot's path: $NNPERF_GNUPLOT (a path, or a name looked up on PATH) else "gnuplot" on PATH;
// empty when not found.
std::filesystem::path find_gnuplot();
bool gnuplot_available();

}  // namespace nnperf
