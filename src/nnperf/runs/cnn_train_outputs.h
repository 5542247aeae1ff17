// The reporter of CNN training runs: everything is rendered from records. One CnnEpochRecord at a
// time as epochs finish: training_metrics.csv, TensorBoard scalars, train_records.json ({context,
// records}, rewritten atomically, so it always holds every finished epoch) and the progress line;
// final_results.json at the end; the one-step profile's trace and per-layer CSV.
// render_cnn_train_csv rebuilds the CSV from a train_records.json document alone.
#pragma once
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "nnperf/io/csv.h"
#include "nnperf/io/tensorboard.h"
#include "nnperf/profile/step_recorder.h"
#include "nnperf/runs/cnn_train.h"
#include "nnperf/runs/progress.h"
#include "nnperf/runs/tensorboard_records.h"

namespace nnperf {

class Graph;

nlohmann::json cnn_epoch_json(const CnnEpochRecord& r);
CnnEpochRecord cnn_epoch_from_json(const nlohmann::json& j);  // throws on a missing field
void render_cnn_train_csv(const nlohmann::json& records_doc, const std::filesystem::path& dir);

// TensorBoard's scalars for one epoch record of a CNN run.
TensorBoardScalars cnn_tensorboard_scalars(const nlohmann::json& record, const nlohmann::json&);

class CnnTrainOutputs {
 public:
  CnnTrainOutputs(const std::filesystem::path& dir, nlohmann::json context, bool tensorboard,
                  int epochs, Progress& progress);
  ~CnnTrainOutputs();
  void add(const CnnEpochRecord& rec);
  void finish(const nlohmann::json& final_results);

 private:
  std::filesystem::path dir_;
  nlohmann::json doc_;
  int epochs_;
  Progress& progress_;
  CsvWriter metrics_;
  std::unique_ptr<TensorBoardWriter> tb_;
};

// One recorded step's spans as one_step.json keeps them, in end order:
// [{node (-1 for a step phase), name, kind, layer (the layer's describe(); absent for a phase),
//   fused_into (a ReLU whose work its producer did: that node's name; absent otherwise), phase,
//   begin_ns, end_ns}] with times from the step's first mark.
nlohmann::json one_step_spans(const Graph& graph, StepRecorder& rec);
// The per-phase milliseconds {forward, loss, backward, optimizer} of those spans.
nlohmann::json one_step_phases(const nlohmann::json& spans);
// one_step_trace.json (Chrome trace: one track for the step's phases, one for the layers; a
// layer's args are its `layer` and, for a fused ReLU, `fused_into`) and
// one_step_layers.csv (node, name, kind, phase, start_ms, ms, fused_into) in `dir`, rendered from a
// one_step.json document ({"spans", "context", ...}): what the run writes, and what `nnperf
// report` rebuilds when they are missing.
void render_one_step_profile(const nlohmann::json& doc, const std::filesystem::path& dir);

}  // namespace nnperf
