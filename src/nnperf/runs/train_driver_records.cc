// See train_driver_records.h.
#include "nnperf/runs/train_driver_records.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "nnperf/core/error.h"
#include "nnperf/io/csv.h"
#include "nnperf/io/files.h"
#include "nnperf/io/json_read.h"
#include "nnperf/io/run_info.h"

namespace nnperf::driver_records {

namespace fs = std::filesystem;

namespace {

using Rows = std::vector<std::vector<std::string>>;

nlohmann::json entry(const std::vector<std::string>& columns, const std::vector<std::string>& row) {
  nlohmann::json e = nlohmann::json::object();
  for (std::size_t i = 0; i < columns.size(); ++i) e[columns[i]] = row.at(i);
  return e;
}

// The record's entries with the metrics.csv rows they lack taken in. A row found among the
// entries (searching on from the last one found) is that entry. A row not found waits until the
// next one found, and goes in just before it, after the entries passed over on the way (rows since
// deleted from metrics.csv, which were written before it); rows not followed by one found go in
// after every entry.
nlohmann::json take_in(const nlohmann::json& entries, const Rows& have, const Rows& csv_rows,
                       const std::vector<std::string>& columns) {
  nlohmann::json out = nlohmann::json::array();
  std::vector<const std::vector<std::string>*> waiting;
  const auto flush_waiting = [&] {
    for (const auto* row : waiting) {
      nlohmann::json e = entry(columns, *row);
      e["source"] = "metrics.csv";
      out.push_back(std::move(e));
    }
    waiting.clear();
  };
  std::size_t next = 0;
  for (const auto& row : csv_rows) {
    const auto found = std::find(have.begin() + static_cast<std::ptrdiff_t>(next), have.end(), row);
    if (found == have.end()) {
      waiting.push_back(&row);
      continue;
    }
    const auto j = static_cast<std::size_t>(found - have.begin());
    for (; next < j; ++next) out.push_back(entries[next]);
    flush_waiting();
    out.push_back(entries[next++]);
  }
  for (; next < have.size(); ++next) out.push_back(entries[next]);
  flush_waiting();
  return out;
}

// An exclusive lock on the log folder (flock on the folder itself: no file left behind) for as
// long as it lives, so that runs sharing a --log-dir add their rows one at a time.
class FolderLock {
 public:
  explicit FolderLock(const fs::path& dir) : fd_(::open(dir.c_str(), O_RDONLY | O_DIRECTORY)) {
    if (fd_ < 0 || ::flock(fd_, LOCK_EX) != 0) {
      const int err = errno;
      if (fd_ >= 0) ::close(fd_);
      fail("{}: cannot lock the folder to add a row: {}", dir.string(),
           std::error_code(err, std::generic_category()).message());
    }
  }
  ~FolderLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_;
};

void check(const nlohmann::json& doc, const std::vector<std::string>& columns,
           const std::string& source) {
  const auto refuse = [&](const std::string& why) {
    fail("{}: not the training driver's record of metrics.csv ({}); give another --log-dir", source,
         why);
  };
  try {
    if (!doc.is_object() || !doc.contains("context") || !doc["context"].is_object()) {
      refuse("no context object");
    }
    const nlohmann::json& ctx = doc["context"];
    if (ctx.value("kind", std::string()) != "train" ||
        ctx.value("columns", nlohmann::json()) != nlohmann::json(columns)) {
      refuse("its context is not a training record with run_train.py's 22 columns");
    }
    if (!doc.contains("records") || !doc["records"].is_array()) refuse("no records array");
    (void)rows(doc, source);
  } catch (const nlohmann::json::exception& e) {
    refuse(e.what());
  }
}

}  // namespace

Rows rows(const nlohmann::json& doc, const std::string& source) {
  const std::vector<std::string> columns =
      doc.at("context").at("columns").get<std::vector<std::string>>();
  const nlohmann::json& entries = doc.at("records");
  Rows out;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const JsonPath where = JsonPath{source, "records"}.item(i);
    if (!entries[i].is_object()) fail("{}: expected an object", where.str());
    std::vector<std::string> row;
    for (const std::string& c : columns) row.push_back(json_string(entries[i], c, where));
    out.push_back(std::move(row));
  }
  return out;
}

namespace {

// The record alone (an empty one when there is none), checked.
nlohmann::json read_record(const fs::path& log_dir, const std::vector<std::string>& columns) {
  const fs::path file = log_dir / kFile;
  std::error_code ec;
  if (!fs::exists(file, ec)) {
    return {{"context", {{"kind", "train"}, {"job", "train --iters"}, {"columns", columns}}},
            {"records", nlohmann::json::array()}};
  }
  nlohmann::json doc = read_json(file);
  check(doc, columns, file.string());
  return doc;
}

}  // namespace

nlohmann::json load(const fs::path& log_dir, const std::vector<std::string>& columns) {
  // metrics.csv is appended to, never rewritten while it has rows: its header must be
  // run_train.py's exactly, and its rows (taken in after the run) must parse.
  const fs::path csv = log_dir / "metrics.csv";
  std::error_code ec;
  if (fs::exists(csv, ec) && fs::file_size(csv, ec) > 0) {
    const std::string text = read_file(csv);
    const std::string first = text.substr(0, text.find('\n'));
    std::string expected;
    for (const auto& c : columns) expected += (expected.empty() ? "" : ",") + c;
    if (first != expected) {
      fail(
          "{}: cannot append: its header is not run_train.py's 22 columns ({}); give another "
          "--log-dir",
          csv.string(), quote_input(first, 80));
    }
    (void)parse_csv(text, csv.string());
  }
  return read_record(log_dir, columns);
}

AppendResult append(const fs::path& log_dir, const std::vector<std::string>& columns,
                    const std::vector<std::string>& row, nlohmann::json nnperf) {
  const FolderLock lock(log_dir);
  // Read again under the lock: another run may have added its row since load().
  nlohmann::json doc = read_record(log_dir, columns);
  const fs::path csv = log_dir / "metrics.csv";
  const std::string source = (log_dir / kFile).string();
  Rows csv_rows;
  std::error_code ec;
  if (fs::exists(csv, ec) && fs::file_size(csv, ec) > 0) {
    (void)repair_truncated_csv(csv);  // a row cut by a killed run: dropped, and said so
    csv_rows = read_csv(csv).rows;
  }
  doc["records"] = take_in(doc["records"], rows(doc, source), csv_rows, columns);
  nlohmann::json e = entry(columns, row);
  e["nnperf"] = std::move(nnperf);
  doc["records"].push_back(std::move(e));
  AppendResult result;
  result.rows = static_cast<int64_t>(doc["records"].size());
  if (csv_rows.empty()) {
    std::string text = csv_line(columns);
    for (const auto& r : rows(doc, source)) text += csv_line(r);
    write_file_atomic(csv, text);
    result.written_whole = result.rows > 1;  // a first run's file is just new
  } else {
    CsvWriter(csv, columns, CsvWriter::Mode::kAppend).row(row);
  }
  write_json_atomic(log_dir / kFile, doc);
  return result;
}

}  // namespace nnperf::driver_records
