// `nnperf lab`: the main job (runs/lab.h): ceilings, MLP benchmark, activation study, CNN profile,
// complexity, roofline and report under one folder; prints the report's path.
#include "nnperf/runs/lab.h"

#include <fmt/format.h>

#include "command.h"
#include "flags.h"
#include "nnperf/core/error.h"
#include "nnperf/models/registry.h"

namespace nnperf::app {
namespace {

struct Flags {
  LabOptions o;
  std::string out_dir, data, algorithms, progress = "auto";
};

int run(Flags& f) {
  f.o.out_dir = f.out_dir;
  f.o.data_dir = f.data;
  f.o.progress = parse_progress_mode(f.progress);
  if (f.o.progress == Progress::Mode::kBar) {
    throw UsageError("--progress bar: the lab's stages print lines; expected auto, lines or quiet");
  }
  f.o.command_line = command_line();
  if (!f.algorithms.empty()) f.o.algorithms = split_list(f.algorithms);
  const LabResult r = run_lab(f.o);
  fmt::print("report: {}\n", r.report_html.string());
  fmt::print("        {}\n", r.report_markdown.string());
  return 0;
}

const Registrar reg{Command{
    "lab", 5, [](CLI::App& sub) -> std::function<int()> {
      sub.description(
          "The main job: measure this machine's ceilings, benchmark the MLP implementations, run "
          "the quick "
          "activation study, profile a CNN with three convolution algorithms, count, put it all on "
          "a roofline "
          "and write one report");
      auto f = std::make_shared<Flags>();
      sub.add_option("--out-dir", f->out_dir, "Output folder (default: a new results/lab_<time>)");
      sub.add_flag("--overwrite", f->o.overwrite, "Replace an earlier lab's --out-dir whole");
      sub.add_option("--threads", f->o.threads, "Threads (0 = all logical CPUs)")
          ->check(threads_count());
      sub.add_option("--data", f->data,
                     "MNIST-format data folder (default: Fashion-MNIST from Debian's package)");
      sub.add_flag("--synthetic", f->o.synthetic, "Synthetic data instead of a data set");
      sub.add_option("--model", f->o.model, "The CNN to profile")
          ->check(known_model())
          ->capture_default_str();
      sub.add_option("--algorithms", f->algorithms,
                     "Convolution algorithms to profile (default: gemm,winograd,find)")
          ->check(list_items());
      sub.add_option("--progress", f->progress, "auto | lines | quiet")->capture_default_str();
      return [f] { return run(*f); };
    }}};

}  // namespace
}  // namespace nnperf::app
