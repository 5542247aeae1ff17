// CSV writing (whole rows, one fwrite + fflush each, so a killed run leaves only complete lines)
// and an RFC 4180 reader for tests, resume and re-rendering reports from saved files.
#include "nnperf/io/csv.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <fstream>
#include <system_error>

#include "nnperf/core/error.h"
#include "nnperf/io/files.h"

namespace nnperf {

namespace fs = std::filesystem;

namespace {

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

// One record parsed from `s` starting at `i`. `line` counts physical lines (for messages).
struct Record {
  std::vector<std::string> fields;
  int first_line = 0;
  bool blank = false;       // an empty physical line
  bool terminated = true;   // ended with a newline (false: the file ends inside this record)
  std::size_t begin = 0;    // offset of the record in the text
};

bool parse_record(std::string_view s, std::size_t& i, int& line, Record& rec,
                  const std::string& source) {
  const std::size_t n = s.size();
  if (i >= n) return false;
  rec.fields.clear();
  rec.first_line = line;
  rec.terminated = true;
  rec.begin = i;
  rec.blank = s[i] == '\n' || s[i] == '\r';
  std::string field;
  for (;;) {
    field.clear();
    if (i < n && s[i] == '"') {
      const int quote_line = line;
      ++i;
      for (;;) {
        if (i >= n) {  // the file ends inside a quoted field: a cut record
          (void)quote_line;
          rec.fields.push_back(field);
          rec.terminated = false;
          return true;
        }
        const char c = s[i];
        if (c == '"') {
          if (i + 1 < n && s[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        if (c == '\n') ++line;
        field += c;
        ++i;
      }
      if (i < n && s[i] != ',' && s[i] != '\n' && s[i] != '\r') {
        fail("{}:{}: unexpected character '{}' after a closing quote (expected , or end of line)",
             source, line, quote_input(s.substr(i, 1)));
      }
    } else {
      // Unquoted: a stray quote inside is kept literally (lenient, as most readers are).
      while (i < n && s[i] != ',' && s[i] != '\n' && s[i] != '\r') field += s[i++];
    }
    rec.fields.push_back(field);
    if (i >= n) {
      rec.terminated = false;
      return true;
    }
    if (s[i] == ',') {
      ++i;
      continue;
    }
    if (s[i] == '\r') ++i;
    if (i < n && s[i] == '\n') ++i;
    ++line;
    return true;
  }
}

}  // namespace

std::string csv_field(const std::string& field) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string csv_number(double v, int precision) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0.0) return "0";  // also for -0.0, which reads as noise in a report
  // fmt never consults the C locale unless asked ('L'), so "0.5" stays "0.5" under de_DE.
  if (precision <= 0) return fmt::format("{}", v);
  return fmt::format("{:.{}g}", v, precision);
}

CsvWriter::CsvWriter(const fs::path& path, std::vector<std::string> header, Mode mode)
    : path_(path), header_(std::move(header)), columns_(header_.size()) {
  if (columns_ == 0) fail("{}: a CSV file needs at least one column", path_.string());
  bool write_header = true;
  const bool add_newline = false;
  if (mode == Mode::kAppend) {
    // A row cut by a killed run is dropped first (and reported), so ours start on a whole line.
    repair_truncated_csv(path_);
    std::error_code ec;
    if (fs::exists(path_, ec) && fs::file_size(path_, ec) > 0 && !ec) {
      const std::string text = read_file(path_);
      std::size_t i = 0;
      int line = 1;
      Record first;
      parse_record(text, i, line, first, path_.string());
      if (first.fields != header_) {
        fail(
            "{}: cannot append: the existing header is\n  {}\nbut this run writes\n  {}\n"
            "(move the old file away or write to another folder)",
            path_.string(), fmt::join(first.fields, ","), fmt::join(header_, ","));
      }
      write_header = false;
    }
  }
  file_ = std::fopen(path_.c_str(), mode == Mode::kAppend ? "ab" : "wb");
  if (file_ == nullptr) {
    fail("{}: cannot open for writing: {}", path_.string(), errno_text(errno));
  }
  std::string first_write;
  if (add_newline) first_write += '\n';
  if (write_header) first_write += csv_line(header_);
  if (!first_write.empty()) {
    if (std::fwrite(first_write.data(), 1, first_write.size(), file_) != first_write.size() ||
        std::fflush(file_) != 0) {
      const int err = errno;
      std::fclose(file_);
      file_ = nullptr;
      fail("{}: cannot write the header: {}", path_.string(), errno_text(err));
    }
  }
}

CsvWriter::~CsvWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void CsvWriter::row(const std::vector<std::string>& fields) {
  if (fields.size() != columns_) {
    fail("{}: a row has {} fields but the header has {} ({})", path_.string(), fields.size(),
         columns_, fmt::join(header_, ","));
  }
  const std::string line = csv_line(fields);
  // One fwrite of the whole line, then a flush: a kill between rows never leaves half a row.
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
    fail("{}: cannot write a row: {}", path_.string(), errno_text(errno));
  }
}

int CsvTable::column(const std::string& name) const {
  for (std::size_t k = 0; k < header.size(); ++k) {
    if (header[k] == name) return static_cast<int>(k);
  }
  return -1;
}

std::size_t CsvTable::require(const std::string& name) const {
  const int c = column(name);
  if (c < 0) {
    std::string cols;
    for (const auto& h : header) cols += (cols.empty() ? "" : ",") + h;
    fail("{}: no column '{}' (columns: {})", source, quote_input(name), quote_input(cols));
  }
  return static_cast<std::size_t>(c);
}

const std::string& CsvTable::cell(std::size_t row, std::size_t col) const {
  if (row >= rows.size() || col >= header.size()) {
    fail("{}: no cell at row {} column {} ({} rows, {} columns)", source, row + 1, col + 1, rows.size(),
         header.size());
  }
  return rows[row][col];
}

std::optional<double> CsvTable::optional_number(std::size_t row, std::size_t col, bool allow_nonfinite) const {
  const std::string& t = cell(row, col);
  if (t.empty()) return std::nullopt;
  double v = 0;
  const char* b = t.data();
  const char* e = b + t.size();
  if (b != e && *b == '+') ++b;
  const auto [ptr, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || ptr != e) {
    fail("{}:{}: column '{}': expected a number, got '{}'", source, line(row), quote_input(header[col]), quote_input(t));
  }
  if (!allow_nonfinite && !std::isfinite(v)) {
    fail("{}:{}: column '{}': expected a finite number, got '{}'", source, line(row), quote_input(header[col]), quote_input(t));
  }
  return v;
}

double CsvTable::number(std::size_t row, std::size_t col, bool allow_nonfinite) const {
  const auto v = optional_number(row, col, allow_nonfinite);
  if (!v) fail("{}:{}: column '{}': expected a number, got an empty cell", source, line(row), quote_input(header[col]));
  return *v;
}

int64_t CsvTable::integer(std::size_t row, std::size_t col) const {
  const std::string& t = cell(row, col);
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || ptr != t.data() + t.size()) {
    fail("{}:{}: column '{}': expected an integer, got '{}'", source, line(row), quote_input(header[col]), quote_input(t));
  }
  return v;
}

int CsvTable::line(std::size_t row) const {
  return row < row_lines.size() ? row_lines[row] : 0;
}

CsvTable parse_csv(std::string_view text, const std::string& source) {
  std::size_t i = 0;
  if (text.starts_with("\xEF\xBB\xBF")) i = 3;  // UTF-8 byte-order mark from spreadsheets
  int line = 1;
  CsvTable table;
  table.source = source;
  Record rec;
  bool have_header = false;
  while (parse_record(text, i, line, rec, source)) {
    if (rec.blank && rec.terminated) continue;
    if (!have_header) {
      if (!rec.terminated) {
        fail("{}:{}: the header line is cut (no newline at the end): the file is incomplete", source,
             rec.first_line);
      }
      table.header = rec.fields;
      have_header = true;
      continue;
    }
    if (!rec.terminated) {  // the last row of a killed run, possibly cut inside its last field
      table.truncated_row = std::string(text.substr(rec.begin));
      break;
    }
    if (rec.fields.size() != table.header.size()) {
      fail("{}:{}: row has {} fields but the header has {}", source, rec.first_line, rec.fields.size(),
           table.header.size());
    }
    table.rows.push_back(std::move(rec.fields));
    table.row_lines.push_back(rec.first_line);
  }
  return table;
}

CsvTable read_csv(const fs::path& path) {
  CsvTable t = parse_csv(read_file(path), path.string());
  if (t.truncated_row) {
    warn("{}: the last row was cut (no newline at the end; a killed run?): ignoring '{}'", path.string(),
         quote_input(*t.truncated_row));
  }
  return t;
}

std::vector<std::string> read_csv_header(const fs::path& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open for reading", path.string()));
  std::string line;
  for (char c; line.size() < max_bytes && in.get(c);) {
    line += c;
    if (c == '\n') break;
  }
  if (in.bad()) throw Error(fmt::format("{}: read failed", path.string()));
  if (line.empty() || line.back() != '\n') {
    throw Error(fmt::format("{}: no header line in its first {} bytes", path.string(), max_bytes));
  }
  return parse_csv(line, path.string()).header;
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string line;
  for (std::size_t k = 0; k < fields.size(); ++k) {
    if (k > 0) line += ',';
    line += csv_field(fields[k]);
  }
  line += '\n';
  return line;
}

bool repair_truncated_csv(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec) || fs::file_size(path, ec) == 0) return false;
  const std::string text = read_file(path);
  if (text.back() == '\n') return false;
  const std::size_t last_nl = text.rfind('\n');
  const std::string kept = last_nl == std::string::npos ? std::string() : text.substr(0, last_nl + 1);
  write_file_atomic(path, kept);
  warn("{}: the last row was cut (no newline at the end; a killed run?): dropped '{}'", path.string(),
       quote_input(std::string_view(text).substr(kept.size())));
  return true;
}

}  // namespace nnperf
