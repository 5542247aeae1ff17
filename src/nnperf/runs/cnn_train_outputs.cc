#include "nnperf/runs/cnn_train_outputs.h"

#include <fmt/format.h>

#include <algorithm>

#include "nnperf/io/run_info.h"
#include "nnperf/io/trace.h"
#include "nnperf/nn/activation.h"
#include "nnperf/nn/graph.h"

namespace nnperf {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kHeader{"epoch",    "train_loss",   "train_acc", "test_loss",
                                       "test_acc", "lr",           "train_sec", "data_wait_sec",
                                       "eval_sec", "imgs_per_sec", "best"};

std::vector<std::string> csv_row(const nlohmann::json& r) {
  const auto num = [&](const char* k) { return csv_number(r.at(k).get<double>(), 8); };
  return {std::to_string(r.at("epoch").get<int>()),
          num("train_loss"),
          num("train_acc"),
          num("test_loss"),
          num("test_acc"),
          num("lr"),
          num("train_sec"),
          num("data_wait_sec"),
          num("eval_sec"),
          num("imgs_per_sec"),
          r.at("best").get<bool>() ? "1" : "0"};
}

}  // namespace

nlohmann::json cnn_epoch_json(const CnnEpochRecord& r) {
  return {{"epoch", r.epoch},
          {"train_loss", r.train_loss},
          {"train_acc", r.train_acc},
          {"test_loss", r.test_loss},
          {"test_acc", r.test_acc},
          {"lr", r.lr},
          {"train_sec", r.train_sec},
          {"data_wait_sec", r.data_wait_sec},
          {"eval_sec", r.eval_sec},
          {"imgs_per_sec", r.imgs_per_sec},
          {"images", r.images},
          {"timed", r.timed},
          {"best", r.best}};
}

CnnEpochRecord cnn_epoch_from_json(const nlohmann::json& j) {
  CnnEpochRecord r;
  r.epoch = j.at("epoch").get<int>();
  r.train_loss = j.at("train_loss").get<double>();
  r.train_acc = j.at("train_acc").get<double>();
  r.test_loss = j.at("test_loss").get<double>();
  r.test_acc = j.at("test_acc").get<double>();
  r.lr = j.at("lr").get<double>();
  r.train_sec = j.at("train_sec").get<double>();
  r.data_wait_sec = j.at("data_wait_sec").get<double>();
  r.eval_sec = j.at("eval_sec").get<double>();
  r.imgs_per_sec = j.at("imgs_per_sec").get<double>();
  r.images = j.at("images").get<int64_t>();
  r.timed = j.at("timed").get<bool>();
  r.best = j.at("best").get<bool>();
  return r;
}

TensorBoardScalars cnn_tensorboard_scalars(const nlohmann::json& r, const nlohmann::json&) {
  const auto num = [&](const char* key) { return r.at(key).get<double>(); };
  return {{"Loss/train", num("train_loss")},
          {"Accuracy/train", num("train_acc")},
          {"Loss/test", num("test_loss")},
          {"Accuracy/test", num("test_acc")},
          {"LearningRate", num("lr")},
          {"Throughput/train_imgs_per_sec", num("imgs_per_sec")},
          {"Timing/data_wait_sec", num("data_wait_sec")}};
}

void render_cnn_train_csv(const nlohmann::json& doc, const fs::path& dir) {
  CsvWriter csv(dir / "training_metrics.csv", kHeader);
  for (const auto& r : doc.at("records")) csv.row(csv_row(r));
}

CnnTrainOutputs::CnnTrainOutputs(const fs::path& dir, nlohmann::json context, bool tensorboard,
                                 int epochs, Progress& progress)
    : dir_(dir),
      epochs_(epochs),
      progress_(progress),
      metrics_(dir / "training_metrics.csv", kHeader) {
  if (tensorboard) tb_ = open_run_tensorboard(dir, context);
  doc_ = {{"context", std::move(context)}, {"records", nlohmann::json::array()}};
}

CnnTrainOutputs::~CnnTrainOutputs() = default;

void CnnTrainOutputs::add(const CnnEpochRecord& rec) {
  nlohmann::json r = cnn_epoch_json(rec);
  if (tb_) stamp_tensorboard_time(r);
  doc_["records"].push_back(r);
  write_json_atomic(dir_ / "train_records.json", doc_);
  metrics_.row(csv_row(r));
  if (tb_) write_tensorboard_epoch(*tb_, r, doc_["context"], cnn_tensorboard_scalars);
  progress_.line(fmt::format(
      "epoch {}/{}: train_loss {:.4f} train_acc {:.4f} test_loss {:.4f} test_acc {:.4f} lr {:.5f} "
      "| {:.2f} s ({:.1f}% waiting for data), {:.0f} img/s{}",
      rec.epoch, epochs_, rec.train_loss, rec.train_acc, rec.test_loss, rec.test_acc, rec.lr,
      rec.train_sec, rec.train_sec > 0 ? 100.0 * rec.data_wait_sec / rec.train_sec : 0.0,
      rec.imgs_per_sec, rec.best ? " | best" : ""));
}

void CnnTrainOutputs::finish(const nlohmann::json& final_results) {
  write_json_atomic(dir_ / "final_results.json", final_results);
}

nlohmann::json one_step_spans(const Graph& graph, StepRecorder& rec) {
  const auto& spans = rec.spans();
  int64_t origin = spans.empty() ? 0 : spans.front().begin_ns;
  for (const auto& s : spans) origin = std::min(origin, s.begin_ns);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : spans) {
    const bool node = s.node >= 0;
    nlohmann::json j = {{"node", s.node},
                        {"name", node ? graph.name(s.node) : "step"},
                        {"kind", node ? graph.layer(s.node).kind() : "step"},
                        {"phase", s.phase},
                        {"begin_ns", s.begin_ns - origin},
                        {"end_ns", s.end_ns - origin}};
    if (node) {
      j["layer"] = graph.layer(s.node).describe();
      // A ReLU fused into the layer before it ran nothing of its own: its time is that layer's.
      const auto* act = dynamic_cast<const Activation*>(&graph.layer(s.node));
      if (act != nullptr && !act->fused_into().empty()) j["fused_into"] = act->fused_into();
    }
    out.push_back(std::move(j));
  }
  return out;
}

namespace {
double span_ms(const nlohmann::json& s) {
  return static_cast<double>(s.at("end_ns").get<int64_t>() - s.at("begin_ns").get<int64_t>()) *
         1e-6;
}
}  // namespace

nlohmann::json one_step_phases(const nlohmann::json& spans) {
  nlohmann::json phases = nlohmann::json::object();
  for (const nlohmann::json& s : spans) {
    if (s.at("node").get<int>() < 0) phases[s.at("phase").get<std::string>()] = span_ms(s);
  }
  return phases;
}

void render_one_step_profile(const nlohmann::json& doc, const fs::path& dir) {
  const auto us = [](int64_t ns) { return static_cast<double>(ns) * 1e-3; };
  TraceWriter trace;
  trace.set_thread_name(0, "step phases");
  trace.set_thread_name(1, "layers");
  trace.set_metadata("context", doc.at("context"));
  CsvWriter csv(dir / "one_step_layers.csv",
                {"node", "name", "kind", "phase", "start_ms", "ms", "fused_into"});
  for (const nlohmann::json& s : doc.at("spans")) {
    const int node = s.at("node").get<int>();
    const std::string name = s.at("name").get<std::string>();
    const std::string phase = s.at("phase").get<std::string>();
    const int64_t begin = s.at("begin_ns").get<int64_t>(), end = s.at("end_ns").get<int64_t>();
    nlohmann::json args = nlohmann::json::object();
    if (node >= 0) args["layer"] = s.at("layer");
    if (s.contains("fused_into")) args["fused_into"] = s.at("fused_into");
    trace.add_complete(node >= 0 ? name + "." + phase : phase, phase, us(begin),
                       us(end) - us(begin), node >= 0 ? 1 : 0, args);
    csv.row({std::to_string(node), name, s.at("kind").get<std::string>(), phase,
             csv_number(us(begin) * 1e-3, 6), csv_number(span_ms(s), 6),
             s.value("fused_into", std::string())});
  }
  trace.write(dir / "one_step_trace.json");
}

}  // namespace nnperf
