// CSV output: a header once, then whole rows, each flushed, so a killed run leaves a valid file.
// Fields are quoted (RFC 4180) only when they contain a comma, quote or newline.
#pragma once
#include <cstdio>
#include <filesystem>
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

// Parses a CSV file (for tests, resume and re-rendering): header + rows. Accepts quoted fields
// (with "" escapes and embedded newlines) and CRLF line ends; every row must have the header's
// field count. A missing file, an unterminated quote or a ragged row throws naming file and line.
struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  int column(const std::string& name) const;  // -1 when absent
};
CsvTable read_csv(const std::filesystem::path& path);

}  // namespace nnperf
