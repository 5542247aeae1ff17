// gnuplot rendering: the data file and a self-contained script are written beside the images, so
// `cd <dir> && gnuplot <stem>.gp` re-renders them. Every user string reaches gnuplot inside single
// quotes (gnuplot performs no backquote or macro substitution there), terminals run noenhanced so
// "conv_im2col" is not typeset as a subscript.
#include "nnperf/io/plot.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "nnperf/core/error.h"
#include "nnperf/io/csv.h"
#include "nnperf/io/files.h"

namespace nnperf {

namespace fs = std::filesystem;

namespace {

// A gnuplot string expression for arbitrary text: single-quoted pieces ('' escapes a quote),
// joined with "\n" where the text has line breaks; other control characters become spaces.
std::string gp_string(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\n') {
      out += "'.\"\\n\".'";
    } else if (c == '\'') {
      out += "''";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

// Text for a '#' comment line: line breaks and other control characters become spaces.
std::string comment_text(std::string s) {
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return s;
}

bool is_executable_file(const fs::path& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

std::string num(double v) { return csv_number(v, 0); }  // shortest exact text; "nan" for NaN

std::string series_title(const Series& s, std::size_t i) {
  return s.title.empty() ? fmt::format("series {}", i + 1) : s.title;
}

void validate(const PlotSpec& spec, const fs::path& stem) {
  const std::string where = fmt::format("plot {} ('{}')", stem.string(), spec.title);
  using Kind = PlotSpec::Kind;
  if (spec.kind == Kind::kHeatmap) {
    if (spec.matrix.empty() || spec.matrix[0].empty()) fail("{}: heatmap matrix is empty", where);
    const std::size_t cols = spec.matrix[0].size();
    for (std::size_t r = 0; r < spec.matrix.size(); ++r) {
      if (spec.matrix[r].size() != cols) {
        fail("{}: heatmap row {} has {} values but row 0 has {}", where, r, spec.matrix[r].size(),
             cols);
      }
    }
    if (!spec.categories.empty() && spec.categories.size() != spec.matrix.size()) {
      fail("{}: {} row labels for {} heatmap rows", where, spec.categories.size(),
           spec.matrix.size());
    }
    if (!spec.columns.empty() && spec.columns.size() != cols) {
      fail("{}: {} column labels for {} heatmap columns", where, spec.columns.size(), cols);
    }
    return;
  }
  if (spec.series.empty()) fail("{}: no series to plot", where);
  for (std::size_t i = 0; i < spec.series.size(); ++i) {
    const Series& s = spec.series[i];
    if (s.y.empty()) fail("{}: series '{}' has no points", where, series_title(s, i));
    const bool x_optional = spec.kind == Kind::kBars;
    if (!(x_optional && s.x.empty()) && s.x.size() != s.y.size()) {
      fail("{}: series '{}' has {} x values but {} y values", where, series_title(s, i), s.x.size(),
           s.y.size());
    }
    if (!s.point_labels.empty() && s.point_labels.size() != s.y.size()) {
      fail("{}: series '{}' has {} point labels for {} points", where, series_title(s, i),
           s.point_labels.size(), s.y.size());
    }
    if (spec.kind == Kind::kBars && !spec.categories.empty() &&
        s.y.size() != spec.categories.size()) {
      fail("{}: series '{}' has {} bars but there are {} categories", where, series_title(s, i),
           s.y.size(), spec.categories.size());
    }
  }
}

struct Rendered {
  std::string data;
  std::string body;  // everything between "set terminal"/"set output" and the plot itself
  std::string plot;  // the plot command
  int width = 900, height = 560;
};

void common_settings(const PlotSpec& spec, std::string& body) {
  body += fmt::format("set title {}\n", gp_string(spec.title));
  body += fmt::format("set xlabel {}\n", gp_string(spec.xlabel));
  body += fmt::format("set ylabel {}\n", gp_string(spec.ylabel));
  body += "set datafile missing 'nan'\n";
}

Rendered render_xy(const PlotSpec& spec, const std::string& dat) {
  Rendered r;
  std::string& body = r.body;
  common_settings(spec, body);
  body += "set grid\nset colorsequence podo\n";
  if (spec.logx) body += "set logscale x\n";
  if (spec.logy) body += "set logscale y\n";
  // Mark labels take tags from 100000 so that label_points' tags (1, 2, ...) cannot replace them.
  for (std::size_t i = 0; i < spec.x_marks.size(); ++i) {
    const PlotSpec::XMark& m = spec.x_marks[i];
    body += fmt::format("set arrow from {0}, graph 0 to {0}, graph 1 nohead dt 2 lc rgb 'gray40'\n",
                        num(m.x));
    body += fmt::format(
        "set label {} {} at {}, graph 0.98 rotate by 90 right offset char -0.7,0 "
        "tc rgb 'gray30' noenhanced\n",
        100000 + i, gp_string(m.label), num(m.x));
  }
  const bool points = spec.kind == PlotSpec::Kind::kPoints;
  if (points && spec.label_points) {
    body += "set key off\n";
  } else {
    body += "set key outside right top noenhanced\n";
  }
  std::vector<std::string> parts;
  int label_id = 1;
  int point_series = 0;  // past the 8 colours of the sequence, points change shape too
  for (std::size_t i = 0; i < spec.series.size(); ++i) {
    const Series& s = spec.series[i];
    r.data += fmt::format("# series {}: {}\n", i, comment_text(series_title(s, i)));
    for (std::size_t k = 0; k < s.y.size(); ++k) {
      r.data += fmt::format("{} {}\n", num(s.x[k]), num(s.y[k]));
      const bool finite = std::isfinite(s.x[k]) && std::isfinite(s.y[k]);
      if (points && spec.label_points && finite) {
        body += fmt::format("set label {} {} at first {}, first {} offset char 0.8,0.5 font ',9'\n",
                            label_id++, gp_string(series_title(s, i)), num(s.x[k]), num(s.y[k]));
      } else if (!s.point_labels.empty() && !s.point_labels[k].empty() && finite) {
        body += fmt::format("set label {} {} at first {}, first {} offset char 0.8,0.5 font ',8'\n",
                            label_id++, gp_string(s.point_labels[k]), num(s.x[k]), num(s.y[k]));
      }
    }
    r.data += "\n\n";  // two blank lines: next gnuplot "index"
    const bool as_points =
        s.style == Series::Style::kPoints || (s.style == Series::Style::kDefault && points);
    static constexpr int kShapes[] = {7, 5, 9, 11, 13, 15};
    const std::string point_style =
        fmt::format("with points pt {} ps 1.1", kShapes[(as_points ? point_series++ : 0) / 8 % 6]);
    const std::string style = as_points ? point_style
                              : s.style == Series::Style::kLines || s.y.size() > 40
                                  ? "with lines lw 2"
                                  : "with linespoints lw 2 pt 7 ps 0.8";
    parts.push_back(fmt::format("{} index {} using 1:2 {} title {}", i == 0 ? gp_string(dat) : "''",
                                i, style, gp_string(series_title(s, i))));
  }
  r.plot = "plot " + fmt::format("{}", fmt::join(parts, ", \\\n     ")) + "\n";
  return r;
}

Rendered render_bars(const PlotSpec& spec, const std::string& dat) {
  Rendered r;
  std::string& body = r.body;
  common_settings(spec, body);
  const std::size_t n = spec.series[0].y.size();
  const std::size_t ns = spec.series.size();
  const double width = 0.8 / static_cast<double>(ns);
  body += "set grid ytics\nset colorsequence podo\nset style fill solid 0.85 border -1\n";
  body += fmt::format("set boxwidth {} absolute\n", num(width));
  body += fmt::format("set xrange [-0.6:{}]\n", num(static_cast<double>(n) - 0.4));
  body += spec.logy ? "set logscale y\n" : "set yrange [0:*]\n";
  if (ns > 1) {
    body += "set key outside right top noenhanced\n";
  } else {
    body += "set key off\n";
  }
  std::size_t longest = 0;
  std::string tics;
  for (std::size_t k = 0; k < n; ++k) {
    const std::string label = k < spec.categories.size() ? spec.categories[k] : std::to_string(k);
    longest = std::max(longest, label.size());
    tics += fmt::format("{}{} {}", k == 0 ? "" : ", ", gp_string(label), k);
  }
  body += fmt::format("set xtics ({}) {}\n", tics, longest * n > 80 ? "rotate by -35 left" : "");
  r.width = std::clamp(200 + static_cast<int>(n * ns) * 45, 700, 1800);
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < ns; ++i) {
    const Series& s = spec.series[i];
    r.data += fmt::format("# series {}: {}\n", i, comment_text(series_title(s, i)));
    for (std::size_t k = 0; k < n; ++k) {
      r.data += fmt::format("{} {}\n", k, num(s.y[k]));
    }
    r.data += "\n\n";
    const double offset = -0.4 + width * (static_cast<double>(i) + 0.5);
    const std::string x = fmt::format("($1{:+})", offset);
    parts.push_back(fmt::format("{} index {} using {}:2 with boxes title {}",
                                i == 0 ? gp_string(dat) : "''", i, x,
                                gp_string(series_title(s, i))));
    if (n * ns <= 40) {  // value labels on top of each bar while they still fit
      parts.push_back(fmt::format(
          "'' index {} using {}:2:(sprintf('%.3g', $2)) with labels offset 0,0.7 font ',9' notitle",
          i, x));
    }
  }
  r.plot = "plot " + fmt::format("{}", fmt::join(parts, ", \\\n     ")) + "\n";
  return r;
}

Rendered render_heatmap(const PlotSpec& spec, const std::string& dat) {
  Rendered r;
  std::string& body = r.body;
  common_settings(spec, body);
  const std::size_t rows = spec.matrix.size();
  const std::size_t cols = spec.matrix[0].size();
  // White -> orange: black cell text stays readable at both ends of the scale.
  body += "set palette defined (0 '#ffffff', 1 '#fdd0a2', 2 '#fd8d3c', 3 '#d94801')\n";
  body += "set key off\nset tics nomirror out\nset view map\n";
  body += fmt::format("set xrange [-0.5:{}]\n", num(static_cast<double>(cols) - 0.5));
  body += fmt::format("set yrange [{}:-0.5]\n", num(static_cast<double>(rows) - 0.5));
  std::string xt, yt;
  std::size_t longest_col = 0;
  for (std::size_t c = 0; c < cols; ++c) {
    const std::string label = c < spec.columns.size() ? spec.columns[c] : std::to_string(c);
    longest_col = std::max(longest_col, label.size());
    xt += fmt::format("{}{} {}", c == 0 ? "" : ", ", gp_string(label), c);
  }
  for (std::size_t k = 0; k < rows; ++k) {
    const std::string label = k < spec.categories.size() ? spec.categories[k] : std::to_string(k);
    yt += fmt::format("{}{} {}", k == 0 ? "" : ", ", gp_string(label), k);
  }
  body +=
      fmt::format("set xtics ({}) {}\n", xt, longest_col * cols > 70 ? "rotate by -35 left" : "");
  body += fmt::format("set ytics ({})\n", yt);
  r.width = std::clamp(260 + static_cast<int>(cols) * 80, 700, 2000);
  r.height = std::clamp(180 + static_cast<int>(rows) * 36, 450, 1600);
  r.data = "# column row value\n";
  for (std::size_t k = 0; k < rows; ++k) {
    for (std::size_t c = 0; c < cols; ++c) {
      r.data += fmt::format("{} {} {}\n", c, k, num(spec.matrix[k][c]));
    }
    r.data += "\n";
  }
  r.plot = fmt::format(
      "plot {} using 1:2:3 with image, \\\n"
      "     '' using 1:2:(sprintf('%.3g', $3)) with labels font ',9' tc 'black'\n",
      gp_string(dat));
  return r;
}

}  // namespace

fs::path find_gnuplot() {
  const char* env = std::getenv("NNPERF_GNUPLOT");
  const std::string name = (env != nullptr && *env != '\0') ? env : "gnuplot";
  if (name.find('/') != std::string::npos) {
    return is_executable_file(name) ? fs::path(name) : fs::path();
  }
  const char* path_env = std::getenv("PATH");
  const std::string path_list = path_env != nullptr ? path_env : "";
  std::size_t start = 0;
  while (start <= path_list.size()) {
    std::size_t end = path_list.find(':', start);
    if (end == std::string::npos) end = path_list.size();
    const std::string dir = path_list.substr(start, end - start);
    if (!dir.empty()) {
      const fs::path candidate = fs::path(dir) / name;
      if (is_executable_file(candidate)) return candidate;
    }
    start = end + 1;
  }
  return {};
}

bool gnuplot_available() { return !find_gnuplot().empty(); }

namespace {

Rendered render_kind(const PlotSpec& spec, const std::string& dat) {
  switch (spec.kind) {
    case PlotSpec::Kind::kLines:
    case PlotSpec::Kind::kPoints:
      return render_xy(spec, dat);
    case PlotSpec::Kind::kBars:
      return render_bars(spec, dat);
    case PlotSpec::Kind::kHeatmap:
      return render_heatmap(spec, dat);
  }
  return {};
}

// The gnuplot script: the plot once to SVG, then replotted to PNG (cairo where gnuplot has it).
std::string gnuplot_script(const Rendered& r, const std::string& name) {
  std::string script =
      fmt::format("# {0} -- written by nnperf. Re-render in this folder with: gnuplot {0}.gp\n",
                  comment_text(name));
  script += "set encoding utf8\n";
  script += r.body;
  script += fmt::format(
      "set terminal svg size {},{} dynamic noenhanced font 'sans,12' background '#ffffff'\n",
      r.width, r.height);
  script += fmt::format("set output {}\n", gp_string(name + ".svg"));
  script += r.plot;
  script += "set output\n";
  script += fmt::format(
      "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {{\n"
      "  set terminal pngcairo size {0},{1} noenhanced font 'sans,10' background '#ffffff'\n"
      "}} else {{\n"
      "  set terminal png size {0},{1} noenhanced background '#ffffff'\n"
      "}}\n",
      r.width, r.height);
  script += fmt::format("set output {}\n", gp_string(name + ".png"));
  script += "replot\nset output\n";
  return script;
}

// Runs gnuplot on DIR/NAME.gp in DIR; "" when both images came out, else why not.
std::string run_gnuplot(const fs::path& gnuplot, const fs::path& dir, const std::string& name,
                        const fs::path& stem) {
  const std::string cmd = fmt::format("cd {} && {} {} </dev/null 2>&1", shell_quote(dir.string()),
                                      shell_quote(gnuplot.string()), shell_quote(name + ".gp"));
  std::FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) return fmt::format("could not start {}", gnuplot.string());
  std::string output;
  char buf[4096];
  std::size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, pipe)) > 0) output.append(buf, got);
  const int status = ::pclose(pipe);
  const bool ok = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (output.size() > 2000) output = "..." + output.substr(output.size() - 2000);
  if (!ok) {
    return fmt::format("{} failed on {}.gp (status {}): {}", gnuplot.string(), stem.string(),
                       status, output);
  }
  const fs::path svg = dir / (name + ".svg"), png = dir / (name + ".png");
  std::error_code ec;
  const bool have_svg = fs::exists(svg, ec) && fs::file_size(svg, ec) > 0;
  const bool have_png = fs::exists(png, ec) && fs::file_size(png, ec) > 0;
  if (!have_svg || !have_png) {
    return fmt::format("{} ran but {} is missing or empty: {}", gnuplot.string(),
                       (have_svg ? png : svg).string(), output);
  }
  return "";
}

}  // namespace

PlotResult render_plot(const PlotSpec& spec, const fs::path& stem) {
  validate(spec, stem);
  const fs::path dir = stem.parent_path().empty() ? fs::path(".") : stem.parent_path();
  ensure_writable_dir(dir);
  const std::string name = stem.filename().string();
  const std::string dat = name + ".dat";
  const Rendered r = render_kind(spec, dat);
  write_file_atomic(
      dir / dat,
      fmt::format("# data for {}.gp: {}\n", comment_text(name), comment_text(spec.title)) + r.data);
  write_file_atomic(dir / (name + ".gp"), gnuplot_script(r, name));
  std::error_code ec;
  fs::remove(dir / (name + ".svg"), ec);  // never leave a stale image that looks freshly rendered
  fs::remove(dir / (name + ".png"), ec);

  PlotResult result;
  const fs::path gnuplot = find_gnuplot();
  if (gnuplot.empty()) {
    result.message = fmt::format(
        "gnuplot not found (PATH or $NNPERF_GNUPLOT); wrote {}.dat and {}.gp but no images. "
        "Install gnuplot-nox and run: cd {} && gnuplot {}.gp",
        stem.string(), stem.string(), dir.string(), name);
    return result;
  }
  result.message = run_gnuplot(gnuplot, dir, name, stem);
  result.rendered = result.message.empty();
  return result;
}

}  // namespace nnperf
