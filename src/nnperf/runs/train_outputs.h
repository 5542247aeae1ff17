// The `train` job's reporter: every output of a run is rendered from its records. One
// EpochRecord at a time as the epochs finish (training_metrics.csv and activation_timings.csv in
// usra-survey MLP.py's layout, TensorBoard scalars, train_records.json rewritten atomically, the
// progress line), then final_results.json from the TrainRunResult. train_records.json holds
// {"context": {...}, "records": [one per epoch]}, so a run's tables can be rebuilt from it alone
// (render_train_csvs), also after a crash: it always holds every finished epoch.
#pragma once
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "nnperf/io/csv.h"
#include "nnperf/io/tensorboard.h"
#include "nnperf/runs/progress.h"
#include "nnperf/runs/tensorboard_records.h"
#include "nnperf/runs/train_run.h"

namespace nnperf {

nlohmann::json epoch_record_json(const EpochRecord& rec, bool has_validation);

// Writes training_metrics.csv and activation_timings.csv in `dir` from a train_records.json
// document (the same bytes the run wrote as it went).
void render_train_csvs(const nlohmann::json& records_doc, const std::filesystem::path& dir);

// TensorBoard's scalars for one epoch record of an MLP run (context: train_records.json's).
TensorBoardScalars train_tensorboard_scalars(const nlohmann::json& record,
                                             const nlohmann::json& context);

class TrainOutputs {
 public:
  // `context`: what the records depend on (model, data, options); stored in train_records.json.
  TrainOutputs(const std::filesystem::path& dir, nlohmann::json context, int activation_layers,
               bool has_validation, bool tensorboard, int epochs, Progress& progress);
  ~TrainOutputs();
  void add(const EpochRecord& rec);
  // final_results.json and the test line.
  void finish(const TrainRunResult& result, const nlohmann::json& final_results,
              int64_t test_samples);

 private:
  std::filesystem::path dir_;
  nlohmann::json doc_;
  bool has_val_;
  int epochs_;
  Progress& progress_;
  CsvWriter metrics_, timing_;
  std::unique_ptr<TensorBoardWriter> tb_;
};

}  // namespace nnperf
