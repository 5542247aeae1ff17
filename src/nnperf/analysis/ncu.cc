// Nsight Compute CSV import. Three passes: read the records after ncu's preamble into launches
// (keyed by ID, keeping only the cells of the metrics used here, as text with their own unit);
// decide the file's number convention from those cells; then turn each launch's cells into
// FLOPs, bytes and time, each value scaled by the unit on its own row. The rules are written out
// in docs/ncu.md; every refusal names the file, the line and the metric.
#include "nnperf/analysis/ncu.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <system_error>
#include <unordered_map>
#include <utility>

#include "nnperf/analysis/ncu_internal.h"
#include "nnperf/core/error.h"

namespace nnperf {

namespace fs = std::filesystem;

namespace {

using ncu_detail::kMetricsHint;
using ncu_detail::kNaN;
using ncu_detail::ratio;
using ncu_detail::valid_utf8;

constexpr std::size_t kMaxWarnings = 20;
constexpr std::size_t kMaxPctMetrics = 64;

// ---- metric names ----

constexpr std::array<char, 3> kPrecisionLetters = {'f', 'd', 'h'};
constexpr std::array<const char*, 3> kPrecisionNames = {"fp32", "fp64", "fp16"};
constexpr std::array<const char*, 3> kOps = {"fma", "mul", "add"};
constexpr std::array<const char*, 2> kUnitPrefixes = {"sm__", "smsp__"};

std::string flop_metric(const char* unit_prefix, char precision, const char* op) {
  return fmt::format("{}sass_thread_inst_executed_op_{}{}_pred_on.sum", unit_prefix, precision, op);
}

const std::vector<std::string> kTensorMetrics = {"sm__inst_executed_pipe_tensor.sum",
                                                 "smsp__inst_executed_pipe_tensor.sum"};
const std::vector<std::string> kDramBytes = {"dram__bytes.sum"};
const std::vector<std::string> kDramRead = {"dram__bytes_read.sum"};
const std::vector<std::string> kDramWrite = {"dram__bytes_write.sum"};
const std::vector<std::string> kL2Bytes = {"lts__t_bytes.sum"};
const std::vector<std::string> kL1Bytes = {"l1tex__t_bytes.sum"};
// "Duration", "Compute (SM) Throughput", "DRAM Throughput": the SpeedOfLight section's names
// for the same metrics on a details page exported with --section.
const std::vector<std::string> kTime = {"gpu__time_duration.sum", "Duration"};
const std::vector<std::string> kCycles = {"sm__cycles_elapsed.avg"};
const std::vector<std::string> kCyclesPerSecond = {"sm__cycles_elapsed.avg.per_second"};
const std::vector<std::string> kSmPct = {"sm__throughput.avg.pct_of_peak_sustained_elapsed",
                                         "Compute (SM) Throughput"};
const std::vector<std::string> kDramPct = {"dram__throughput.avg.pct_of_peak_sustained_elapsed",
                                           "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                                           "DRAM Throughput"};

std::vector<std::string> flop_metrics() {
  std::vector<std::string> out;
  for (const char* u : kUnitPrefixes) {
    for (char p : kPrecisionLetters) {
      for (const char* op : kOps) out.push_back(flop_metric(u, p, op));
    }
  }
  return out;
}

// The counters a roofline needs: a file with none of them (and utilisation metrics) is
// utilisation-only.
const std::set<std::string, std::less<>>& counter_metrics() {
  static const std::set<std::string, std::less<>> names = [] {
    std::set<std::string, std::less<>> s;
    for (const std::string& m : flop_metrics()) s.insert(m);
    for (const auto* list :
         {&kTensorMetrics, &kDramBytes, &kDramRead, &kDramWrite, &kL2Bytes, &kL1Bytes}) {
      s.insert(list->begin(), list->end());
    }
    return s;
  }();
  return names;
}

const std::set<std::string, std::less<>>& used_metrics() {
  static const std::set<std::string, std::less<>> names = [] {
    std::set<std::string, std::less<>> s = counter_metrics();
    for (const auto* list : {&kTime, &kCycles, &kCyclesPerSecond, &kSmPct, &kDramPct}) {
      s.insert(list->begin(), list->end());
    }
    return s;
  }();
  return names;
}

// ---- text helpers ----

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_missing(std::string_view value) {
  const std::string v = lower(trim(value));
  return v.empty() || v == "n/a";
}

// ---- records ----

struct Row {
  std::vector<std::string> fields;
  int64_t line = 0;
};

// RFC 4180 records from `begin` on. Blank lines and ncu's own "==PROF==" / "==WARNING==" lines
// between records are skipped (and counted); a file that ends inside a quoted field is refused
// naming the line where the field opened.
class RecordReader {
 public:
  RecordReader(std::string_view text, std::size_t begin, int64_t line, const std::string& path)
      : s_(text), i_(begin), line_(line), path_(path) {}

  bool next(Row& row) {
    const std::size_t n = s_.size();
    for (;;) {
      if (i_ >= n) return false;
      const bool blank = s_[i_] == '\n' || s_[i_] == '\r';
      if (!blank && !s_.substr(i_).starts_with("==")) break;
      if (!blank) {
        if (skipped_ == 0) first_skipped_line_ = line_;
        ++skipped_;
      }
      const std::size_t end = s_.find('\n', i_);
      i_ = end == std::string_view::npos ? n : end + 1;
      ++line_;
    }
    row.fields.clear();
    row.line = line_;
    std::string field;
    for (;;) {
      field.clear();
      if (i_ < n && s_[i_] == '"') {
        const int64_t quote_line = line_;
        ++i_;
        for (;;) {
          if (i_ >= n) {
            fail("{}:{}: the file ends inside a quoted field (cut while it was written?)", path_,
                 quote_line);
          }
          const char c = s_[i_];
          if (c == '"') {
            if (i_ + 1 < n && s_[i_ + 1] == '"') {
              field += '"';
              i_ += 2;
              continue;
            }
            ++i_;
            break;
          }
          if (c == '\n') ++line_;
          field += c;
          ++i_;
        }
        if (i_ < n && s_[i_] != ',' && s_[i_] != '\n' && s_[i_] != '\r') {
          fail(
              "{}:{}: unexpected character '{}' after a closing quote (expected , or the end of "
              "the line)",
              path_, line_, quote_input(s_.substr(i_, 1)));
        }
      } else {
        while (i_ < n && s_[i_] != ',' && s_[i_] != '\n' && s_[i_] != '\r') field += s_[i_++];
      }
      row.fields.push_back(field);
      if (i_ >= n) return true;
      if (s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (s_[i_] == '\r') ++i_;
      if (i_ < n && s_[i_] == '\n') ++i_;
      ++line_;
      return true;
    }
  }

  int64_t skipped() const { return skipped_; }
  int64_t first_skipped_line() const { return first_skipped_line_; }

 private:
  std::string_view s_;
  std::size_t i_;
  int64_t line_;
  const std::string& path_;
  int64_t skipped_ = 0;
  int64_t first_skipped_line_ = 0;
};

// ---- launches as read ----

struct Cell {
  std::string value, unit;
  int64_t line = 0;
};

struct RawLaunch {
  std::string id, name, block, grid;
  int64_t line = 0;
  std::map<std::string, Cell, std::less<>> cells;  // used metrics only
};

struct Reading {
  std::vector<RawLaunch> launches;
  std::unordered_map<std::string, std::size_t> by_id;
  std::set<std::string> pct_metrics;
  std::vector<std::string> warnings;
  int64_t conflicting_duplicates = 0;
  int64_t first_conflict_line = 0;
  std::string first_conflict_metric;
};

bool is_pct_metric(std::string_view name, std::string_view unit) {
  return name.find("pct") != std::string_view::npos || trim(unit) == "%";
}

RawLaunch& launch_for(Reading& r, const std::string& path, const std::string& id,
                      const std::string& name, const std::string& block, const std::string& grid,
                      int64_t line, bool unique_rows) {
  if (id.empty()) fail("{}:{}: a row without an ID (ncu numbers every launch)", path, line);
  std::string key = valid_utf8(id);
  const auto it = r.by_id.find(key);
  if (it != r.by_id.end()) {
    RawLaunch& l = r.launches[it->second];
    if (unique_rows) {
      fail(
          "{}:{}: launch ID '{}' appears again (first on line {}); a launch is one row of the raw "
          "page",
          path, line, quote_input(id), l.line);
    }
    if (l.name != valid_utf8(name)) {
      fail(
          "{}:{}: launch ID '{}' is kernel '{}' here but '{}' on line {}; a launch is identified "
          "by its ID",
          path, line, quote_input(id), quote_input(name), quote_input(l.name), l.line);
    }
    return l;
  }
  r.by_id.emplace(key, r.launches.size());
  RawLaunch& l = r.launches.emplace_back();
  l.id = std::move(key);
  l.name = valid_utf8(name);
  l.block = valid_utf8(block);
  l.grid = valid_utf8(grid);
  l.line = line;
  return l;
}

void add_cell(Reading& r, RawLaunch& l, const std::string& metric, const std::string& unit,
              const std::string& value, int64_t line) {
  if (is_pct_metric(metric, unit) && r.pct_metrics.size() < kMaxPctMetrics) {
    r.pct_metrics.insert(valid_utf8(metric));
  }
  if (used_metrics().find(metric) == used_metrics().end()) return;
  const auto [it, inserted] = l.cells.try_emplace(metric, Cell{value, unit, line});
  if (!inserted && (trim(it->second.value) != trim(value) || trim(it->second.unit) != trim(unit))) {
    if (r.conflicting_duplicates++ == 0) {
      r.first_conflict_line = line;
      r.first_conflict_metric = metric;
    }
  }
}

int64_t column(const std::vector<std::string>& header, std::string_view name) {
  for (std::size_t c = 0; c < header.size(); ++c) {
    if (header[c] == name) return static_cast<int64_t>(c);
  }
  return -1;
}

std::string header_list(const std::vector<std::string>& header) {
  std::string out;
  for (std::size_t c = 0; c < header.size() && c < 16; ++c) {
    out += (c ? ", " : "") + quote_input(header[c], 40);
  }
  if (header.size() > 16) out += fmt::format(", ... ({} columns)", header.size());
  return out;
}

std::size_t require_column(const std::vector<std::string>& header, std::string_view name,
                           const std::string& path, int64_t line) {
  const int64_t c = column(header, name);
  if (c < 0) {
    fail("{}:{}: the header has no \"{}\" column (columns: {})", path, line, name,
         header_list(header));
  }
  return static_cast<std::size_t>(c);
}

std::string optional_field(const std::vector<std::string>& fields, int64_t col) {
  return col >= 0 && static_cast<std::size_t>(col) < fields.size() ? fields[col] : std::string();
}

void read_details(RecordReader& rd, const std::vector<std::string>& header, int64_t header_line,
                  const std::string& path, Reading& r) {
  const std::size_t id = 0;
  const std::size_t name = require_column(header, "Kernel Name", path, header_line);
  const std::size_t metric = require_column(header, "Metric Name", path, header_line);
  const std::size_t unit = require_column(header, "Metric Unit", path, header_line);
  const std::size_t value = require_column(header, "Metric Value", path, header_line);
  const int64_t block = column(header, "Block Size");
  const int64_t grid = column(header, "Grid Size");
  const std::size_t min_fields = std::max({id, name, metric, unit, value}) + 1;
  Row row;
  while (rd.next(row)) {
    const std::size_t n = row.fields.size();
    if (n < min_fields || n > header.size()) {
      fail(
          "{}:{}: a details row has {} fields; expected {} to {} (the header's columns, at least "
          "up to \"Metric Value\")",
          path, row.line, n, min_fields, header.size());
    }
    if (row.fields == header) {
      fail("{}:{}: a second header row: one ncu output per file, please", path, row.line);
    }
    const std::string& m = row.fields[metric];
    if (m.empty()) continue;  // a rule's row ("Rule Name", "Rule Description"), no metric
    RawLaunch& l =
        launch_for(r, path, row.fields[id], row.fields[name], optional_field(row.fields, block),
                   optional_field(row.fields, grid), row.line, false);
    add_cell(r, l, m, row.fields[unit], row.fields[value], row.line);
  }
}

void read_raw(RecordReader& rd, const std::vector<std::string>& header, int64_t header_line,
              const std::string& path, Reading& r) {
  const std::size_t name = require_column(header, "Kernel Name", path, header_line);
  const int64_t block = column(header, "Block Size");
  const int64_t grid = column(header, "Grid Size");
  std::vector<std::size_t> metric_columns;  // ncu metric names hold "__"
  for (std::size_t c = 0; c < header.size(); ++c) {
    if (header[c].find("__") != std::string::npos) metric_columns.push_back(c);
  }
  std::vector<std::string> units(header.size());
  bool first = true;
  Row row;
  while (rd.next(row)) {
    if (row.fields.size() != header.size()) {
      fail("{}:{}: a raw row has {} fields but the header has {}", path, row.line,
           row.fields.size(), header.size());
    }
    if (row.fields == header) {
      fail("{}:{}: a second header row: one ncu output per file, please", path, row.line);
    }
    if (first && row.fields[0].empty()) {  // the units row
      units = row.fields;
      first = false;
      continue;
    }
    first = false;
    RawLaunch& l =
        launch_for(r, path, row.fields[0], row.fields[name], optional_field(row.fields, block),
                   optional_field(row.fields, grid), row.line, true);
    for (std::size_t c : metric_columns)
      add_cell(r, l, header[c], units[c], row.fields[c], row.line);
  }
}

// ---- numbers ----

enum class Evidence { kNone, kPointDecimal, kCommaDecimal };

// What one value says about the convention: a value with both separators, or a separator that
// cannot be a thousands separator ("12,5", "1234.5", "0.125"), or one used twice, decides; a
// single separator followed by exactly three digits ("1,234") does not.
Evidence classify(std::string_view v) {
  v = trim(v);
  if (!v.empty() && (v.front() == '+' || v.front() == '-')) v.remove_prefix(1);
  const std::size_t e = v.find_first_of("eE");
  if (e != std::string_view::npos) v = v.substr(0, e);
  if (v.empty() || !is_digit(v.front())) return Evidence::kNone;
  for (char c : v) {
    if (!is_digit(c) && c != ',' && c != '.') return Evidence::kNone;
  }
  const std::size_t commas = std::count(v.begin(), v.end(), ',');
  const std::size_t dots = std::count(v.begin(), v.end(), '.');
  if (commas == 0 && dots == 0) return Evidence::kNone;
  if (commas > 0 && dots > 0) {
    return v.rfind('.') > v.rfind(',') ? Evidence::kPointDecimal : Evidence::kCommaDecimal;
  }
  const char sep = commas > 0 ? ',' : '.';
  const Evidence as_decimal = sep == '.' ? Evidence::kPointDecimal : Evidence::kCommaDecimal;
  const Evidence as_group = sep == '.' ? Evidence::kCommaDecimal : Evidence::kPointDecimal;
  if (commas + dots > 1) return as_group;
  const std::size_t p = v.find(sep);
  const std::string_view int_part = v.substr(0, p);
  const std::size_t after = v.size() - p - 1;
  if (after != 3 || int_part.size() > 3 || int_part.front() == '0') return as_decimal;
  return Evidence::kNone;
}

// A number in the file's convention as plain decimal text and a power of ten, so a unit's prefix
// is applied exactly ("12.58" Mbyte is 12580000 bytes, not 12580000.000000002).
struct Decimal {
  std::string mantissa;  // "-1234.5": sign, digits, optional point and fraction
  long exponent = 0;
};

// Optional sign, digits with optional thousands separators in groups of three, optional decimal
// part, optional exponent. nullopt when the text is not such a number.
std::optional<Decimal> parse_decimal(std::string_view v, bool point_decimal) {
  v = trim(v);
  const char group = point_decimal ? ',' : '.';
  const char decimal = point_decimal ? '.' : ',';
  Decimal d;
  std::string& plain = d.mantissa;
  std::size_t i = 0;
  const std::size_t n = v.size();
  if (i < n && (v[i] == '+' || v[i] == '-')) {
    if (v[i] == '-') plain += '-';
    ++i;
  }
  std::size_t digits = 0, in_group = 0;
  bool grouped = false;
  while (i < n) {
    if (is_digit(v[i])) {
      plain += v[i++];
      ++digits;
      ++in_group;
    } else if (v[i] == group) {
      if (grouped ? in_group != 3 : (in_group < 1 || in_group > 3)) return std::nullopt;
      grouped = true;
      in_group = 0;
      ++i;
    } else {
      break;
    }
  }
  if (digits == 0 || (grouped && in_group != 3)) return std::nullopt;
  if (i < n && v[i] == decimal) {
    plain += '.';
    ++i;
    std::size_t frac = 0;
    while (i < n && is_digit(v[i])) {
      plain += v[i++];
      ++frac;
    }
    if (frac == 0) return std::nullopt;
  }
  if (i < n && (v[i] == 'e' || v[i] == 'E')) {
    ++i;
    const bool negative = i < n && v[i] == '-';
    if (i < n && (v[i] == '+' || v[i] == '-')) ++i;
    std::size_t exp_digits = 0;
    constexpr long kExponentCap = 100000;  // far outside double's range either way
    while (i < n && is_digit(v[i])) {
      d.exponent = std::min(kExponentCap, d.exponent * 10 + (v[i++] - '0'));
      ++exp_digits;
    }
    if (exp_digits == 0) return std::nullopt;
    if (negative) d.exponent = -d.exponent;
  }
  if (i != n) return std::nullopt;
  return d;
}

// d x 10^scale_exponent; nullopt when outside double's finite range.
std::optional<double> to_double(const Decimal& d, int scale_exponent) {
  const std::string text = fmt::format("{}e{}", d.mantissa, d.exponent + scale_exponent);
  double out = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (ptr != text.data() + text.size() || !std::isfinite(out)) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {
    // Underflow rounds to zero (a count of 1e-400 is zero); overflow is out of range.
    const bool tiny = d.exponent + scale_exponent < 0;
    return tiny ? std::optional<double>(0.0) : std::nullopt;
  }
  if (ec != std::errc()) return std::nullopt;
  return out;
}

// ---- units ----

enum class Kind { kCount, kBytes, kTime, kFrequency, kPercent };

const char* expected_units(Kind kind) {
  switch (kind) {
    case Kind::kCount:
      return "inst, cycle or none, with an optional K/M/G/T prefix";
    case Kind::kBytes:
      return "byte, Kbyte, Mbyte, Gbyte, Tbyte (decimal prefixes)";
    case Kind::kTime:
      return "nsecond, usecond, msecond, second, ns, us, ms, s";
    case Kind::kFrequency:
      return "hz, Khz, Mhz, Ghz, cycle/nsecond, cycle/usecond, cycle/msecond, cycle/second";
    case Kind::kPercent:
      return "% or none";
  }
  return "";
}

std::optional<int> decimal_prefix(std::string_view p) {
  if (p.empty()) return 0;
  if (p == "k") return 3;
  if (p == "m") return 6;
  if (p == "g") return 9;
  if (p == "t") return 12;
  if (p == "p") return 15;
  return std::nullopt;
}

// The factor to the base unit (count, byte, second, 1/second, percent) as a power of ten;
// nullopt when the unit is unknown.
std::optional<int> unit_scale(std::string_view unit_text, Kind kind) {
  const std::string u = lower(trim(unit_text));
  const std::string_view v(u);
  switch (kind) {
    case Kind::kBytes:
      for (std::string_view base : {"bytes", "byte", "b"}) {
        if (v.ends_with(base)) return decimal_prefix(v.substr(0, v.size() - base.size()));
      }
      return std::nullopt;
    case Kind::kCount:
      if (v.empty()) return 0;
      for (std::string_view base : {"inst", "cycle", "warp", "thread"}) {
        if (v.ends_with(base)) {
          const std::string_view p = v.substr(0, v.size() - base.size());
          return p == "p" ? std::nullopt : decimal_prefix(p);
        }
      }
      return std::nullopt;
    case Kind::kTime: {
      static const std::map<std::string_view, int> kUnits = {
          {"nsecond", -9}, {"ns", -9}, {"usecond", -6}, {"us", -6},
          {"msecond", -3}, {"ms", -3}, {"second", 0},   {"s", 0}};
      const auto it = kUnits.find(v);
      return it == kUnits.end() ? std::nullopt : std::optional<int>(it->second);
    }
    case Kind::kFrequency: {
      static const std::map<std::string_view, int> kUnits = {{"hz", 0},
                                                             {"khz", 3},
                                                             {"mhz", 6},
                                                             {"ghz", 9},
                                                             {"cycle/second", 0},
                                                             {"cycle/s", 0},
                                                             {"cycle/msecond", 3},
                                                             {"cycle/ms", 3},
                                                             {"cycle/usecond", 6},
                                                             {"cycle/us", 6},
                                                             {"cycle/nsecond", 9},
                                                             {"cycle/ns", 9}};
      const auto it = kUnits.find(v);
      return it == kUnits.end() ? std::nullopt : std::optional<int>(it->second);
    }
    case Kind::kPercent:
      if (v.empty() || v == "%" || v == "pct") return 0;
      return std::nullopt;
  }
  return std::nullopt;
}

std::string convention_name(bool point_decimal) {
  return point_decimal ? "1,234,567.89" : "1.234.567,89";
}

// ---- values of one launch ----

struct Got {
  bool present = false;  // the metric has a cell for this launch
  double v = kNaN;       // NaN: n/a (or empty)
  std::string metric;    // the name that was used
};

class LaunchValues {
 public:
  LaunchValues(const RawLaunch& l, const std::string& path, bool point_decimal,
               std::vector<std::string>& flags)
      : l_(l), path_(path), point_decimal_(point_decimal), flags_(flags) {}

  // The first of `names` with a value, else the first present (n/a, flagged), else absent.
  Got get(const std::vector<std::string>& names, Kind kind) {
    Got missing;
    for (const std::string& name : names) {
      const auto it = l_.cells.find(name);
      if (it == l_.cells.end()) continue;
      Got g = value(name, it->second, kind);
      if (!std::isnan(g.v)) return g;
      if (!missing.present) missing = g;
    }
    if (missing.present) flags_.push_back("n/a:" + missing.metric);
    return missing;
  }

 private:
  Got value(const std::string& name, const Cell& cell, Kind kind) const {
    Got g;
    g.present = true;
    g.metric = name;
    if (is_missing(cell.value)) return g;
    const std::optional<Decimal> d = parse_decimal(cell.value, point_decimal_);
    if (!d) {
      fail("{}:{}: metric {}: expected a number, got '{}' (numbers in this file read as {})", path_,
           cell.line, name, quote_input(cell.value), convention_name(point_decimal_));
    }
    const std::optional<int> scale = unit_scale(cell.unit, kind);
    if (!scale) {
      fail("{}:{}: metric {}: unit '{}' is not understood (expected {})", path_, cell.line, name,
           quote_input(cell.unit), expected_units(kind));
    }
    const std::optional<double> v = to_double(*d, *scale);
    if (!v) {
      fail("{}:{}: metric {}: '{}' {} is out of range", path_, cell.line, name,
           quote_input(cell.value), quote_input(cell.unit));
    }
    if (*v < 0) {
      fail("{}:{}: metric {}: expected a non-negative number, got '{}'", path_, cell.line, name,
           quote_input(cell.value));
    }
    g.v = *v;
    return g;
  }

  const RawLaunch& l_;
  const std::string& path_;
  bool point_decimal_;
  std::vector<std::string>& flags_;
};

// Time from gpu__time_duration, else cycles / rate (flagged); false when neither is there.
bool launch_time(LaunchValues& values, NcuLaunch& l) {
  if (Got t = values.get(kTime, Kind::kTime); t.present) {
    l.time_s = t.v;
    return true;
  }
  const Got cycles = values.get(kCycles, Kind::kCount);
  const Got rate = values.get(kCyclesPerSecond, Kind::kFrequency);
  if (!cycles.present || !rate.present) return false;
  l.time_s = ratio(cycles.v, rate.v);
  l.flags.push_back("time_from_cycles");
  return true;
}

// FLOPs per precision (2 * fma + mul + add thread instructions) and the tensor-pipe flags.
void launch_flops(LaunchValues& values, NcuLaunch& l) {
  std::array<double*, 3> per_precision = {&l.flops_fp32, &l.flops_fp64, &l.flops_fp16};
  double total = 0;
  bool any = false;
  for (std::size_t p = 0; p < kPrecisionLetters.size(); ++p) {
    std::array<double, 3> counts{};
    bool complete = true;
    for (std::size_t op = 0; op < kOps.size(); ++op) {
      std::vector<std::string> names;
      for (const char* u : kUnitPrefixes)
        names.push_back(flop_metric(u, kPrecisionLetters[p], kOps[op]));
      const Got g = values.get(names, Kind::kCount);
      counts[op] = g.v;
      complete = complete && g.present && !std::isnan(g.v);
    }
    if (complete) {
      *per_precision[p] = 2 * counts[0] + counts[1] + counts[2];
      total += *per_precision[p];
      any = true;
    } else {
      l.flags.push_back(fmt::format("{}_flops_missing", kPrecisionNames[p]));
    }
  }
  l.flops = any ? total : kNaN;
  if (l.flops_fp16 > 0) l.flags.push_back("fp16_half2_may_be_undercounted");
  const Got tensor = values.get(kTensorMetrics, Kind::kCount);
  l.tensor_inst = tensor.v;
  if (!tensor.present || std::isnan(tensor.v)) {
    l.flags.push_back("tensor_pipe_not_measured");
  } else if (tensor.v > 0) {
    l.flags.push_back("tensor_pipe_not_counted");
  }
}

// DRAM bytes from dram__bytes, else read + write (flagged); refused, naming where() (built only
// then), when neither is there.
template <typename Where>
void launch_dram(LaunchValues& values, NcuLaunch& l, const Where& where) {
  if (Got d = values.get(kDramBytes, Kind::kBytes); d.present) {
    l.dram_bytes = d.v;
    return;
  }
  const Got rd = values.get(kDramRead, Kind::kBytes);
  const Got wr = values.get(kDramWrite, Kind::kBytes);
  if (!rd.present || !wr.present) {
    fail(
        "{}: no DRAM-bytes metric: dram__bytes.sum, or dram__bytes_read.sum and "
        "dram__bytes_write.sum{}; {}",
        where(),
        rd.present ? " (dram__bytes_write.sum is absent)"
                   : (wr.present ? " (dram__bytes_read.sum is absent)" : ""),
        kMetricsHint);
  }
  l.dram_bytes = rd.v + wr.v;
  l.flags.push_back("dram_bytes_from_read_write");
}

NcuLaunch compute_launch(const RawLaunch& raw, const std::string& path, bool point_decimal,
                         bool utilisation_only) {
  NcuLaunch l;
  l.id = raw.id;
  l.name = raw.name;
  l.block = raw.block;
  l.grid = raw.grid;
  l.line = raw.line;
  LaunchValues values(raw, path, point_decimal, l.flags);
  const auto where = [&] {
    return fmt::format("{}:{}: launch ID '{}' (kernel '{}')", path, raw.line, quote_input(raw.id),
                       quote_input(raw.name, 60));
  };
  // Time on every launch (it weights the utilisation summary too); required below.
  const bool has_time = launch_time(values, l);
  l.sm_throughput_pct = values.get(kSmPct, Kind::kPercent).v;
  l.dram_throughput_pct = values.get(kDramPct, Kind::kPercent).v;
  if (utilisation_only) {
    std::sort(l.flags.begin(), l.flags.end());
    return l;
  }
  launch_flops(values, l);
  launch_dram(values, l, where);
  if (!has_time) {
    fail(
        "{}: no time metric: gpu__time_duration.sum, or sm__cycles_elapsed.avg and "
        "sm__cycles_elapsed.avg.per_second; {}",
        where(), kMetricsHint);
  }
  l.l2_bytes = values.get(kL2Bytes, Kind::kBytes).v;
  l.l1_bytes = values.get(kL1Bytes, Kind::kBytes).v;
  if (l.dram_bytes == 0) l.flags.push_back("dram_bytes_zero");
  if (l.time_s == 0) l.flags.push_back("time_zero");
  l.ai_dram = ratio(l.flops, l.dram_bytes);
  l.ai_l2 = ratio(l.flops, l.l2_bytes);
  l.ai_l1 = ratio(l.flops, l.l1_bytes);
  l.gflops = ratio(l.flops, l.time_s) / 1e9;
  l.dram_gbs = ratio(l.dram_bytes, l.time_s) / 1e9;
  std::sort(l.flags.begin(), l.flags.end());
  l.flags.erase(std::unique(l.flags.begin(), l.flags.end()), l.flags.end());
  return l;
}

// ---- the header ----

// The offset of the first line that starts with "ID", and its 1-based line number.
std::optional<std::pair<std::size_t, int64_t>> find_header(std::string_view text) {
  std::size_t pos = 0;
  int64_t line = 1;
  if (text.starts_with("\xEF\xBB\xBF")) pos = 3;  // a UTF-8 byte-order mark
  while (pos < text.size()) {
    if (text.substr(pos).starts_with("\"ID\",")) return std::make_pair(pos, line);
    const std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) break;
    pos = end + 1;
    ++line;
  }
  return std::nullopt;
}

// What ncu said before giving up, for the "no header" message: its last ==ERROR== line, else its
// last ==PROF== / ==WARNING== line.
std::string last_ncu_message(std::string_view text) {
  std::string_view error, other;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.starts_with("==ERROR==")) {
      error = line;
    } else if (line.starts_with("==PROF==") || line.starts_with("==WARNING==")) {
      other = line;
    }
    pos = end + 1;
  }
  const std::string_view said = error.empty() ? other : error;
  return said.empty() ? std::string() : fmt::format("; ncu said '{}'", quote_input(said));
}

void add_warning(NcuImport& imp, std::string text) {
  if (imp.warnings.size() < kMaxWarnings) imp.warnings.push_back(std::move(text));
}

}  // namespace

namespace ncu_detail {

// Invalid UTF-8 (a name cut mid-character, a legacy encoding) becomes U+FFFD, so the JSON of an
// import always serialises; valid text is kept byte for byte.
std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t len = c < 0x80           ? 1
                            : (c >> 5) == 0x6  ? 2
                            : (c >> 4) == 0xE  ? 3
                            : (c >> 3) == 0x1E ? 4
                                               : 0;
    bool ok = len > 0 && i + len <= s.size();
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (std::size_t k = 1; ok && k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      ok = (b & 0xC0) == 0x80;
      cp = (cp << 6) | (b & 0x3F);
    }
    if (ok && len > 1) {
      const uint32_t min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
      ok = cp >= min && cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF);
    }
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

double ratio(double num, double den) { return den > 0 ? num / den : kNaN; }

}  // namespace ncu_detail

namespace {

// The first cell (by line) of each kind of evidence for the number convention.
struct ConventionEvidence {
  int64_t point_line = 0, comma_line = 0, ambiguous_line = 0;
  std::string point_text, comma_text, ambiguous_text;
};

ConventionEvidence convention_evidence(const Reading& r) {
  ConventionEvidence ev;
  for (const RawLaunch& l : r.launches) {
    for (const auto& [metric, cell] : l.cells) {
      const Evidence e = classify(cell.value);
      if (e == Evidence::kPointDecimal && (ev.point_line == 0 || cell.line < ev.point_line)) {
        ev.point_line = cell.line;
        ev.point_text = cell.value;
      } else if (e == Evidence::kCommaDecimal &&
                 (ev.comma_line == 0 || cell.line < ev.comma_line)) {
        ev.comma_line = cell.line;
        ev.comma_text = cell.value;
      } else if (e == Evidence::kNone && cell.value.find_first_of(",.") != std::string::npos &&
                 (ev.ambiguous_line == 0 || cell.line < ev.ambiguous_line)) {
        ev.ambiguous_line = cell.line;
        ev.ambiguous_text = cell.value;
      }
    }
  }
  return ev;
}

// The file's number convention from the cells that will be read (both conventions in one file
// are refused); returns whether the decimal separator is a point.
bool decide_convention(const Reading& r, const std::string& path, NcuImport& imp) {
  const ConventionEvidence ev = convention_evidence(r);
  if (ev.point_line > 0 && ev.comma_line > 0) {
    const bool point_first = ev.point_line < ev.comma_line;
    fail("{}:{}: '{}' reads as {} but '{}' on line {} reads as {}: one number convention per file",
         path, std::max(ev.point_line, ev.comma_line),
         quote_input(point_first ? ev.comma_text : ev.point_text, 40),
         convention_name(!point_first),
         quote_input(point_first ? ev.point_text : ev.comma_text, 40),
         std::min(ev.point_line, ev.comma_line), convention_name(point_first));
  }
  const bool point_decimal = ev.comma_line == 0;
  imp.number_convention = convention_name(point_decimal);
  if (ev.point_line > 0 || ev.comma_line > 0) {
    imp.number_convention_source =
        fmt::format("line {}: '{}'", point_decimal ? ev.point_line : ev.comma_line,
                    quote_input(point_decimal ? ev.point_text : ev.comma_text, 40));
  } else {
    imp.number_convention_source =
        "assumed (ncu's default): no value in the file tells the conventions apart";
    if (ev.ambiguous_line > 0) {
      add_warning(imp,
                  fmt::format("{}:{}: '{}' and values like it read as {} (no value in the file "
                              "tells the two number conventions apart)",
                              path, ev.ambiguous_line, quote_input(ev.ambiguous_text, 40),
                              imp.number_convention));
    }
  }
  return point_decimal;
}

// Utilisation-only: percentages but no FLOP or byte counter in any launch.
void classify_metrics(const Reading& r, NcuImport& imp) {
  bool has_counter = false;
  for (const RawLaunch& l : r.launches) {
    for (const auto& [metric, cell] : l.cells) {
      has_counter = has_counter || counter_metrics().count(metric) > 0;
    }
  }
  imp.pct_metrics.assign(r.pct_metrics.begin(), r.pct_metrics.end());
  imp.utilisation_only = !has_counter && !r.pct_metrics.empty();
}

// A precision whose FLOP counters are only partly in the file (ffma without fmul and fadd, say):
// its FLOPs (2 fma + mul + add) cannot be computed, so every launch's are missing; named here once.
void flop_counter_warnings(const Reading& r, const std::string& path, NcuImport& imp) {
  std::set<std::string, std::less<>> seen;
  for (const RawLaunch& l : r.launches) {
    for (const auto& [metric, cell] : l.cells) seen.insert(metric);
  }
  for (std::size_t p = 0; p < kPrecisionLetters.size(); ++p) {
    std::vector<std::string> have, lack;
    for (const char* op : kOps) {
      std::string found;
      for (const char* u : kUnitPrefixes) {
        if (seen.count(flop_metric(u, kPrecisionLetters[p], op)) > 0) found = flop_metric(u, kPrecisionLetters[p], op);
      }
      if (found.empty()) {
        lack.push_back(flop_metric(kUnitPrefixes[0], kPrecisionLetters[p], op));
      } else {
        have.push_back(found);
      }
    }
    if (have.empty() || lack.empty()) continue;
    add_warning(imp, fmt::format("{}: {} FLOPs are 2 fma + mul + add thread instructions; the file "
                                 "has {} but not {}, so no launch has {} FLOPs ({})",
                                 path, kPrecisionNames[p], fmt::join(have, ", "),
                                 fmt::join(lack, ", "), kPrecisionNames[p], kMetricsHint));
  }
}

void reading_warnings(const RecordReader& rd, const Reading& r, const std::string& path,
                      NcuImport& imp) {
  flop_counter_warnings(r, path, imp);
  if (rd.skipped() > 0) {
    add_warning(imp, fmt::format("{}:{}: {} line(s) of ncu's own output (==PROF==, ==WARNING==) "
                                 "after the header were skipped",
                                 path, rd.first_skipped_line(), rd.skipped()));
  }
  if (r.conflicting_duplicates > 0) {
    add_warning(imp,
                fmt::format("{}:{}: metric {} appears twice for one launch with different "
                            "values; the first is used ({} such rows)",
                            path, r.first_conflict_line, quote_input(r.first_conflict_metric, 60),
                            r.conflicting_duplicates));
  }
}

void compute_launches(const Reading& r, const std::string& path, bool point_decimal,
                      NcuImport& imp) {
  imp.launches.reserve(r.launches.size());
  int na_launches = 0;
  for (const RawLaunch& raw : r.launches) {
    imp.launches.push_back(compute_launch(raw, path, point_decimal, imp.utilisation_only));
    const auto& flags = imp.launches.back().flags;
    if (std::any_of(flags.begin(), flags.end(),
                    [](const std::string& f) { return f.starts_with("n/a:"); })) {
      ++na_launches;
    }
  }
  if (na_launches > 0) {
    add_warning(imp, fmt::format("{}: {} launch(es) have n/a values; what depends on them is null",
                                 path, na_launches));
  }
}

}  // namespace

NcuImport parse_ncu_csv(std::string_view text, const std::string& path) {
  if (text.size() > kNcuMaxFileBytes) {
    fail(
        "{}: {} bytes; ncu CSV files are read up to 2 GiB (profile fewer launches with ncu's "
        "--kernel-name or --launch-count)",
        path, text.size());
  }
  const auto header_at = find_header(text);
  if (!header_at) {
    if (trim(text).empty()) fail("{}: the file is empty; expected ncu --csv output", path);
    fail(
        "{}: no ncu CSV header (a line starting with \"ID\",){}; run ncu with --csv (see "
        "docs/ncu.md)",
        path, last_ncu_message(text));
  }
  NcuImport imp;
  imp.path = path;
  RecordReader rd(text, header_at->first, header_at->second, path);
  Row header;
  rd.next(header);
  const bool details = column(header.fields, "Metric Name") >= 0;
  imp.layout = details ? "details" : "raw";
  Reading r;
  if (details) {
    read_details(rd, header.fields, header.line, path, r);
  } else {
    read_raw(rd, header.fields, header.line, path, r);
  }
  if (r.launches.empty()) fail("{}:{}: a header but no kernel launch after it", path, header.line);
  const bool point_decimal = decide_convention(r, path, imp);
  classify_metrics(r, imp);
  reading_warnings(rd, r, path, imp);
  compute_launches(r, path, point_decimal, imp);
  return imp;
}

NcuImport read_ncu_csv(const fs::path& path) {
  const std::string name = path.string();
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(path, ec);
  if (!ec && size > kNcuMaxFileBytes) {
    fail(
        "{}: {} bytes; ncu CSV files are read up to 2 GiB (profile fewer launches with ncu's "
        "--kernel-name or --launch-count)",
        name, size);
  }
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    fail("{}: cannot open for reading: {}", name,
         std::error_code(errno, std::generic_category()).message());
  }
  // Read at most one byte past the cap, so a growing file or a pipe cannot exhaust memory.
  std::string text;
  if (!ec && size > 0) text.reserve(static_cast<std::size_t>(size));
  char buf[1 << 16];
  std::size_t n = 0;
  while (text.size() <= kNcuMaxFileBytes && (n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    text.append(buf, n);
  }
  const bool bad = std::ferror(f) != 0;
  const int err = errno;
  std::fclose(f);
  if (bad) {
    fail("{}: read error: {}", name, std::error_code(err, std::generic_category()).message());
  }
  return parse_ncu_csv(text, name);
}

}  // namespace nnperf
