// `nnperf report DIR`: report.md and a self-contained report.html rebuilt from the results saved
// under DIR (report/report.h); nothing is re-run.
#include "nnperf/report/report.h"

#include <fmt/format.h>

#include "command.h"
#include "nnperf/core/error.h"
#include "nnperf/runs/rerender.h"

namespace nnperf::app {
namespace {

struct Flags {
  std::string dir, out_dir;
};

int run(const Flags& f) {
  // The outputs rendered from saved records first (runs/rerender.h), so the report has them.
  for (const std::string& line : rerender_missing_outputs(f.dir)) fmt::print("{}\n", line);
  const ReportFiles r = write_report(f.dir, f.out_dir);
  fmt::print("{} sections, {} tables, {} figures\nwrote {}\nwrote {}\n", r.sections, r.tables,
             r.figures, r.markdown.string(), r.html.string());
  return 0;
}

const Registrar reg{Command{
    "report", 64, [](CLI::App& sub) -> std::function<int()> {
      sub.description(
          "Write report.md and a self-contained report.html from a results folder (peaks, "
          "rooflines, Nsight Compute imports, profiles, mlp-bench, activation studies, "
          "complexity, training runs, the --iters driver's metrics, one-step profiles), "
          "rebuilt from saved files (first rebuilding, from their JSON records, the training, "
          "mlp-bench, profile and roofline CSVs, plots and traces, and activation "
          "studies' summaries and reports, that are missing)");
      auto f = std::make_shared<Flags>();
      sub.add_option("dir", f->dir, "Results folder (searched recursively)")->required();
      sub.add_option("--out-dir", f->out_dir, "Where to write the report (default: DIR)");
      return [f] { return run(*f); };
    }}};

}  // namespace
}  // namespace nnperf::app
