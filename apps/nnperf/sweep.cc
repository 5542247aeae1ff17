// `nnperf sweep plan|run|merge|run-cell`: a study planned as cells and run here or as a Slurm job
// array (see runs/sweep.h). `nnperf status DIR` follows a sweep (apps/nnperf/profile.cc).
#include <fmt/format.h>

#include <algorithm>

#include "command.h"
#include "flags.h"
#include "nnperf/core/error.h"
#include "nnperf/core/memory.h"
#include "nnperf/core/text.h"
#include "nnperf/io/files.h"
#include "nnperf/runs/sweep.h"

namespace nnperf::app {
namespace {

struct Flags {
  SweepPlanOptions plan;
  bool profile = false, train = false;
  std::string out_dir, dir;
  bool local = false, slurm = false;
  int jobs = 1, cell = -1;
  SlurmOptions slurm_options;
  std::string slurm_flag_given;  // a --slurm option given (refused with --local)
  bool jobs_given = false;
  std::string models, algorithms;  // comma-separated, as typed (split after their checks)
};

int plan_command(Flags& f) {
  if (f.profile == f.train) throw UsageError("sweep plan: give exactly one of --profile and --train");
  f.plan.kind = f.profile ? "profile" : "train";
  f.plan.models = split_list(f.models);
  if (!f.algorithms.empty()) f.plan.algorithms = split_list(f.algorithms);
  f.plan.out_dir = f.out_dir;
  f.plan.command_line = command_line();
  const nlohmann::json s = plan_sweep(f.plan);
  fmt::print("planned {} in {} (about {:.0f} s of work at {} per cell; {})\n",
             count_noun(static_cast<int64_t>(s["cells"].size()), "cell"), f.out_dir,
             s["estimate"]["total_seconds"].get<double>(),
             count_noun(s["threads_per_cell"].get<int>(), "thread"),
             s["estimate"]["basis"].get<std::string>());
  const auto& cells = s["cells"];
  const auto largest = std::max_element(cells.begin(), cells.end(), [](const auto& a, const auto& b) {
    return a.value("estimated_memory_bytes", 0.0) < b.value("estimated_memory_bytes", 0.0);
  });
  if (largest != cells.end()) {
    fmt::print("largest cell: {} needs at least {} of memory (node outputs and parameters; workspaces "
               "come on top)\n",
               (*largest)["name"].get<std::string>(),
               format_bytes(static_cast<int64_t>((*largest)["estimated_memory_bytes"].get<double>())));
  }
  fmt::print("run with: nnperf sweep run {} --local   or   nnperf sweep run {} --slurm\n",
             shell_quote(f.out_dir), shell_quote(f.out_dir));
  return 0;
}

int run_command(Flags& f) {
  if (f.local == f.slurm) throw UsageError("sweep run: give exactly one of --local and --slurm");
  if (f.local && !f.slurm_flag_given.empty()) {
    throw UsageError(fmt::format("sweep run: {} is an option of --slurm, not of --local", f.slurm_flag_given));
  }
  if (f.slurm && f.jobs_given) {
    throw UsageError("sweep run: --jobs is an option of --local; with --slurm use --max-parallel");
  }
  if (f.local) {
    const int failed = run_sweep_local(f.dir, f.jobs);
    fmt::print("{}", sweep_status(f.dir));
    return failed == 0 ? 0 : 1;
  }
  fmt::print("{}", submit_sweep_slurm(f.dir, f.slurm_options));
  return 0;
}

const Registrar reg{Command{"sweep", 47, [](CLI::App& sub) -> std::function<int()> {
  sub.description("Plan a study as cells and run them here or as a Slurm job array, then merge");
  sub.require_subcommand(1);
  auto f = std::make_shared<Flags>();

  CLI::App* p = sub.add_subcommand("plan", "Write <--out-dir>/sweep.json: every cell with its command line and estimated cost");
  p->add_flag("--profile", f->profile, "Cells of the convolution profiler: models x algorithms x size ranges");
  p->add_flag("--train", f->train, "Cells of the fixed-iteration training driver: models x batch sizes x threads");
  // Typed as one string: an empty item ("a,,b") is refused, not dropped as CLI11's delimiter did.
  p->add_option("--models", f->models, "Comma-separated models (see profile --list-models)")
      ->required()
      ->check(list_items())
      ->check(known_model(/*list=*/true));
  p->add_option("--algorithms", f->algorithms,
                "--profile: comma-separated convolution algorithms, guess, find")
      ->check(list_items());
  p->add_option("--stage", f->plan.stage, "--profile: sanity | quick | full (sizes, warm-up, measure)")
      ->check(CLI::IsMember({"sanity", "quick", "full"}))->capture_default_str();
  p->add_option("--sizes", f->plan.sizes, "--profile: explicit input sizes instead of the stage's")
      ->delimiter(',')->check(integer_in(1, 65536));
  p->add_option("--sizes-per-cell", f->plan.sizes_per_cell, "--profile: sizes per cell (0 = all of a model x algorithm)")
      ->check(integer_in(0, 100000))->capture_default_str();
  p->add_option("--batch-size", f->plan.batch_size, "--profile: batch size")->check(integer_in(1, 4096))->capture_default_str();
  p->add_option("--pass", f->plan.pass, "--profile: inference or train")->check(CLI::IsMember({"inference", "train"}))->capture_default_str();
  p->add_option("--batch-sizes", f->plan.batch_sizes, "--train: comma-separated batch sizes")
      ->delimiter(',')->check(integer_in(1, 4096));
  p->add_option("--thread-counts", f->plan.thread_counts, "--train: comma-separated thread counts (default: --threads)")
      ->delimiter(',')->check(integer_in(1, 1024));
  p->add_option("--iters", f->plan.iters, "--train: measured iterations")->check(integer_in(1, 1000000))->capture_default_str();
  p->add_option("--warmup-iters", f->plan.warmup_iters, "--train: warm-up iterations")->check(integer_in(0, 1000000))->capture_default_str();
  p->add_option("--input-size", f->plan.input_size, "--train: input size (0 = each model's default)")->check(integer_in(0, 4096))->capture_default_str();
  p->add_option("--threads", f->plan.threads, "Threads per cell")->check(integer_in(1, 1024))->capture_default_str();
  p->add_option("--out-dir", f->out_dir, "The sweep folder (new or empty)")->required();

  CLI::App* r = sub.add_subcommand("run", "Run the unfinished cells here (--local) or submit them as one Slurm job array (--slurm)");
  r->add_option("dir", f->dir, "The sweep folder")->required();
  r->add_flag("--local", f->local, "Run here");
  r->add_option("--jobs", f->jobs, "--local: cells at a time")->check(integer_in(1, 256))->capture_default_str();
  r->add_flag("--slurm", f->slurm, "Submit an sbatch job array, one task per unfinished cell");
  r->add_option("--partition", f->slurm_options.partition, "--slurm: partition");
  r->add_option("--time", f->slurm_options.time, "--slurm: time limit per task (sbatch --time)");
  r->add_option("--cpus-per-task", f->slurm_options.cpus_per_task, "--slurm: CPUs per task (default: the sweep's threads per cell)")
      ->check(integer_in(1, 1024));
  r->add_option("--mem", f->slurm_options.mem, "--slurm: memory per task (sbatch --mem)");
  r->add_option("--max-parallel", f->slurm_options.max_parallel, "--slurm: tasks running at once (the array's %K)")
      ->check(integer_in(1, 100000));
  r->add_option("--account", f->slurm_options.account, "--slurm: account");
  r->add_option("--gres", f->slurm_options.gres, "--slurm: generic resources, e.g. gpu:1");
  r->add_flag("--dry-run", f->slurm_options.dry_run, "--slurm: write the script and the sbatch command, submit nothing");

  CLI::App* m = sub.add_subcommand("merge", "Join the cells' CSVs and records into <dir>/merged/ (checks every row)");
  m->add_option("dir", f->dir, "The sweep folder")->required();

  CLI::App* c = sub.add_subcommand("run-cell", "Run one cell (what each Slurm array task runs)");
  c->add_option("dir", f->dir, "The sweep folder")->required();
  c->add_option("index", f->cell, "The cell's index (SLURM_ARRAY_TASK_ID)")->required()->check(integer_in(0, 100000000));

  return [f, p, r, m, c]() -> int {
    if (p->parsed()) return plan_command(*f);
    if (r->parsed()) {
      for (const char* name : {"--partition", "--time", "--cpus-per-task", "--mem", "--max-parallel",
                               "--account", "--gres", "--dry-run"}) {
        if (r->count(name) > 0 && f->slurm_flag_given.empty()) f->slurm_flag_given = name;
      }
      f->jobs_given = r->count("--jobs") > 0;
      return run_command(*f);
    }
    if (m->parsed()) {
      fmt::print("{}", merge_sweep(f->dir));
      return 0;
    }
    if (c->parsed()) return run_sweep_cell(f->dir, f->cell);
    return 2;
  };
}}};

}  // namespace
}  // namespace nnperf::app
