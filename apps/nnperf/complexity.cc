// `nnperf complexity`: per-layer parameters, MACs, FLOPs, minimum bytes and arithmetic intensity
// of a model from its shapes (nothing is run), forward or a whole training iteration; totals as
// torchinfo prints them; the roofline project's summary.json for several models and batch sizes.
// Parsing, validation and printing only: the counts are analysis/complexity.h.
#include "nnperf/analysis/complexity.h"

#include <fmt/format.h>

#include <filesystem>

#include "command.h"
#include "flags.h"
#include "nnperf/core/error.h"
#include "nnperf/io/csv.h"
#include "nnperf/io/files.h"
#include "nnperf/io/run_info.h"
#include "nnperf/kernels/activations.h"
#include "nnperf/models/registry.h"
#include "nnperf/runs/train_run.h"

namespace nnperf::app {
namespace {

struct Flags {
  std::string model, models, batch_sizes, hidden, activation;
  int64_t input_size = 0, batch_size = 1;
  std::string optimizer;
  bool training = false, fold_bn = false;
  std::string json, csv, summary_json;
};

// What the flags ask for, validated.
struct Request {
  std::vector<std::string> models;
  std::vector<int64_t> batches;
  int64_t input_size = 0;  // 0: each model's default
  ComplexityOptions options;
  ModelOptions model_options;
};

Request validate(const Flags& f) {
  Request r;
  const char* model_flag = f.models.empty() ? "--model" : "--models";
  if (f.model.empty() && f.models.empty()) {
    throw UsageError(fmt::format("--model: expected one of {} (or --models a,b,c)", model_names()));
  }
  bool has_mlp = false;
  for (const std::string& name : split_list(f.models.empty() ? f.model : f.models)) {
    try {
      r.models.emplace_back(find_model(name).name);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("{}: {}", model_flag, e.what()));
    }
    has_mlp = has_mlp || r.models.back() == "mlp";
  }
  if (f.input_size > 0) {
    r.input_size = f.input_size;
    for (const std::string& name : r.models) {
      const ModelEntry& m = find_model(name);
      if (r.input_size < m.min_input_size) {
        throw UsageError(fmt::format(
            "--input-size {}: {} needs at least {} (its smallest input "
            "is {}x{})",
            r.input_size, m.name, m.min_input_size, m.min_input_size, m.min_input_size));
      }
    }
  }
  if (f.batch_sizes.empty()) {
    r.batches = {f.batch_size};
  } else {
    r.batches = parse_int_list(f.batch_sizes, "--batch-sizes");
  }
  if ((!f.hidden.empty() || !f.activation.empty()) && !has_mlp) {
    throw UsageError(fmt::format("{}: applies to the mlp model only",
                                 f.hidden.empty() ? "--activation" : "--hidden"));
  }
  if (!f.hidden.empty()) r.model_options.hidden = parse_int_list(f.hidden, "--hidden");
  if (!f.activation.empty()) r.model_options.activation = find_activation(f.activation).name;
  r.options.training = f.training;
  if (!f.optimizer.empty()) {
    if (!f.training)
      throw UsageError("--optimizer: counts the optimizer step of --training; add --training");
    try {
      r.options.optimizer = find_optimizer_cost(f.optimizer).name;
    } catch (const UsageError& e) {
      throw UsageError(std::string("--") + e.what());
    }
  }
  if (f.fold_bn && f.training) {
    throw UsageError("--fold-bn: folding BatchNorm is for inference; drop it or --training");
  }
  r.model_options.fold_bn = f.fold_bn;
  const std::size_t cases = r.models.size() * r.batches.size();
  for (const auto& [path, flag] : {std::pair{f.json, "--json"}, std::pair{f.csv, "--csv"}}) {
    if (!path.empty() && cases > 1) {
      throw UsageError(
          fmt::format("{}: per-layer records are for one model at one batch size, "
                      "got {} x {} (use --summary-json)",
                      flag, r.models.size(), r.batches.size()));
    }
    check_output_file(path, flag);
  }
  check_output_file(f.summary_json, "--summary-json");
  check_distinct_outputs(
      {{"--json", f.json}, {"--csv", f.csv}, {"--summary-json", f.summary_json}});
  return r;
}

int run(const Flags& f) {
  const Request r = validate(f);
  if (r.models.size() == 1 && r.batches.size() == 1) {
    const ModelEntry& m = find_model(r.models.front());
    const ModelComplexity c =
        model_complexity(m.name, r.input_size > 0 ? r.input_size : m.default_input[1],
                         r.batches.front(), r.options, r.model_options);
    nlohmann::json doc = complexity_json(c);
    doc["context"].update(run_context());
    doc["context"]["command"] = command_line();
    fmt::print("{}", complexity_table(doc));
    if (!f.json.empty()) {
      write_json_atomic(f.json, doc);
      fmt::print("wrote {}\n", f.json);
    }
    if (!f.csv.empty()) {
      const ComplexityCsv table = complexity_csv(doc);
      CsvWriter csv(f.csv, table.header);
      for (const auto& row : table.rows) csv.row(row);
      fmt::print("wrote {}\n", f.csv);
    }
  }
  if (r.models.size() * r.batches.size() > 1 || !f.summary_json.empty()) {
    const nlohmann::json summary =
        complexity_summary(r.models, r.batches, r.input_size, r.model_options);
    if (r.models.size() * r.batches.size() > 1) fmt::print("{}", complexity_summary_table(summary));
    if (!f.summary_json.empty()) {
      write_json_atomic(f.summary_json, summary);
      fmt::print("wrote {}\n", f.summary_json);
    }
  }
  return 0;
}

const Registrar reg{Command{
    "complexity", 50, [](CLI::App& sub) -> std::function<int()> {
      sub.description(
          "Count a model's parameters, MACs, FLOPs, minimum bytes and arithmetic intensity per "
          "layer from its shapes (forward, or a training iteration); totals as torchinfo prints "
          "them; summary.json as the roofline project (JcxaL/cloudml-project1) writes it");
      auto f = std::make_shared<Flags>();
      auto* model = sub.add_option("--model", f->model, "Model: " + model_names());
      auto* models = sub.add_option("--models", f->models,
                                    "Several models, comma-separated (a summary per model and "
                                    "batch size)")
                         ->check(list_items());
      model->excludes(models);
      sub.add_option("--input-size", f->input_size, "Input height = width (default: the model's, 224; mlp 28)")
          ->check(integer_in(1, kComplexityMaxInputSize));
      auto* batch = sub.add_option("--batch-size", f->batch_size, "Batch size")
                        ->check(integer_in(1, kComplexityMaxBatch))
                        ->capture_default_str();
      auto* batches =
          sub.add_option("--batch-sizes", f->batch_sizes, "Several batch sizes: 16,32,64,128")
              ->check(integer_list_in(1, kComplexityMaxBatch, /*distinct=*/true));
      batch->excludes(batches);
      sub.add_flag("--training", f->training,
                   "Count a training iteration: backward (data and weight gradients per layer) "
                   "and the optimizer step");
      sub.add_option("--optimizer", f->optimizer,
                     "With --training: sgd (with momentum, the default) or adam");
      sub.add_flag("--fold-bn", f->fold_bn,
                   "Fold each BatchNorm after a conv into it (inference only)");
      sub.add_option("--hidden", f->hidden,
                     "mlp: hidden widths, comma-separated (default 512,256,128,64)");
      sub.add_option("--activation", f->activation, "mlp: activation (" + activation_names() + ")")
          ->check(known_activation());
      sub.add_option("--json", f->json, "Write the records {context, records} to this JSON file");
      sub.add_option("--csv", f->csv, "Write one row per layer to this CSV file");
      sub.add_option("--summary-json", f->summary_json,
                     "Write summary.json[model][batch] (params, mult_adds_per_batch_forward, "
                     "mult_adds_per_sample_forward, flops_per_batch_forward, "
                     "flops_per_sample_forward)");
      return [f] { return run(*f); };
    }}};

}  // namespace
}  // namespace nnperf::app
