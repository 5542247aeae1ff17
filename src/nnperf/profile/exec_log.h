// NNPERF_VERBOSE=exec: one line per op execution on stderr, as ONEDNN_VERBOSE=exec prints, with
// the layer columns of the profiler's layers CSV and the measured time:
//   nnperf_verbose,exec,<model>,<algorithm>,<input_size>,<phase>,<layer>,<layer_type>,
//     <in_channels>,<out_channels>,<kernel_size>,<stride>,<padding>,<algorithm_used>,<problem>,
//     <time_ms>
// preceded once per process by a template line naming those columns. It is a GraphHook (time is
// read only in profile/), installed by the runs in front of their own hook, which it brackets:
// that hook's intervals never include the printing. Timing every node adds two clock reads and a
// line of output per node, so whole-model times taken while it is on include that cost.
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "nnperf/nn/graph.h"

namespace nnperf {

// The per-layer columns of the profiler's layers CSV for one planned node, shared by the CSV and
// the exec log. Kernel, stride, padding, algorithm and problem are filled for convolutions only.
struct LayerColumns {
  std::string layer_type;                    // Layer::kind()
  std::string in_channels, out_channels;     // dimension 1 of the first input / the output
  std::string kernel_size, stride, padding;  // "3", or "3x5" when height and width differ
  bool is_conv = false;
  std::string algorithm_used, fallback_reason;
  std::string backward_data, backward_weights;  // the backward rows, when planned for training
  std::string problem;                          // benchdnn string
  std::string workspace_bytes;                  // the conv algorithm's workspace
};
LayerColumns layer_columns(const Graph& graph, int node);

// "224" for a square [mb, c, h, w] input, "224x160" otherwise, the feature count for [mb, n].
std::string input_size_column(const Shape& input);

class ExecLog final : public GraphHook {
 public:
  // `model` and `algorithm` fill the first two columns (the requested algorithm: a conv name,
  // guess, find, or for an MLP its GEMM). Lines go to `out` (stderr by default).
  ExecLog(const Graph& graph, std::string model, std::string algorithm, std::FILE* out = stderr);

  // The hook run inside this one (the profiler's); null for none.
  void set_next(GraphHook* next) { next_ = next; }
  void before(int node, Phase phase) override;
  void after(int node, Phase phase) override;
  int64_t lines() const { return lines_; }

 private:
  const Graph& graph_;
  std::string model_, algorithm_;
  std::FILE* out_;
  GraphHook* next_ = nullptr;
  std::vector<int64_t> begin_ns_;  // per node
  int64_t lines_ = 0;
};

// An ExecLog for `graph` when NNPERF_VERBOSE lists "exec", else null.
std::unique_ptr<ExecLog> exec_log_from_env(const Graph& graph, std::string model,
                                           std::string algorithm);

// What to install with Graph::set_hook: `hook` itself without a log, else the log running
// `hook` inside it. Use it at every set_hook of a run, so the log stays on throughout.
GraphHook* with_exec_log(ExecLog* log, GraphHook* hook);

}  // namespace nnperf
