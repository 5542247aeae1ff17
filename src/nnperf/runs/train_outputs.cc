#include "nnperf/runs/train_outputs.h"

#include <fmt/format.h>

#include "nnperf/io/run_info.h"

namespace nnperf {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kMetricsHeader{"epoch", "train_loss", "train_acc", "val_loss",
                                              "val_acc"};

std::vector<std::string> timing_header(int layers) {
  std::vector<std::string> h{"epoch"};
  for (int i = 0; i < layers; ++i) h.push_back(fmt::format("layer_{}", i + 1));
  h.push_back("total_time");
  return h;
}

std::string cell(const nlohmann::json& v) {
  return v.is_number() ? csv_number(v.get<double>(), 8) : "";
}

// The two CSV rows of one epoch record (the timing row only for a timed epoch).
std::vector<std::string> metrics_row(const nlohmann::json& r) {
  // Without a validation split the cells stay empty: no made-up zeros.
  return {std::to_string(r.at("epoch").get<int>()), cell(r.at("train_loss")),
          cell(r.at("train_acc")), cell(r.at("val_loss")), cell(r.at("val_acc"))};
}
std::vector<std::string> timing_row(const nlohmann::json& r) {
  std::vector<std::string> row{std::to_string(r.at("epoch").get<int>())};
  for (const auto& v : r.at("activation_layer_ms")) row.push_back(cell(v));
  row.push_back(cell(r.at("activation_total_ms")));
  return row;
}

}  // namespace

TensorBoardScalars train_tensorboard_scalars(const nlohmann::json& r,
                                             const nlohmann::json& context) {
  const auto num = [&](const char* key) { return r.at(key).get<double>(); };
  TensorBoardScalars out{{"Loss/train", num("train_loss")}, {"Accuracy/train", num("train_acc")}};
  if (context.at("has_validation").get<bool>()) {
    out.emplace_back("Loss/val", num("val_loss"));
    out.emplace_back("Accuracy/val", num("val_acc"));
  }
  out.emplace_back("Throughput/train_imgs_per_sec", num("imgs_per_sec"));
  const nlohmann::json& layers = r.at("activation_layer_ms");
  for (std::size_t i = 0; i < layers.size(); ++i) {
    out.emplace_back(fmt::format("Timing/layer_{}_ms", i + 1), layers[i].get<double>());
  }
  if (r.at("timed").get<bool>())
    out.emplace_back("Timing/total_activation_ms", num("activation_total_ms"));
  return out;
}

nlohmann::json epoch_record_json(const EpochRecord& rec, bool has_validation) {
  const auto opt = [&](double v) {
    return has_validation ? nlohmann::json(v) : nlohmann::json(nullptr);
  };
  return {
      {"epoch", rec.epoch},
      {"train_loss", rec.train_loss},
      {"train_acc", rec.train_acc},
      {"val_loss", opt(rec.val_loss)},
      {"val_acc", opt(rec.val_acc)},
      {"timed", rec.timed},
      {"activation_layer_ms", rec.layer_ms},
      {"activation_total_ms", rec.timed ? nlohmann::json(rec.total_ms) : nlohmann::json(nullptr)},
      {"train_sec", rec.train_sec},
      {"imgs_per_sec", rec.imgs_per_sec}};
}

void render_train_csvs(const nlohmann::json& doc, const fs::path& dir) {
  const int layers = doc.at("context").at("activation_layers").get<int>();
  CsvWriter metrics(dir / "training_metrics.csv", kMetricsHeader);
  CsvWriter timing(dir / "activation_timings.csv", timing_header(layers));
  for (const auto& r : doc.at("records")) {
    metrics.row(metrics_row(r));
    if (r.at("timed").get<bool>()) timing.row(timing_row(r));
  }
}

TrainOutputs::TrainOutputs(const fs::path& dir, nlohmann::json context, int activation_layers,
                           bool has_validation, bool tensorboard, int epochs, Progress& progress)
    : dir_(dir),
      has_val_(has_validation),
      epochs_(epochs),
      progress_(progress),
      metrics_(dir / "training_metrics.csv", kMetricsHeader),
      timing_(dir / "activation_timings.csv", timing_header(activation_layers)) {
  context["activation_layers"] = activation_layers;
  context["has_validation"] = has_validation;
  if (tensorboard) tb_ = open_run_tensorboard(dir, context);
  doc_ = {{"context", std::move(context)}, {"records", nlohmann::json::array()}};
}

TrainOutputs::~TrainOutputs() = default;

void TrainOutputs::add(const EpochRecord& rec) {
  nlohmann::json r = epoch_record_json(rec, has_val_);
  if (tb_) stamp_tensorboard_time(r);
  doc_["records"].push_back(r);
  write_json_atomic(dir_ / "train_records.json", doc_);
  metrics_.row(metrics_row(r));
  if (rec.timed) timing_.row(timing_row(r));
  if (tb_) write_tensorboard_epoch(*tb_, r, doc_["context"], train_tensorboard_scalars);
  std::string line = fmt::format("epoch {}/{}: train_loss {:.4f} train_acc {:.4f}", rec.epoch,
                                 epochs_, rec.train_loss, rec.train_acc);
  if (has_val_) line += fmt::format(" val_loss {:.4f} val_acc {:.4f}", rec.val_loss, rec.val_acc);
  line += fmt::format(" | {:.2f} s, {:.0f} img/s", rec.train_sec, rec.imgs_per_sec);
  if (rec.timed) line += fmt::format(" | activations {:.4f} ms/forward", rec.total_ms);
  progress_.line(line);
}

void TrainOutputs::finish(const TrainRunResult& result, const nlohmann::json& final_results,
                          int64_t test_samples) {
  write_json_atomic(dir_ / "final_results.json", final_results);
  progress_.line(fmt::format("test: loss {:.4f} acc {:.4f} ({} samples)", result.test_loss,
                             result.test_acc, test_samples));
}

}  // namespace nnperf
