// The MLP implementation benchmark: time per training iteration (forward, loss, backward, optimizer
// step) and per forward pass, for every GEMM implementation and batch size; speedups vs `naive` and
// `blas`; accuracy consistency (every implementation trained from the same initial weights on the
// same batches reaches the same loss); and the cost of full per-layer instrumentation.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nnperf/kernels/gemm/gemm.h"

namespace nnperf {

struct MlpBenchOptions {
  std::vector<std::string> impls;  // empty = the registry's CPU rows (and GPU rows with kCuda)
  // kCuda allows and adds the GPU rows (cuda, cublas: train/cuda_mlp) and needs a device.
  Device device = Device::kCpu;
  std::vector<int64_t> batch_sizes = {32, 64, 128, 1024};
  std::vector<int64_t> hidden = {128, 128, 128};
  std::string activation = "ReLU";
  std::string optimizer = "adam";
  int warmup = 5;
  int measure = 30;
  double max_seconds_per_case = 20.0;  // stop measuring a (impl, batch) early past this
  int threads = 0;
  int consistency_steps = 200;  // 0 = skip the consistency check
  int64_t consistency_batch = 64;
  double consistency_tolerance = 1e-3;  // max |loss_impl - loss_blas| over the loss curve
  int overhead_reps = 300;              // 0 = skip the instrumentation-overhead measurement
  // Real data for the consistency check: must exist when given; empty: the default folder, or
  // synthetic data where that is not installed.
  std::filesystem::path data_dir;
  bool synthetic = false;
  uint64_t seed = 1;
  std::filesystem::path out_dir;  // empty: a new results/mlp-bench_<timestamp>
  bool overwrite = false;
  std::string command_line;
};

struct MlpBenchResult {
  nlohmann::json
      json;  // {"context": {...}, "records": [...], "consistency": [...], "overhead": {...}}
  bool consistent = true;
  std::filesystem::path out_dir;  // claimed before anything was measured
};

// Measures; writes nothing but the claimed output folder and its run.json.
MlpBenchResult run_mlp_bench(const MlpBenchOptions& options);

// The reporters (runs/mlp_bench_outputs.cc): everything below is rendered from the result's
// JSON document alone.
//
// Writes <out_dir>/mlp_bench.json, mlp_bench.csv, plots/iteration_time.{dat,gp,svg,png}, and
// the extra --json/--csv paths when given (empty = skip); run_mlp_bench wrote run.json when it
// claimed the folder.
void write_mlp_bench_outputs(const MlpBenchResult& result,
                             const std::filesystem::path& json_path,
                             const std::filesystem::path& csv_path);
// Writes mlp_bench.csv and plots/iteration_time.* in `dir` from a mlp_bench.json document: run
// on a saved mlp_bench.json it rebuilds the run's CSV byte for byte.
void render_mlp_bench_outputs(const nlohmann::json& doc, const std::filesystem::path& dir);
// The terminal table of a result.
std::string format_mlp_bench(const nlohmann::json& result);

}  // namespace nnperf
