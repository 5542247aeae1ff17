// A training run's TensorBoard event file, kept as part of its train_records.json so that the
// report can rebuild it byte for byte: the context names the file and when it was opened
// ("tensorboard": {"file", "opened"}), each epoch record holds the "wall_time" its events carry,
// and the scalars are a function of the record (and the context) alone.
#pragma once
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "nnperf/io/tensorboard.h"

namespace nnperf {

using TensorBoardScalars = std::vector<std::pair<std::string, double>>;
// The (tag, value) pairs of one epoch record, in the order they are written.
using TensorBoardScalarsOf = TensorBoardScalars (*)(const nlohmann::json& record,
                                                    const nlohmann::json& context);

// Opens `<dir>/tensorboard/events.out.tfevents.*` and names it in context["tensorboard"].
std::unique_ptr<TensorBoardWriter> open_run_tensorboard(const std::filesystem::path& dir,
                                                        nlohmann::json& context);
// Stamps the record with the events' wall time (before the record is saved) ...
void stamp_tensorboard_time(nlohmann::json& record);
// ... and writes its scalars at step record["epoch"] with that time.
void write_tensorboard_epoch(TensorBoardWriter& tb, const nlohmann::json& record,
                             const nlohmann::json& context, TensorBoardScalarsOf scalars);

// The event file a train_records.json document names under `dir` (none when the run wrote none).
std::vector<std::filesystem::path> tensorboard_files(const std::filesystem::path& dir,
                                                     const nlohmann::json& doc);
// Writes that file into `<dir>/tensorboard` from the document's records.
void render_tensorboard(const nlohmann::json& doc, const std::filesystem::path& dir,
                        TensorBoardScalarsOf scalars);

}  // namespace nnperf
