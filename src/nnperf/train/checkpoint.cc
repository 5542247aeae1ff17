// Checkpoint files and the glue between a Graph + Optimizer and the named tensors of a
// checkpoint (the byte format itself is in checkpoint_format.cc). restore_checkpoint validates
// the whole checkpoint against the graph before it writes a single value.
#include "nnperf/train/checkpoint.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "nnperf/build_info.h"
#include "nnperf/core/error.h"
#include "nnperf/io/files.h"
#include "nnperf/nn/batchnorm.h"
#include "nnperf/nn/graph.h"
#include "nnperf/train/optimizer.h"

namespace nnperf {
namespace {

constexpr std::string_view kParamsPrefix = "params.";
constexpr std::string_view kBuffersPrefix = "buffers.";
constexpr std::string_view kOptimPrefix = "optim.";

// The graph's tensors in checkpoint order: parameters, then BatchNorm running statistics.
std::vector<std::pair<std::string, Tensor*>> graph_tensors(Graph& graph) {
  std::vector<std::pair<std::string, Tensor*>> out;
  for (const Param& p : graph.params()) {
    out.emplace_back(std::string(kParamsPrefix) + p.name, p.value);
  }
  for (int node = 1; node < graph.size(); ++node) {
    if (auto* bn = dynamic_cast<BatchNorm2d*>(&graph.layer(node))) {
      const std::string prefix = std::string(kBuffersPrefix) + graph.name(node);
      out.emplace_back(prefix + ".running_mean", &bn->running_mean());
      out.emplace_back(prefix + ".running_var", &bn->running_var());
    }
  }
  return out;
}

CheckpointTensor to_checkpoint_tensor(std::string name, const Tensor& t) {
  return {std::move(name), t.shape(), std::vector<float>(t.data(), t.data() + t.numel())};
}

// "exp_avg.3" -> 3; -1 when the name has no parameter index.
int64_t state_param_index(std::string_view state_name) {
  const std::size_t dot = state_name.rfind('.');
  if (dot == std::string_view::npos) return -1;
  int64_t index = -1;
  const char* first = state_name.data() + dot + 1;
  const char* last = state_name.data() + state_name.size();
  const auto [ptr, ec] = std::from_chars(first, last, index);
  return ec == std::errc() && ptr == last && first != last ? index : -1;
}

}  // namespace

void write_checkpoint(const std::filesystem::path& path, const Checkpoint& ckpt) {
  write_file_atomic(path, serialize_checkpoint(ckpt));
}

Checkpoint read_checkpoint(const std::filesystem::path& path) {
  return parse_checkpoint(read_file(path), path.string());
}

Checkpoint capture_checkpoint(Graph& graph, const Optimizer& optimizer, nlohmann::json meta) {
  NNPERF_CHECK(meta.is_object() && meta.contains("model") && meta["model"].is_string(),
               "checkpoint metadata needs \"model\" (a string)");
  nlohmann::json& opt = meta["optimizer"];
  if (!opt.is_object()) opt = nlohmann::json::object();
  opt["name"] = optimizer.name();
  // Keep the caller's lr as typed (0.001, not 0.0010000000474974513) when it is the optimizer's
  // float lr; restore sets static_cast<float>(lr) either way.
  const auto typed = opt.find("lr");
  if (typed == opt.end() || !typed->is_number() ||
      static_cast<float>(typed->get<double>()) != optimizer.lr()) {
    opt["lr"] = optimizer.lr();
  }
  opt["steps"] = optimizer.steps();
  if (!meta.contains("nnperf_version")) meta["nnperf_version"] = build_info::kVersion;
  Checkpoint ckpt;
  ckpt.meta = std::move(meta);
  for (const auto& [name, tensor] : graph_tensors(graph)) {
    ckpt.tensors.push_back(to_checkpoint_tensor(name, *tensor));
  }
  for (const auto& [name, tensor] : optimizer.state()) {
    ckpt.tensors.push_back(to_checkpoint_tensor(std::string(kOptimPrefix) + name, *tensor));
  }
  return ckpt;
}

Checkpoint capture_weights(Graph& graph, nlohmann::json meta) {
  NNPERF_CHECK(meta.is_object() && meta.contains("model") && meta["model"].is_string(),
               "checkpoint metadata needs \"model\" (a string)");
  meta["kind"] = "weights";
  if (!meta.contains("nnperf_version")) meta["nnperf_version"] = build_info::kVersion;
  Checkpoint ckpt;
  ckpt.meta = std::move(meta);
  for (const auto& [name, tensor] : graph_tensors(graph)) {
    ckpt.tensors.push_back(to_checkpoint_tensor(name, *tensor));
  }
  return ckpt;
}

void check_model_name(const nlohmann::json& meta, const std::string& expected_model,
                      const std::string& source) {
  const auto model = meta.find("model");
  if (model == meta.end() || !model->is_string()) {
    fail("{}: checkpoint metadata has no \"model\" name", source);
  }
  if (model->get<std::string>() != expected_model) {
    fail("{}: checkpoint of model '{}', not of '{}'", source,
         quote_input(model->get<std::string>()), expected_model);
  }
}

namespace {

// Every graph tensor present with the same shape; returns the checkpoint's tensors by name.
std::map<std::string_view, const CheckpointTensor*> check_graph_tensors(
    const Checkpoint& ckpt, const std::vector<std::pair<std::string, Tensor*>>& targets,
    const std::string& source) {
  std::map<std::string_view, const CheckpointTensor*> by_name;
  for (const CheckpointTensor& t : ckpt.tensors) by_name.emplace(t.name, &t);
  for (const auto& [name, tensor] : targets) {
    const auto it = by_name.find(name);
    if (it == by_name.end()) fail("{}: checkpoint has no tensor '{}'", source, name);
    if (it->second->shape != tensor->shape()) {
      fail("{}: checkpoint tensor '{}' has shape {}, the model expects {}", source, name,
           it->second->shape.str(), tensor->shape().str());
    }
  }
  return by_name;
}

bool is_graph_tensor(const std::vector<std::pair<std::string, Tensor*>>& targets,
                     std::string_view name) {
  return std::any_of(targets.begin(), targets.end(),
                     [&](const auto& target) { return target.first == name; });
}

void copy_graph_tensors(const std::map<std::string_view, const CheckpointTensor*>& by_name,
                        const std::vector<std::pair<std::string, Tensor*>>& targets) {
  for (const auto& [name, tensor] : targets) {
    const CheckpointTensor& t = *by_name.at(name);
    if (!t.data.empty()) std::memcpy(tensor->data(), t.data.data(), t.data.size() * sizeof(float));
  }
}

}  // namespace

void restore_checkpoint(const Checkpoint& ckpt, Graph& graph, Optimizer& optimizer,
                        const std::string& expected_model, const std::string& source) {
  const nlohmann::json& meta = ckpt.meta;
  check_model_name(meta, expected_model, source);
  const auto opt = meta.find("optimizer");
  if (opt == meta.end() || !opt->is_object() || !opt->contains("name") ||
      !(*opt)["name"].is_string() || !opt->contains("lr") || !(*opt)["lr"].is_number() ||
      !opt->contains("steps") || !(*opt)["steps"].is_number_integer() ||
      (*opt)["steps"].get<int64_t>() < 0) {
    fail("{}: checkpoint metadata has no valid \"optimizer\" {{name, lr, steps}}", source);
  }
  if ((*opt)["name"].get<std::string>() != optimizer.name()) {
    fail("{}: checkpoint of optimizer '{}', not of '{}'", source,
         quote_input((*opt)["name"].get<std::string>()), optimizer.name());
  }

  // Graph tensors: every one present with the same shape.
  const auto targets = graph_tensors(graph);
  const auto by_name = check_graph_tensors(ckpt, targets, source);
  // Optimizer state: "optim.<state>.<param index>", shaped like that parameter.
  const std::vector<Param> params = graph.params();
  std::vector<std::pair<std::string, Tensor>> state;
  for (const CheckpointTensor& t : ckpt.tensors) {
    const std::string_view name = t.name;
    if (name.starts_with(kOptimPrefix)) {
      const std::string_view state_name = name.substr(kOptimPrefix.size());
      const int64_t index = state_param_index(state_name);
      if (index < 0 || index >= static_cast<int64_t>(params.size())) {
        fail("{}: checkpoint optimizer state '{}' names no parameter of the model ({} parameters)",
             source, quote_input(name), params.size());
      }
      const Shape& want = params[static_cast<std::size_t>(index)].value->shape();
      if (t.shape != want) {
        fail("{}: checkpoint tensor '{}' has shape {}, the model expects {} (as {})", source,
             quote_input(name), t.shape.str(), want.str(),
             params[static_cast<std::size_t>(index)].name);
      }
      state.emplace_back(std::string(state_name), Tensor());
    } else if (!is_graph_tensor(targets, name)) {
      fail("{}: checkpoint has tensor '{}', which the model does not have", source,
           quote_input(name));
    }
  }
  // load_state checks the state names (and their completeness) for this optimizer kind; give it
  // the tensors now, but only after the graph checks above passed.
  std::size_t k = 0;
  for (const CheckpointTensor& t : ckpt.tensors) {
    if (!std::string_view(t.name).starts_with(kOptimPrefix)) continue;
    Tensor value = Tensor::zeros(t.shape);
    if (!t.data.empty()) std::memcpy(value.data(), t.data.data(), t.data.size() * sizeof(float));
    state[k++].second = std::move(value);
  }
  try {
    optimizer.load_state(state, (*opt)["steps"].get<int64_t>());
  } catch (const Error& e) {
    fail("{}: checkpoint optimizer state refused: {}", source, e.what());
  }
  optimizer.set_lr(static_cast<float>((*opt)["lr"].get<double>()));
  copy_graph_tensors(by_name, targets);
}

void restore_weights(const Checkpoint& ckpt, Graph& graph, const std::string& expected_model,
                     const std::string& source) {
  check_model_name(ckpt.meta, expected_model, source);
  const auto targets = graph_tensors(graph);
  const auto by_name = check_graph_tensors(ckpt, targets, source);
  for (const CheckpointTensor& t : ckpt.tensors) {
    const std::string_view name = t.name;
    if (!name.starts_with(kOptimPrefix) && !is_graph_tensor(targets, name)) {
      fail("{}: checkpoint has tensor '{}', which the model does not have", source,
           quote_input(name));
    }
  }
  copy_graph_tensors(by_name, targets);
}

}  // namespace nnperf
