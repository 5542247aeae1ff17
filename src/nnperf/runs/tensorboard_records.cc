// See tensorboard_records.h.
#include "nnperf/runs/tensorboard_records.h"

namespace nnperf {

namespace fs = std::filesystem;

std::unique_ptr<TensorBoardWriter> open_run_tensorboard(const fs::path& dir,
                                                        nlohmann::json& context) {
  auto tb = std::make_unique<TensorBoardWriter>(dir / "tensorboard");
  context["tensorboard"] = {{"file", tb->path().filename().string()}, {"opened", tb->opened()}};
  return tb;
}

void stamp_tensorboard_time(nlohmann::json& record) {
  record["wall_time"] = TensorBoardWriter::now();
}

void write_tensorboard_epoch(TensorBoardWriter& tb, const nlohmann::json& record,
                             const nlohmann::json& context, TensorBoardScalarsOf scalars) {
  const auto step = record.at("epoch").get<int64_t>();
  const auto wall_time = record.at("wall_time").get<double>();
  for (const auto& [tag, value] : scalars(record, context)) {
    tb.add_scalar(tag, value, step, wall_time);
  }
  tb.flush();
}

std::vector<fs::path> tensorboard_files(const fs::path& dir, const nlohmann::json& doc) {
  if (!doc.is_object() || !doc.contains("context") || !doc["context"].is_object() ||
      !doc["context"].contains("tensorboard")) {
    return {};
  }
  return {dir / "tensorboard" / doc["context"]["tensorboard"].at("file").get<std::string>()};
}

void render_tensorboard(const nlohmann::json& doc, const fs::path& dir,
                        TensorBoardScalarsOf scalars) {
  const nlohmann::json& context = doc.at("context");
  const nlohmann::json& file = context.at("tensorboard");
  TensorBoardWriter tb(dir / "tensorboard", file.at("file").get<std::string>(),
                       file.at("opened").get<double>());
  for (const auto& record : doc.at("records"))
    write_tensorboard_epoch(tb, record, context, scalars);
}

}  // namespace nnperf
