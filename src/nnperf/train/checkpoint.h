// nnperf's own checkpoint format (docs/checkpoint.md): a versioned header, a JSON metadata block,
// a table of named float32 tensors with their shapes, the raw data and a CRC-32, written to a
// temporary file and renamed. capture/restore map a Graph and its Optimizer onto named tensors;
// a checkpoint of another model, with other shapes, or with tensors missing or extra is refused.
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "nnperf/core/tensor.h"

namespace nnperf {

class Graph;
class Optimizer;

inline constexpr char kCheckpointMagic[8] = {'N', 'N', 'P', 'F', 'C', 'K', 'P', 'T'};
inline constexpr uint32_t kCheckpointVersion = 1;
inline constexpr uint32_t kCheckpointDtypeFloat32 = 1;

struct CheckpointTensor {
  std::string name;
  Shape shape;
  std::vector<float> data;  // shape.numel() values
};

struct Checkpoint {
  nlohmann::json meta = nlohmann::json::object();
  std::vector<CheckpointTensor> tensors;
};

// The bytes of the file. Throws nnperf::Error for a tensor whose data does not match its shape,
// duplicate names, or metadata that is not a JSON object.
std::string serialize_checkpoint(const Checkpoint& ckpt);
// Checks everything (magic, version, length, CRC-32, every count and size against the bytes
// present) before allocating; throws nnperf::Error with one line starting "<source>: ".
// checkpoint_format.cc: depends only on core/ (the fuzz target links it alone).
Checkpoint parse_checkpoint(std::string_view bytes, const std::string& source);

void write_checkpoint(const std::filesystem::path& path, const Checkpoint& ckpt);  // atomic
Checkpoint read_checkpoint(const std::filesystem::path& path);

// Every parameter as "params.<node>.<param>" ("params.fc1.weight"), every BatchNorm2d running
// statistic as "buffers.<node>.running_mean" / ".running_var", every optimizer state buffer as
// "optim.<state name>" ("optim.exp_avg.0"). meta must hold "model" (a string); capture adds
// meta["optimizer"]["name"/"lr"/"steps"] and meta["nnperf_version"] (when absent).
Checkpoint capture_checkpoint(Graph& graph, const Optimizer& optimizer, nlohmann::json meta);
// Weights only (parameters and BatchNorm statistics, no optimizer state), meta["kind"] =
// "weights": nn-perf's <model>_final_weights. meta must hold "model".
Checkpoint capture_weights(Graph& graph, nlohmann::json meta);
// Throws nnperf::Error ("<source>: checkpoint of model 'X', not of 'Y'") when meta["model"] is
// missing or names another model; restore_checkpoint checks it first too.
void check_model_name(const nlohmann::json& meta, const std::string& expected_model,
                      const std::string& source);

// Restores into a graph and optimizer built the same way (same model, same optimizer kind).
// Everything is checked before anything is changed; refusals (nnperf::Error starting with
// "<source>: ") name the other model, the missing or extra tensor, or the tensor with its
// expected and found shapes. Sets the optimizer's lr and step counter from meta["optimizer"].
void restore_checkpoint(const Checkpoint& ckpt, Graph& graph, Optimizer& optimizer,
                        const std::string& expected_model, const std::string& source);
// The weights alone (parameters and BatchNorm statistics) from a weights file or a full
// checkpoint, whose optimizer state is ignored: `train --init-weights`. The same checks as
// restore_checkpoint for the model name, missing, extra and mis-shaped tensors.
void restore_weights(const Checkpoint& ckpt, Graph& graph, const std::string& expected_model,
                     const std::string& source);

}  // namespace nnperf
