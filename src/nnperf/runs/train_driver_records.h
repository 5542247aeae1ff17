// <log-dir>/metrics_records.json, the fixed-iteration driver's record of <log-dir>/metrics.csv, in
// the shape of a merged training sweep's sweep_records.json:
//   {"context": {"kind": "train", "job": "train --iters", "columns": [the 22 columns]},
//    "records": [{column: the row's text, ..., "nnperf": {what else the run was}}, ...]}
// so that `nnperf report` rebuilds metrics.csv from it (runs/rerender.h) with the sweep's reporter.
// A row that another program (run_train.py shares the header) appended to metrics.csv is taken
// into the record in its place, with "source": "metrics.csv" instead of "nnperf".
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace nnperf::driver_records {

inline constexpr const char* kFile = "metrics_records.json";

// The record in log_dir (an empty one when there is none), checked before the run trains so a
// file that is not this record costs no run: Error naming it and what was expected.
nlohmann::json load(const std::filesystem::path& log_dir, const std::vector<std::string>& columns);

// Adds one run to both files: the record first takes in metrics.csv's rows it lacks (in their
// place among its own); then the row is appended to metrics.csv, which is written whole from the
// record when it is missing or has no rows; then the record is rewritten atomically. Rows deleted
// from metrics.csv stay in the record (the report rebuilds metrics.csv only when it is missing).
void append(const std::filesystem::path& log_dir, nlohmann::json& doc,
            const std::vector<std::string>& row, nlohmann::json nnperf);

// The record's rows as metrics.csv holds them (columns in order), for tests and the reporter.
std::vector<std::vector<std::string>> rows(const nlohmann::json& doc, const std::string& source);

}  // namespace nnperf::driver_records
