// JSON Lines files (one compact JSON value per line) for records that grow as a job runs: a value
// is appended as its whole line, then fsync'd, so finishing the n-th record costs
// that record's bytes, not the n before it (a document rewritten whole costs O(n^2) bytes over a
// job). A crash while appending leaves at most a cut last line, which read_json_lines leaves out
// and reports. A file is begun (or replaced) atomically with write_json_lines_atomic; appends
// follow only a file so begun, never one whose last line may be cut.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

namespace nnperf {

// `values` as the file's lines, written atomically (io/files.h). A value holding a newline
// cannot occur: dump() escapes it.
void write_json_lines_atomic(const std::filesystem::path& path,
                             const std::vector<nlohmann::json>& values);
// One more line, appended whole (append_file_synced: then fsync'd); the file must exist.
void append_json_line(const std::filesystem::path& path, const nlohmann::json& value);

struct JsonLines {
  std::vector<nlohmann::json> values;  // each whole line, in order (blank lines skipped)
  // The file ended in a line without its newline, or in a last line that is not JSON (torn).
  bool cut_last = false;
};
// Every whole line parsed, but a cut last line (cut_last); an Error names the file and the line
// of an earlier line that is not JSON.
JsonLines read_json_lines(const std::filesystem::path& path);

}  // namespace nnperf
