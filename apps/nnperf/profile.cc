// `nnperf profile`: the convolution-algorithm profiler, with ai3-8CuDNN's stages and CSV columns
// (see runs/profile_run.h), and
// `nnperf status [DIR]`: the progress of the sweeps under DIR.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>

#include "command.h"
#include "flags.h"
#include "nnperf/core/error.h"
#include "nnperf/kernels/conv/conv.h"
#include "nnperf/kernels/conv/conv_backward.h"
#include "nnperf/kernels/conv/conv_dispatch.h"
#include "nnperf/models/registry.h"
#include "nnperf/runs/profile_run.h"
#include "nnperf/runs/sweep.h"
#include "nnperf/runs/train_run.h"

namespace nnperf::app {
namespace {

struct Flags {
  ProfileOptions o;
  std::string sizes, output_dir, progress = "auto", device = "cpu", launch = "graph";
  bool no_layers = false;
  bool test = false, quick = false;  // the published profiler's stage flags
};

constexpr int64_t kMaxSizes = 100000;

std::vector<int64_t> parse_sizes(const std::string& s) {
  const auto colon = s.find(':');
  if (colon == std::string::npos) {
    auto list = parse_int_list(s, "--sizes");
    if (static_cast<int64_t>(list.size()) > kMaxSizes) {
      throw UsageError(
          fmt::format("--sizes: {} sizes; expected at most {}", list.size(), kMaxSizes));
    }
    for (std::size_t i = 0; i < list.size(); ++i) {
      const int64_t v = list[i];
      if (std::find(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(i), v) !=
          list.begin() + static_cast<std::ptrdiff_t>(i)) {
        throw UsageError(fmt::format("--sizes: size {} is given twice", v));
      }
      if (v > kMaxImageSide) {
        throw UsageError(
            fmt::format("--sizes: size {} is above the largest image side nnperf accepts ({})", v,
                        kMaxImageSide));
      }
    }
    return list;
  }
  // start:stop:step, inclusive of stop when it falls on a step.
  std::vector<int64_t> parts;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const std::size_t c = std::min(s.find(':', pos), s.size());
    const std::string part = s.substr(pos, c - pos);
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size() || v < 1) {
      throw UsageError(fmt::format(
          "--sizes '{}': expected a range start:stop:step of positive integers, got '{}'", s,
          part));
    }
    parts.push_back(v);
    pos = c + 1;
  }
  if (parts.size() != 3 || parts[0] > parts[1] || parts[1] > kMaxImageSide) {
    throw UsageError(fmt::format(
        "--sizes '{}': expected a list (32,64,224) or a range start:stop:step, sizes up to {}", s,
        kMaxImageSide));
  }
  if ((parts[1] - parts[0]) / parts[2] >= kMaxSizes) {
    throw UsageError(fmt::format("--sizes '{}': {} sizes; expected at most {}", s,
                                 (parts[1] - parts[0]) / parts[2] + 1, kMaxSizes));
  }
  std::vector<int64_t> out;
  for (int64_t v = parts[0]; v <= parts[1]; v += parts[2]) out.push_back(v);
  return out;
}

int run(Flags& f, const CLI::App& sub) {
  if (f.test + f.quick + (sub.count("--stage") > 0) > 1) {
    throw UsageError("--test, --quick and --stage each choose the stage: give one of them");
  }
  if (f.test) f.o.stage = "sanity";
  if (f.quick) f.o.stage = "quick";
  if (!f.sizes.empty()) {
    for (const char* flag : {"--num-sizes", "--min-size", "--max-size"}) {
      if (sub.count(flag) > 0) {
        throw UsageError(fmt::format("{}: describes the range --min-size..--max-size; --sizes {} lists the "
                                     "sizes itself (give one or the other)", flag, f.sizes));
      }
    }
    f.o.sizes = parse_sizes(f.sizes);
  }
  f.o.output_dir = f.output_dir;
  f.o.layers = !f.no_layers;
  f.o.device = f.device == "cuda" ? Device::kCuda : Device::kCpu;
  if (sub.count("--launch") > 0 && f.o.device != Device::kCuda)
    throw UsageError("--launch: applies to --device cuda only (the CPU has no kernel launches)");
  f.o.cuda_graph = f.launch == "graph";
  if (f.o.find_engines && (f.o.device != Device::kCuda || !is_conv_find(f.o.algorithm)))
    throw UsageError(
        "--engines: adds cuDNN's graph-API engines to find's candidates; it needs --device cuda "
        "and --algorithm find");
  f.o.progress = parse_progress_mode(f.progress);
  f.o.command_line = command_line();
  const ProfileResult r = run_profile(f.o);
  fmt::print("outputs: {} ({} sizes profiled, {} already done)\n", r.output_dir.string(),
             r.sizes_done, r.sizes_skipped);
  if (r.layers_other_algorithm > 0) {
    fmt::print(
        "note: {} requested, but {} of {} conv layers ran another algorithm ({}); first: {}{}\n",
        f.o.algorithm, r.layers_other_algorithm, r.conv_layers, r.algorithms_used, r.other_reason,
        f.o.strict ? "" : " (--strict refuses instead)");
  } else if (r.conv_layers > 0) {
    fmt::print("conv layers: {} ({})\n", r.conv_layers, r.algorithms_used);
  }
  return 0;
}

void list_models() {
  fmt::print("{:<14} {:>13}  {:<12} {:>8}  {}\n", "model", "parameters", "input", "min size",
             "description");
  for (const auto& m : model_registry()) {
    fmt::print("{:<14} {:>13}  {:<12} {:>8}  {}\n", m.name, m.params,
               fmt::format("{}x{}x{}", m.default_input[0], m.default_input[1], m.default_input[2]),
               m.min_input_size, m.description);
  }
}

void list_algorithms() {
  fmt::print("convolution algorithms (--algorithm):\n");
  for (const auto& a : conv_algorithms()) fmt::print("  {:<22} {}\n", a.name, a.description);
  fmt::print("  {:<22} {}\n", "guess",
             "per layer, the supported algorithm with the lowest modelled cost");
  fmt::print("  {:<22} {}\n", "find",
             "per layer shape, time the supported algorithms in order of modelled cost and keep "
             "the fastest, cached (one modelled at over 8x the best time so far is not timed; "
             "--find-exhaustive times all)");
  fmt::print("what each supports (why_not on representative layers):\n");
  const char* probes[] = {"mb1ic64ih56oc64kh3ph1",     "mb1ic64ih56oc64kh3sh2ph1",
                          "mb1ic3ih224oc64kh7sh2ph3",  "mb1ic256ih56oc64kh1",
                          "g32mb1ic32ih112oc32kh3ph1", "mb1ic64ih56oc64kh3ph2dh2"};
  for (const auto& a : conv_algorithms()) {
    std::string line;
    for (const char* d : probes) {
      const std::string why = a.why_not(parse_conv_problem(d));
      line += fmt::format("\n      {:<28} {}", d, why.empty() ? "yes" : "no: " + why);
    }
    fmt::print("  {}:{}\n", a.name, line);
  }
  for (ConvPass pass : {ConvPass::kBackwardData, ConvPass::kBackwardWeights}) {
    fmt::print(
        "{} algorithms (training; --algorithm NAME applies where this pass has it, guess "
        "and find per pass):\n",
        to_string(pass));
    for (const auto& a : conv_backward_algorithms(pass)) {
      std::string no;
      for (const char* d : probes) {
        if (!a.why_not(parse_conv_problem(d)).empty())
          no += (no.empty() ? "" : ", ") + std::string(d);
      }
      fmt::print("  {:<22} {}{}\n", a.name, a.description, no.empty() ? "" : "; not: " + no);
    }
  }
}

// What is profiled: the listings, the model, the algorithm, the device, the pass.
void add_what_flags(CLI::App& sub, Flags& f) {
  ProfileOptions& o = f.o;
  sub.add_flag_callback(
      "--list-models",
      [] {
        list_models();
        throw CLI::Success();
      },
      "List the models and exit");
  sub.add_flag_callback(
      "--list-algorithms",
      [] {
        list_algorithms();
        throw CLI::Success();
      },
      "List the convolution algorithms and what they support, and exit");
  sub.add_option("--model", o.model, "Model (see --list-models)")
      ->check(known_model())
      ->capture_default_str();
  sub.add_option("--algorithm", o.algorithm,
                 "Convolution algorithm, guess or find (see --list-algorithms; with --device "
                 "cuda one of cuDNN's)")
      ->capture_default_str();
  sub.add_option("--device", f.device,
                 "cpu, or cuda: the model on the GPU, convolutions by cuDNN, CUDA-event "
                 "timing, NVML energy (inference)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  sub.add_option("--launch", f.launch,
                 "With --device cuda: graph (each pass captured once as a CUDA graph and "
                 "launched in one call: the GPU's time, without the host's launch gaps) or "
                 "eager (kernel by kernel, as a framework without graphs runs)")
      ->check(CLI::IsMember({"graph", "eager"}))
      ->capture_default_str();
  sub.add_flag("--engines", o.find_engines,
               "With --device cuda --algorithm find: cuDNN's graph-API engine configurations "
               "(FP32, no TF32) are find's candidates beside its eight algorithms, each timed "
               "as launched");
  sub.add_option("--pass", o.pass,
                 "inference (forward passes) or train (training steps: forward, loss, backward, "
                 "SGD update; per layer forward + backward, loss and update as rows)")
      ->capture_default_str();
  sub.add_flag("--strict", o.strict,
               "Fail on a layer the algorithm cannot serve instead of falling back");
  sub.add_flag("--fold-bn", o.fold_bn, "Fold BatchNorm into the preceding convolution");
  sub.add_flag("--find-exhaustive", o.find_exhaustive,
               "With find: time every supported algorithm in full (default: skip ones modelled "
               "at over 8x the best)");
  sub.add_option("--seed", o.seed, "Random seed of the weights and inputs")
      ->check(integer_in(0, std::numeric_limits<int64_t>::max()))
      ->capture_default_str();
}

// The sweep: stage, sizes, batch, passes, threads, power.
void add_sweep_flags(CLI::App& sub, Flags& f) {
  ProfileOptions& o = f.o;
  sub.add_option("--stage", o.stage,
                 "sanity (1 size, warm-up 1, measure 2) | quick (10, 5, 10) | full (100, 10, 20)")
      ->capture_default_str();
  sub.add_flag("--test", f.test, "Same as --stage sanity (the published profiler's flag)");
  sub.add_flag("--quick", f.quick, "Same as --stage quick (the published profiler's flag)");
  sub.add_option("--num-sizes", o.num_sizes, "Number of sizes between --min-size and --max-size")
      ->check(integer_in(1, 100000));
  sub.add_option("--sizes", f.sizes, "Explicit sizes: 32,64,224 or start:stop:step");
  sub.add_option("--min-size", o.min_size, "Smallest input size")
      ->check(integer_in(1, kMaxImageSide))
      ->capture_default_str();
  sub.add_option("--max-size", o.max_size, "Largest input size")
      ->check(integer_in(1, kMaxImageSide))
      ->capture_default_str();
  sub.add_option("--batch-size", o.batch_size, "Batch size")
      ->check(integer_in(1, kMaxBatch))
      ->capture_default_str();
  sub.add_option("--warmup", o.warmup, "Warm-up passes per size (default: the stage's)")
      ->check(integer_in(0, 10000));
  sub.add_option("--measure", o.measure, "Measured passes per size (default: the stage's)")
      ->check(integer_in(1, 100000));
  sub.add_option("--threads", o.threads, "Threads (0 = all logical CPUs)")
      ->check(threads_count())
      ->capture_default_str();
  sub.add_flag("--no-layers", f.no_layers, "Skip the per-layer passes");
  sub.add_option("--power-source", o.power_source,
                 "auto (the run's device: RAPL for a CPU run, NVML for a CUDA run; none when "
                 "unreadable) | rapl | nvml (an error when unreadable) | none (no power or "
                 "energy: a CUDA run then has no energy window of extra passes)")
      ->capture_default_str();
}

// Where it goes and how it shows.
void add_output_flags(CLI::App& sub, Flags& f) {
  ProfileOptions& o = f.o;
  sub.add_option("--output-dir", f.output_dir,
                 "Default results/<stage>/<model>_<algorithm>[_train][_cuda][_eager][_engines]_"
                 "<machine>/");
  sub.add_flag("--resume", o.resume,
               "Continue an interrupted sweep in --output-dir (same setup only)");
  sub.add_flag("--overwrite", o.overwrite,
               "Replace an earlier sweep's --output-dir whole (only a folder nnperf wrote)");
  sub.add_option("--machine", o.machine,
                 "Machine name in the default output folder (default: hostname)");
  sub.add_option("--progress", f.progress, "auto | bar | lines | quiet")->capture_default_str();
}

const Registrar reg{Command{
    "profile", 40, [](CLI::App& sub) -> std::function<int()> {
      sub.description(
          "The convolution-algorithm profiler: CNN inference (or, with --pass train, training "
          "steps) per layer with one convolution algorithm over input sizes");
      auto f = std::make_shared<Flags>();
      add_what_flags(sub, *f);
      add_sweep_flags(sub, *f);
      add_output_flags(sub, *f);
      CLI::App* self = &sub;
      return [f, self] { return run(*f, *self); };
    }}};

const Registrar reg_status{Command{
    "status", 45, [](CLI::App& sub) -> std::function<int()> {
      sub.description(
          "Show the progress of a sweep folder (nnperf sweep: every cell's state, the time left; "
          "merges when all are done), or of the profile sweeps under a folder (default: results)");
      auto dir = std::make_shared<std::string>("results");
      sub.add_option("dir", *dir, "Folder to scan")->capture_default_str();
      return [dir] {
        if (std::filesystem::exists(std::filesystem::path(*dir) / "sweep.json")) {
          fmt::print("{}", sweep_status(*dir));
        } else {
          fmt::print("{}", profile_status(*dir));
        }
        return 0;
      };
    }}};

}  // namespace
}  // namespace nnperf::app
