// The profiler's reporter (`nnperf profile`): each input size's SizeRecord is kept as JSON in
// profile_records.json ({"context": {...}, "records": [one per size]}, rewritten atomically after
// each size, so it holds every finished size), and the two CSVs (ai3-8CuDNN's columns, then ours)
// and the per-size trace are rendered from that JSON. render_profile_outputs rebuilds them from a
// saved profile_records.json alone (`nnperf report` does when they are missing).
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nnperf/io/csv.h"
#include "nnperf/runs/profile_measure.h"

namespace nnperf::profile_sweep {

extern const std::vector<std::string> kOverallHeader;
extern const std::vector<std::string> kLayersHeader;

// What every row of a sweep shares: {"model", "algorithm", "batch_size", "threads", "layers",
// "input_channels", "stem"} (stem: the files' prefix, "<model>_<algorithm>").
nlohmann::json profile_context(const std::string& model, const std::string& algorithm,
                               int64_t batch_size, int threads, bool layers,
                               int64_t input_channels);
nlohmann::json size_record_json(const SizeRecord& r);

// One size's record into the overall CSV (a row) and the layers CSV (a row per layer: none
// without --layers), and with --layers its trace, <stem>_trace_<size>.json in `dir`.
void render_size(const nlohmann::json& context, const nlohmann::json& record, CsvWriter& overall,
                 CsvWriter& layers, const std::filesystem::path& dir);

// <stem>_overall.csv, <stem>_layers.csv (its header alone without --layers) and the traces in
// `dir`, written anew from a profile_records.json document.
void render_profile_outputs(const nlohmann::json& doc, const std::filesystem::path& dir);

}  // namespace nnperf::profile_sweep
