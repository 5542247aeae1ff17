// `nnperf mlp-bench`: the MLP implementation benchmark (see runs/mlp_bench.h).
#include "nnperf/runs/mlp_bench.h"

#include <fmt/format.h>

#include <limits>

#include "command.h"
#include "flags.h"
#include "nnperf/core/error.h"
#include "nnperf/io/files.h"
#include "nnperf/io/run_info.h"
#include "nnperf/runs/train_run.h"
#include "train_flags.h"

namespace nnperf::app {
namespace {

struct Flags {
  MlpBenchOptions o;
  std::string impls, batches = "32,64,128,1024", hidden = "128,128,128", out_dir, json, csv, data,
      device = "cpu";
};

int run(Flags& f) {
  MlpBenchOptions& o = f.o;
  if (!f.impls.empty()) o.impls = split_list(f.impls);
  o.device = f.device == "cuda" ? Device::kCuda : Device::kCpu;
  o.batch_sizes = parse_int_list(f.batches, "--batch-sizes");
  o.hidden = parse_int_list(f.hidden, "--hidden");
  o.data_dir = f.data;
  o.out_dir = f.out_dir;  // empty: a new results/mlp-bench_<timestamp>
  o.command_line = command_line();
  check_output_file(f.json, "--json");  // before the measurements, not after
  check_output_file(f.csv, "--csv");
  check_distinct_outputs({{"--json", f.json}, {"--csv", f.csv}});
  const MlpBenchResult r = run_mlp_bench(o);
  write_mlp_bench_outputs(r, f.json, f.csv);
  fmt::print("{}", format_mlp_bench(r.json));
  fmt::print("outputs: {}\n", r.out_dir.string());
  if (!r.consistent) {
    fmt::print(stderr,
               "nnperf: error: implementations disagree beyond the tolerance (see the consistency "
               "table)\n");
    return 1;
  }
  return 0;
}

const Registrar reg{Command{
    "mlp-bench", 30, [](CLI::App& sub) -> std::function<int()> {
      sub.description(
          "The MLP implementation benchmark: iteration time per GEMM implementation, speedups, "
          "accuracy consistency");
      auto f = std::make_shared<Flags>();
      add_list_flags(sub);
      sub.add_option("--impls", f->impls,
                     "Comma-separated GEMM implementations (default: all CPU ones, and the GPU "
                     "ones with --device cuda)")
          ->check(list_items());
      sub.add_option("--device", f->device,
                     "cpu, or cuda: also train on the GPU with the cuda and cublas GEMM rows")
          ->check(CLI::IsMember({"cpu", "cuda"}))
          ->capture_default_str();
      sub.add_option("--batch-sizes", f->batches, "Batch sizes")
          ->check(integer_list_in(1, kMaxBatch, /*distinct=*/true))
          ->capture_default_str();
      sub.add_option("--hidden", f->hidden, "Hidden widths")
          ->check(integer_list_in(1, kMaxWidth))
          ->capture_default_str();
      sub.add_option("--activation", f->o.activation, "Activation")
          ->check(known_activation())
          ->capture_default_str();
      sub.add_option("--optimizer", f->o.optimizer, "sgd or adam")
          ->check(known_optimizer())
          ->capture_default_str();
      sub.add_option("--warmup", f->o.warmup, "Warm-up iterations per case")
          ->check(integer_in(0, 10000))
          ->capture_default_str();
      sub.add_option("--measure", f->o.measure, "Measured iterations per case")
          ->check(integer_in(1, 1000000))
          ->capture_default_str();
      sub.add_option("--max-seconds", f->o.max_seconds_per_case,
                     "Stop measuring a case after this many seconds (min 3 reps)")
          ->check(number_in(0, 86400, /*lo_open=*/true))
          ->capture_default_str();
      sub.add_option("--threads", f->o.threads, "Threads (0 = all logical CPUs)")
          ->check(threads_count())
          ->capture_default_str();
      sub.add_option("--consistency-steps", f->o.consistency_steps,
                     "Training steps of the consistency check (0 = skip)")
          ->check(integer_in(0, 100000))
          ->capture_default_str();
      sub.add_option("--consistency-tolerance", f->o.consistency_tolerance,
                     "Max |loss - loss_blas| over the curve")
          ->check(number_in(0, 1e6))
          ->capture_default_str();
      sub.add_option("--overhead-reps", f->o.overhead_reps,
                     "Iterations for the instrumentation-overhead figure (0 = skip)")
          ->check(integer_in(0, 100000))
          ->capture_default_str();
      sub.add_option("--data", f->data,
                     "MNIST-format folder for the consistency check (default: Fashion-MNIST)");
      sub.add_flag("--synthetic", f->o.synthetic, "Synthetic data for the consistency check");
      sub.add_option("--seed", f->o.seed, "Random seed (initial weights, batches, synthetic data)")
          ->check(integer_in(0, std::numeric_limits<int64_t>::max()))
          ->capture_default_str();
      sub.add_option("--out-dir", f->out_dir,
                     "Output folder (default a new results/mlp-bench_<timestamp>); must be new or "
                     "empty");
      sub.add_flag("--overwrite", f->o.overwrite,
                   "Replace an earlier run's --out-dir whole (only a folder nnperf wrote)");
      sub.add_option("--json", f->json, "Also write the {context, records} JSON here");
      sub.add_option("--csv", f->csv, "Also write the records CSV here");
      return [f] { return run(*f); };
    }}};

}  // namespace
}  // namespace nnperf::app
