// Sweeps beyond one machine: a study planned as cells (one model x algorithm x size range of the
// convolution profiler, or one configuration of the fixed-iteration training driver), each with
// its exact nnperf command line, its output folder and an estimated cost; run here (`--local`) or
// as one Slurm job array (one array task = one cell); followed with `nnperf status`; merged into
// the profiler's CSVs and one {context, records} JSON. Nothing but files connects the cells, so
// any shared filesystem works and a sweep folder can be moved: every path inside it is relative.
//
// A sweep folder:
//   sweep.json                 the plan (cells, commands, estimates); written once
//   cells/<name>/              each cell's output folder (the command's --output-dir / --log-dir)
//   state/<name>.json          each cell's last state: queued (submitted to Slurm), running (host,
//                              pid, Slurm job), done (rows, seconds, host) or failed (exit code,
//                              the log's last error line)
//   logs/<name>.log            each cell's output
//   slurm/                     generated sbatch scripts, submissions.json, %A_%a logs
//   merged/                    `sweep merge`'s output
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace nnperf {

struct SweepPlanOptions {
  std::string kind;  // "profile" or "train"
  std::vector<std::string> models;
  std::filesystem::path out_dir;
  int threads = 1;  // per cell (--threads of each command; Slurm's --cpus-per-task default)
  // profile cells
  std::vector<std::string> algorithms;
  std::string stage = "quick";     // sanity | quick | full: sizes, warm-up and measure
  std::vector<int64_t> sizes;      // explicit sizes instead of the stage's
  int sizes_per_cell = 0;          // 0 = all of a model x algorithm's sizes in one cell
  int64_t batch_size = 1;
  std::string pass = "inference";  // or train
  // train cells: models x batch sizes x thread counts
  std::vector<int64_t> batch_sizes;
  std::vector<int> thread_counts;
  int iters = 10, warmup_iters = 3;
  int64_t input_size = 0;  // 0 = each model's default
  std::string command_line;
};

// Writes <out_dir>/sweep.json and returns it. Refuses a folder that holds another sweep (or any
// other files), names the flag of any bad value, and plans nothing twice.
nlohmann::json plan_sweep(const SweepPlanOptions& options);

// The sweep of `dir`: sweep.json read and checked (cells, names, commands); throws Error naming the
// file otherwise.
nlohmann::json read_sweep(const std::filesystem::path& dir);

// A cell's state: "pending", "queued", "running", "done" or "failed", with the state file's
// fields, and "stale": true for a running cell whose process is gone or a queued one that squeue
// no longer lists.
nlohmann::json cell_state(const std::filesystem::path& dir, const nlohmann::json& cell);

// Runs cell `index` here: records it running, runs its command (this program, cwd = the sweep
// folder, output to logs/<name>.log; a profile cell whose folder holds an interrupted sweep gets
// --resume, so a killed cell continues where its rows stop), records done or failed. A finished
// cell is not run again. Returns the command's exit status.
int run_sweep_cell(const std::filesystem::path& dir, int index);

// Runs every unfinished cell here, `jobs` at a time (each as `nnperf sweep run-cell`). Returns the
// number of cells that failed.
int run_sweep_local(const std::filesystem::path& dir, int jobs);

struct SlurmOptions {
  std::string partition, time, mem, account, gres;
  int cpus_per_task = 0;  // 0 = the sweep's threads per cell
  int max_parallel = 0;   // 0 = no %K limit
  bool dry_run = false;
  std::string sbatch = "sbatch";  // the program submitted with
};

// Writes slurm/sweep_<n>.sbatch (one array task per unfinished cell, running it by
// SLURM_ARRAY_TASK_ID) and slurm/submit_<n>.sh (the sbatch command line, shell-quoted), then runs
// sbatch unless dry_run. Returns a one-paragraph summary (job id, cells). Nothing to submit when
// every cell is done, running or queued.
std::string submit_sweep_slurm(const std::filesystem::path& dir, const SlurmOptions& options);

// `nnperf status DIR` for a sweep: a line per cell, totals and the time left; merges when every
// cell is done (its last line says what the merge did or why it failed).
std::string sweep_status(const std::filesystem::path& dir);

// Joins the cells' outputs into merged/: per model x algorithm x pass (training cells' files carry
// _train) the profiler's overall and layers CSVs, profile_records.jsonl and the cells' traces
// (and a run.json, so `nnperf report` and `status` read the folder as one sweep), the
// training cells' metrics.csv, and merged/sweep_records.json {context, records}. Checks that every planned
// size (or training cell) has exactly one row; throws Error naming the missing or duplicated rows
// and writes nothing then. Returns a summary line.
std::string merge_sweep(const std::filesystem::path& dir);


}  // namespace nnperf
