// CSV output: a header once, then whole rows, each flushed, so a killed run leaves a valid file.
// Fields are quoted (RFC 4180) only when they contain a comma, quote or newline.
#pragma once
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

namespace nnperf {

class CsvWriter {
 public:
  // mode kTruncate starts a fresh file; kAppend keeps existing rows and writes the header only
  // when the file is new or empty (and checks that an existing header matches).
  enum class Mode { kTruncate, kAppend };
  CsvWriter(const std::filesystem::path& path, std::vector<std::string> header,
            Mode mode = Mode::kTruncate);
  ~CsvWriter();
  CsvWriter(const CsvWriter&) = delete;
  CsvWriter& operator=(const CsvWriter&) = delete;
  void row(const std::vector<std::string>& fields);  // throws if the field count differs
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::vector<std::string> header_;
  std::size_t columns_;
  std::FILE* file_ = nullptr;
};

// Formats a double compactly and round-trippably enough for reports ("%.6g" style, no locale):
// 0.1 -> "0.1", 3 -> "3", 1e-7 -> "1e-07", NaN -> "nan", infinities -> "inf" / "-inf".
// precision <= 0 gives the shortest text that reads back to exactly the same double.
std::string csv_number(double v, int precision = 6);
// Quotes one field per RFC 4180 only when it holds a comma, quote, CR or LF.
std::string csv_field(const std::string& field);
// One row: the fields quoted as needed, joined by commas, ended by '\n' (CsvWriter's lines).
std::string csv_line(const std::vector<std::string>& fields);

// Parses CSV text (for tests, resume and re-rendering): header + rows. Accepts quoted fields
// (with "" escapes and embedded newlines) and CRLF line ends; every row must have the header's
// field count. A last row without a newline at the end (a run killed while writing it, perhaps cut
// inside its last field) is not a row: it is kept aside in `truncated_row`. A cut header, an
// unexpected character after a quote or a ragged row throws naming the source and the line.
// Cells are read through the checked accessors, which name the source, line and column.
struct CsvTable {
  std::string source;  // the file (or name) for messages
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<int> row_lines;                // 1-based line of each row
  std::optional<std::string> truncated_row;  // the cut last row, when there was one
  int column(const std::string& name) const;  // -1 when absent
  // The column's index; throws "FILE: no column 'val_acc' (columns: ...)" when absent.
  std::size_t require(const std::string& name) const;
  const std::string& cell(std::size_t row, std::size_t col) const;
  // Locale-free numbers; "FILE:LINE: column 'x': expected a number, got 'abc'". NaN and infinities
  // are refused unless allowed. optional_number gives nullopt for an empty cell.
  double number(std::size_t row, std::size_t col, bool allow_nonfinite = false) const;
  std::optional<double> optional_number(std::size_t row, std::size_t col, bool allow_nonfinite = false) const;
  int64_t integer(std::size_t row, std::size_t col) const;
  int line(std::size_t row) const;
};
CsvTable parse_csv(std::string_view text, const std::string& source);
// read_file + parse_csv; warns (one line) when the last row was cut and is ignored.
CsvTable read_csv(const std::filesystem::path& path);
// The header alone, read from the first line without reading the rest of the file; Error when the
// file cannot be read or has no complete first line within max_bytes (a header with a quoted
// newline is not read this way).
std::vector<std::string> read_csv_header(const std::filesystem::path& path,
                                         std::size_t max_bytes = 64 * 1024);
// Drops a cut last row (a file not ending in a newline) by rewriting the file atomically, and
// says so on stderr. Returns whether it changed the file.
bool repair_truncated_csv(const std::filesystem::path& path);

}  // namespace nnperf
