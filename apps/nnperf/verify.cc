// `nnperf verify conv2d --problem mb1ic64ih56oc64kh3ph1 [--algorithm NAME]`: one problem against
// the float64 reference; PASS/FAIL/SKIP per algorithm, exit 1 on any FAIL.
#include <fmt/format.h>

#include <algorithm>

#include <limits>

#include "command.h"
#include "nnperf/core/error.h"
#include "nnperf/runs/conv_tools.h"

#include "flags.h"

namespace nnperf::app {
namespace {

struct Flags {
  std::string op, problem, algorithm;
  uint64_t seed = 1;
  int threads = 1;
};

int run(const Flags& f) {
  if (f.op != "conv2d") throw UsageError(fmt::format("verify '{}': expected conv2d", f.op));
  const ConvProblem p = [&] {
    try {
      return parse_conv_problem(f.problem);
    } catch (const Error& e) {
      throw UsageError(fmt::format("--problem: {}", e.what()));
    }
  }();
  std::vector<std::string> algos;
  if (!f.algorithm.empty()) algos.push_back(f.algorithm);
  const auto results = verify_conv(p, algos, f.seed, f.threads);
  fmt::print("problem {} ({:.3f} GFLOP, K = {}), seed {}, {} thread(s)\n", p.str(), p.flops() * 1e-9,
             p.icg() * p.kh * p.kw, f.seed, f.threads);
  fmt::print("bound: |y - ref| <= c * K * 2^-23 * sum|a*b| + 2^-23 * |ref|\n");
  int failed = 0;
  for (const auto& r : results) {
    if (r.status == "SKIP") {
      fmt::print("{:<22} SKIP  {}\n", r.algorithm, r.reason);
      continue;
    }
    fmt::print("{:<22} {}  max abs err {:.3e}  max rel err {:.3e}  worst err/bound {:.3f} (c = {})\n", r.algorithm,
               r.status, r.max_abs_err, r.max_rel_err, r.worst_bound_ratio, r.tolerance_factor);
    if (r.status == "FAIL") {
      ++failed;
      fmt::print("    {}\n    repro: nnperf verify conv2d --algorithm {} --problem {} --seed {} --threads {}\n",
                 r.reason, r.algorithm, p.str(), f.seed, f.threads);
    }
  }
  const bool none_checked = std::all_of(results.begin(), results.end(), [](const auto& r) { return r.status == "SKIP"; });
  if (none_checked) {
    fmt::print(stderr, "nnperf: error: no algorithm was checked on this problem: every one was skipped "
                       "(reasons above)\n");
    return 1;
  }
  return failed > 0 ? 1 : 0;
}

const Registrar reg{Command{"verify", 70, [](CLI::App& sub) -> std::function<int()> {
  sub.description("Check an op's algorithms against the float64 reference on one problem");
  auto f = std::make_shared<Flags>();
  sub.add_option("op", f->op, "Operation: conv2d")->required();
  sub.add_option("--problem", f->problem, "benchdnn-style descriptor, e.g. mb1ic64ih56oc64kh3ph1")->required();
  sub.add_option("--algorithm", f->algorithm, "One algorithm (default: all)");
  sub.add_option("--seed", f->seed, "Random seed of the inputs")->check(integer_in(0, std::numeric_limits<int64_t>::max()))->capture_default_str();
  sub.add_option("--threads", f->threads, "Threads (0 = all logical CPUs)")->check(threads_count())->capture_default_str();
  return [f] { return run(*f); };
}}};

}  // namespace
}  // namespace nnperf::app
