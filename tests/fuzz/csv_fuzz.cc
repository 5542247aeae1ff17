// libFuzzer target: CSV text through parse_csv and every checked accessor. Properties beyond "no
// crash, no UB, no hang": only nnperf::Error escapes, with one line starting with the source name;
// every row has the header's field count and a line number; a cut last row is never a row.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "nnperf/core/error.h"
#include "nnperf/io/csv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  nnperf::CsvTable t;
  try {
    t = nnperf::parse_csv(text, "fuzz.csv");
  } catch (const nnperf::Error& e) {
    nnperf::fuzz::check_error_message(e.what(), "fuzz.csv");
    return 0;
  }
  FUZZ_CHECK(t.rows.size() == t.row_lines.size(), "%zu rows but %zu line numbers", t.rows.size(),
             t.row_lines.size());
  if (!text.empty() && text.back() != '\n' && !t.header.empty() && !t.rows.empty()) {
    FUZZ_CHECK(t.truncated_row.has_value() || text.back() == '\r',
               "a file without a final newline kept its last row");
  }
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    FUZZ_CHECK(t.rows[r].size() == t.header.size(), "row %zu has %zu fields, header %zu", r,
               t.rows[r].size(), t.header.size());
    for (std::size_t c = 0; c < t.header.size(); ++c) {
      try {
        (void)t.optional_number(r, c);
      } catch (const nnperf::Error& e) {
        nnperf::fuzz::check_error_message(e.what(), "fuzz.csv:");
      }
      try {
        (void)t.integer(r, c);
      } catch (const nnperf::Error& e) {
        nnperf::fuzz::check_error_message(e.what(), "fuzz.csv:");
      }
    }
  }
  if (!t.header.empty()) {
    try {
      (void)t.require(t.header.front() + "x");
    } catch (const nnperf::Error& e) {
      nnperf::fuzz::check_error_message(e.what(), "fuzz.csv: no column");
    }
  }
  return 0;
}
