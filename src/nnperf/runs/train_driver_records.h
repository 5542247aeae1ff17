// <log-dir>/metrics_records.json, the fixed-iteration driver's record of <log-dir>/metrics.csv, in
// the shape of a merged training sweep's sweep_records.json:
//   {"context": {"kind": "train", "job": "train --iters", "columns": [the 22 columns]},
//    "records": [{column: the row's text, ..., "nnperf": {what else the run was}}, ...]}
// so that `nnperf report` rebuilds metrics.csv from it (runs/rerender.h) with the sweep's reporter.
// A row that another program (run_train.py shares the header) appended to metrics.csv is taken
// into the record after the rows it follows there, with "source": "metrics.csv" instead of
// "nnperf". The record keeps cells, not bytes: a rebuilt metrics.csv ends every row in "\n" (a
// row written with "\r\n" comes back with the same cells).
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace nnperf::driver_records {

inline constexpr const char* kFile = "metrics_records.json";

// The record in log_dir (an empty one when there is none), checked before the run trains so a
// file it could not add to costs no run: Error naming it and what was expected. metrics.csv, when
// it has anything, must have run_train.py's header exactly and rows that parse.
nlohmann::json load(const std::filesystem::path& log_dir, const std::vector<std::string>& columns);

struct AppendResult {
  // metrics.csv written whole from the record's earlier rows and this run's (rows: how many); false
  // for an appended row and for a new file holding this run's row alone.
  bool written_whole = false;
  int64_t rows = 0;
};
// Adds one run to both files, under an exclusive lock on log_dir (runs sharing it add their rows
// one at a time): the record is read again and takes in metrics.csv's rows it lacks
// (take_in in the .cc says where they go); then the row is appended to metrics.csv, which is
// written whole from the record when it is missing or has no whole rows; then the record is
// rewritten atomically. Rows deleted from metrics.csv stay in the record (the report rebuilds
// metrics.csv only when it is missing).
AppendResult append(const std::filesystem::path& log_dir, const std::vector<std::string>& columns,
                    const std::vector<std::string>& row, nlohmann::json nnperf);

// The record's rows as metrics.csv holds them (columns in order): what check() and append()
// compare and write.
std::vector<std::vector<std::string>> rows(const nlohmann::json& doc, const std::string& source);

}  // namespace nnperf::driver_records
