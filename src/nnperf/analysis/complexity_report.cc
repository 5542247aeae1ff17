// Complexity records rendered (complexity.h): the JSON of a ModelComplexity, and the table, CSV
// and summary table read back from that JSON only, so saved records re-render without a model;
// the counting convention as written into every record.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "nnperf/analysis/complexity.h"
#include "nnperf/core/error.h"

namespace nnperf {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string dims_text(const Shape& s) {
  std::string out;
  for (int i = 0; i < s.rank(); ++i) out += (i > 0 ? "x" : "") + std::to_string(s[i]);
  return out;
}

std::string shapes_text(const std::vector<Shape>& shapes) {
  std::string out;
  for (std::size_t i = 0; i < shapes.size(); ++i) out += (i > 0 ? "+" : "") + dims_text(shapes[i]);
  return out;
}

// A count that exists (JSON number) or is missing (NaN: null).
nlohmann::json count_json(double v) { return std::isnan(v) ? nlohmann::json() : nlohmann::json(v); }

std::string si(double v, int decimals = 2) {
  if (std::isnan(v)) return "?";
  const char* suffix[] = {"", "K", "M", "G", "T", "P", "E", "Z"};
  int i = 0;
  double a = std::fabs(v);
  while (a >= 1000.0 && i < 7) {
    a /= 1000.0;
    v /= 1000.0;
    ++i;
  }
  if (i == 0 && v == std::floor(v)) return fmt::format("{:.0f}", v);
  return fmt::format("{:.{}f}{}", v, decimals, suffix[i]);
}

// torchinfo's automatic units for counts: T, G, M, K or none.
double unit_scale(double v) {
  const double a = std::fabs(v);
  return a >= 1e12 ? 1e12 : a >= 1e9 ? 1e9 : a >= 1e6 ? 1e6 : a >= 1e3 ? 1e3 : 1.0;
}
std::string unit_prefix(double v) {
  const double s = unit_scale(v);
  return s == 1e12 ? "T" : s == 1e9 ? "G" : s == 1e6 ? "M" : s == 1e3 ? "K" : "";
}

// Words of `text` on lines of at most `width` characters, each line starting with `indent`
// (the first with `first`).
std::string wrap(const std::string& text, std::size_t width, const std::string& first,
                 const std::string& indent) {
  std::string out = first, line_prefix = first;
  std::size_t column = first.size();
  std::size_t pos = 0;
  bool line_empty = true;
  while (pos < text.size()) {
    const std::size_t space = std::min(text.find(' ', pos), text.size());
    const std::string word = text.substr(pos, space - pos);
    pos = space + 1;
    if (word.empty()) continue;
    if (!line_empty && column + 1 + word.size() > width) {
      out += "\n" + indent;
      column = indent.size();
      line_empty = true;
    }
    if (!line_empty) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
    line_empty = false;
  }
  return out + "\n";
}

std::string with_commas(int64_t n) {
  const std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out = n < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// Reads a count from a record: NaN for null or absent.
double get_number(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? kNaN : it->get<double>();
}

std::string csv_value(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  if (v.is_number()) return fmt::format("{}", v.get<double>());
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

constexpr const char* kRecordColumns[] = {"node",
                                          "layer",
                                          "layer_type",
                                          "describe",
                                          "input_shape",
                                          "output_shape",
                                          "params",
                                          "macs",
                                          "flops",
                                          "bytes",
                                          "intensity_flops_per_byte",
                                          "output_bytes",
                                          "torchinfo_mult_adds",
                                          "counted",
                                          "note"};
constexpr const char* kTrainingColumns[] = {
    "data_gradient",   "flops_backward_data", "flops_backward_weights", "bytes_backward",
    "optimizer_flops", "optimizer_bytes",     "flops_iteration",        "bytes_iteration"};

}  // namespace

nlohmann::json complexity_convention() {
  nlohmann::json j;
  j["flops_per_mac"] = 2;
  j["bytes_per_value"] = 4;
  j["summary"] = {
      "FLOPs = 2 x MACs; MACs are Conv2d and Linear multiply-adds only, as torchvision's "
      "published figures count them (its GFLOPS column is GMACs)",
      "per element: BatchNorm 2 FLOPs (5 when training, 0 when folded into the conv), ReLU 1 "
      "comparison = 1 FLOP, ReLU6 2, Add 1 per extra input; per output: bias 1, max pool k*k-1 "
      "comparisons, avg pool k*k adds + 1 multiply; Concat, Flatten, inference Dropout 0",
      "bytes = the minimum moved: fp32 inputs + weights + outputs, each once; intensity = "
      "FLOPs / bytes; a layer type without a formula is flagged, not counted as zero",
      "training: backward per layer = data gradient (only for inputs that depend on a parameter: "
      "never for the first layer) + weight gradient, e.g. conv 2 x MACs each; optimizer sgd "
      "20 B and 4 FLOPs, adam 28 B and 13 FLOPs per parameter",
  };
  j["rules"] = {
      {"Conv2d",
       "MACs = N*oc*oh*ow*(ic/g)*kh*kw; FLOPs = 2*MACs + N*oc*oh*ow with a bias or a folded "
       "BatchNorm; backward: data 2*MACs, weights 2*MACs + N*oc*oh*ow with a bias; backward "
       "reads dY, the input (for dW) and the weights (for dX)"},
      {"Linear",
       "MACs = N*in*out; FLOPs = 2*MACs + N*out with a bias; backward: data 2*MACs, weights "
       "2*MACs + N*out with a bias"},
      {"BatchNorm2d",
       "inference 2 FLOPs per element (x*scale + shift; none when folded into the conv before "
       "it); training forward 5 (sum, sum of squares, scale and shift), backward data 4 "
       "(x_hat*mean(dy*x_hat), two subtractions, scale), weights 5 (x_hat 2, dy*x_hat, two "
       "sums); per-channel work (O(C)) is not counted"},
      {"Activation",
       "forward: the activation table's FLOPs per element (ReLU 1 comparison, exp/erf/tanh/"
       "log1p 1 each), ReLU6 2; backward per element: ReLU 1, ReLU6 2, LeakyReLU 2, ELU 3, "
       "Sigmoid 3, Tanh 4, GELU 11, SiLU 9, Mish 13; backward reads the saved input"},
      {"MaxPool2d",
       "(k*k-1) comparisons per output, padded positions included; backward 1 add per output "
       "(into its argmax), reading one saved int32 index per output"},
      {"AvgPool2d", "k*k adds + 1 multiply per output; backward the same"},
      {"AdaptiveAvgPool2d",
       "per output: its window's size in adds (PyTorch's adaptive windows) + 1 multiply; "
       "GlobalAvgPool is the 1x1 case (h*w adds + 1 per channel); backward the same"},
      {"Add", "(inputs-1) adds per element: 1 for a residual sum; backward 0 (dY passes through)"},
      {"Concat", "0 FLOPs (a copy); backward 0 (each input takes its slice)"},
      {"Flatten", "0 FLOPs (a copy in nnperf, a view in PyTorch); bytes still counted"},
      {"Dropout",
       "inference 0 (identity); training 1 multiply per element forward and backward (mask "
       "generation not counted), the mask read by backward"},
      {"fan_out",
       "an output read by k consumers has k-1 gradient additions (numel FLOPs, 3*numel values "
       "each), counted on the consumer that adds it (the earlier one, as nnperf's graph runs "
       "backward)"},
      {"data_gradient",
       "dL/dinput is computed only for inputs that depend on a parameter (autograd's "
       "requires_grad): the first layer, and parameter-free layers before it, need none"},
      {"bytes",
       "minimum bytes: fp32 inputs + weights + outputs of the layer, each moved once (perfect "
       "reuse); backward: dY, the saved tensors and the weights read, dX and dW written"},
      {"optimizer",
       "SGD with momentum: read w, g, m and write w, m = 5 values (20 B) and 4 FLOPs (m = mu*m "
       "+ g; w -= lr*m) per parameter; Adam: read w, g, m, v and write w, m, v = 7 values (28 B) "
       "and 13 FLOPs per parameter; weight decay would add 2 FLOPs per parameter"},
      {"torchinfo",
       "torchinfo's Total mult-adds also counts, per sample, one per BatchNorm parameter and "
       "one per bias element at every output position (the roofline project's summary.json "
       "figures are torchinfo's); its Forward/backward pass size is 2 x the outputs of layers "
       "with parameters"},
      {"memory",
       "forward activations: every node's output; backward: the gradient of every output that "
       "depends on a parameter; parameters, and when training their gradients and the "
       "optimizer state (SGD 1, Adam 2 values per parameter)"},
  };
  return j;
}

namespace {

nlohmann::json totals_json(const ModelComplexity& c) {
  const bool training = c.options.training;
  const ComplexityTotals& t = c.totals;
  const double batch = static_cast<double>(c.batch());
  nlohmann::json totals = {
      {"params", t.params},
      {"trainable_params", t.trainable_params},
      {"non_trainable_params", t.params - t.trainable_params},
      {"macs_per_batch_forward", t.macs},
      {"macs_per_sample_forward", t.macs / batch},
      {"flops_per_batch_forward", t.flops},
      {"flops_per_sample_forward", t.flops / batch},
      {"bytes_forward", t.bytes},
      {"intensity_forward_flops_per_byte", t.bytes > 0 ? t.flops / t.bytes : 0.0},
      {"input_bytes", t.input_bytes},
      {"forward_activation_bytes", t.forward_activation_bytes},
      {"backward_activation_bytes", t.backward_activation_bytes},
      {"param_bytes", t.param_bytes},
      {"estimated_total_bytes", t.input_bytes + t.forward_activation_bytes +
                                    t.backward_activation_bytes + t.param_bytes + t.gradient_bytes +
                                    t.optimizer_state_bytes},
      {"torchinfo_mult_adds_per_batch", t.torchinfo_mult_adds},
      {"torchinfo_mult_adds_per_sample", t.torchinfo_mult_adds / batch},
      {"torchinfo_forward_backward_bytes", t.torchinfo_forward_backward_bytes},
      {"torchinfo_estimated_total_bytes",
       t.input_bytes + t.torchinfo_forward_backward_bytes + t.param_bytes},
      {"uncounted_layers", t.uncounted_layers},
  };
  if (training) {
    totals["flops_backward_data"] = t.flops_backward_data;
    totals["flops_backward_weights"] = t.flops_backward_weights;
    totals["bytes_backward"] = t.bytes_backward;
    totals["optimizer_flops"] = t.optimizer_flops;
    totals["optimizer_bytes"] = t.optimizer_bytes;
    totals["gradient_bytes"] = t.gradient_bytes;
    totals["optimizer_state_bytes"] = t.optimizer_state_bytes;
    totals["flops_per_iteration"] = t.flops_iteration();
    totals["flops_per_sample_iteration"] = t.flops_iteration() / batch;
    totals["bytes_per_iteration"] = t.bytes_iteration();
    totals["intensity_iteration_flops_per_byte"] =
        t.bytes_iteration() > 0 ? t.flops_iteration() / t.bytes_iteration() : 0.0;
  }
  return totals;
}

nlohmann::json layer_json(const LayerComplexity& l, bool training) {
  nlohmann::json r = {
      {"node", l.node},
      {"layer", l.name},
      {"layer_type", l.type},
      {"describe", l.describe},
      {"input_shape", shapes_text(l.input_shapes)},
      {"output_shape", dims_text(l.output_shape)},
      {"params", l.params},
      {"macs", count_json(l.macs)},
      {"flops", count_json(l.flops)},
      {"bytes", count_json(l.bytes)},
      {"intensity_flops_per_byte", count_json(l.intensity_flops_per_byte)},
      {"output_bytes", l.output_bytes},
      {"torchinfo_mult_adds", count_json(l.torchinfo_mult_adds)},
      {"counted", l.counted && (!training || l.backward_counted)},
      {"note", l.note},
  };
  if (training) {
    r["data_gradient"] = l.data_gradient;
    r["flops_backward_data"] = count_json(l.flops_backward_data);
    r["flops_backward_weights"] = count_json(l.flops_backward_weights);
    r["bytes_backward"] = count_json(l.bytes_backward);
    r["optimizer_flops"] = l.optimizer_flops;
    r["optimizer_bytes"] = l.optimizer_bytes;
    r["flops_iteration"] = count_json(l.flops_iteration());
    r["bytes_iteration"] = count_json(l.bytes_iteration());
  }
  return r;
}

}  // namespace

nlohmann::json complexity_json(const ModelComplexity& c) {
  const bool training = c.options.training;
  nlohmann::json context;
  context["tool"] = "nnperf complexity";
  context["model"] = c.model;
  context["input_shape"] = c.input.dims();
  context["batch_size"] = c.batch();
  context["input_size"] = c.input.rank() == 4 ? c.input[2] : c.input[c.input.rank() - 1];
  context["training"] = training;
  context["optimizer"] = training ? nlohmann::json(c.options.optimizer) : nlohmann::json();
  context["fold_bn"] = c.fold_bn;
  context["convention"] = complexity_convention();
  context["totals"] = totals_json(c);
  nlohmann::json records = nlohmann::json::array();
  for (const LayerComplexity& l : c.layers) records.push_back(layer_json(l, training));
  return {{"context", std::move(context)}, {"records", std::move(records)}};
}

ComplexityCsv complexity_csv(const nlohmann::json& doc) {
  const bool training = doc.at("context").value("training", false);
  ComplexityCsv csv;
  for (const char* col : kRecordColumns) csv.header.emplace_back(col);
  if (training) {
    for (const char* col : kTrainingColumns) csv.header.emplace_back(col);
  }
  for (const nlohmann::json& r : doc.at("records")) {
    std::vector<std::string> row;
    for (const std::string& col : csv.header) {
      const auto it = r.find(col);
      row.push_back(it == r.end() ? "" : csv_value(*it));
    }
    csv.rows.push_back(std::move(row));
  }
  return csv;
}

namespace {

// The convention's summary and the line naming the model, input and mode.
std::string table_heading(const nlohmann::json& ctx, bool training) {
  std::string out = "Counting convention (docs/complexity.md):\n";
  for (const auto& line : ctx.at("convention").at("summary")) {
    out += wrap(line.get<std::string>(), 100, "  - ", "    ");
  }
  std::string input;
  for (const auto& d : ctx.at("input_shape")) input += (input.empty() ? "" : "x") + d.dump();
  out += fmt::format(
      "\n{}: input {} (batch {}), {}{}\n\n", ctx.at("model").get<std::string>(), input,
      ctx.at("batch_size").get<int64_t>(),
      training ? "training with " + ctx.at("optimizer").get<std::string>() : "inference",
      ctx.value("fold_bn", false) ? ", BatchNorm folded" : "");
  return out;
}

// One table row per record, and its note (why a layer is not counted; empty otherwise).
struct LayerRows {
  std::vector<std::string> header = {"layer", "type",  "input", "output", "params",
                                     "MACs",  "FLOPs", "bytes", "FLOP/B"};
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> notes;
};

LayerRows layer_rows(const nlohmann::json& records, bool training) {
  LayerRows t;
  if (training) {
    for (const char* h : {"bwd data FLOPs", "bwd weight FLOPs", "bwd bytes", "optim bytes"}) {
      t.header.emplace_back(h);
    }
  }
  for (const nlohmann::json& r : records) {
    const double intensity = get_number(r, "intensity_flops_per_byte");
    std::vector<std::string> row = {
        r.at("layer").get<std::string>(),
        r.at("layer_type").get<std::string>(),
        r.at("input_shape").get<std::string>(),
        r.at("output_shape").get<std::string>(),
        with_commas(r.at("params").get<int64_t>()),
        si(get_number(r, "macs")),
        si(get_number(r, "flops")),
        si(get_number(r, "bytes")),
        std::isnan(intensity) ? "?" : fmt::format("{:.2f}", intensity),
    };
    if (training) {
      for (const char* key :
           {"flops_backward_data", "flops_backward_weights", "bytes_backward", "optimizer_bytes"}) {
        row.push_back(si(get_number(r, key)));
      }
    }
    const bool counted = r.value("counted", true);
    t.notes.push_back(counted ? "" : "  <- NOT COUNTED: " + r.value("note", std::string()));
    t.rows.push_back(std::move(row));
  }
  return t;
}

// The rows under a header between rules of '=' (text columns left-aligned, numbers right);
// `rule` is set to the rule line used.
std::string aligned_table(const LayerRows& t, std::string& rule) {
  std::vector<std::size_t> width(t.header.size());
  for (std::size_t c = 0; c < t.header.size(); ++c) {
    width[c] = t.header[c].size();
    for (const auto& row : t.rows) width[c] = std::max(width[c], row[c].size());
  }
  const auto line = [&](const std::vector<std::string>& cells, const std::string& tail) {
    std::string s;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      s += c < 4 ? fmt::format("{:<{}}", cells[c], width[c])
                 : fmt::format("{:>{}}", cells[c], width[c]);
      if (c + 1 < cells.size()) s += "  ";
    }
    return s + tail + "\n";
  };
  std::size_t total_width = 0;
  for (std::size_t w : width) total_width += w + 2;
  rule = std::string(total_width - 2, '=');
  std::string out = rule + "\n" + line(t.header, "") + rule + "\n";
  for (std::size_t i = 0; i < t.rows.size(); ++i) out += line(t.rows[i], t.notes[i]);
  return out + rule + "\n";
}

// The totals as torchinfo prints them (its definitions: mult-adds with biases and BatchNorm,
// MB = 1e6 bytes, "Forward/backward pass size" = 2 x the outputs of layers with parameters).
std::string torchinfo_totals(const nlohmann::json& t, const std::string& rule) {
  const auto mb = [&](const char* key) { return fmt::format("{:.2f}", get_number(t, key) / 1e6); };
  const double torchinfo_macs = get_number(t, "torchinfo_mult_adds_per_batch");
  std::string out = fmt::format("Total params: {}\n", with_commas(t.at("params").get<int64_t>()));
  out +=
      fmt::format("Trainable params: {}\n", with_commas(t.at("trainable_params").get<int64_t>()));
  out += fmt::format("Non-trainable params: {}\n",
                     with_commas(t.at("non_trainable_params").get<int64_t>()));
  out += fmt::format("Total mult-adds ({}): {:.2f}\n", unit_prefix(torchinfo_macs),
                     torchinfo_macs / unit_scale(torchinfo_macs));
  out += rule + "\n";
  out += fmt::format("Input size (MB): {}\n", mb("input_bytes"));
  out +=
      fmt::format("Forward/backward pass size (MB): {}\n", mb("torchinfo_forward_backward_bytes"));
  out += fmt::format("Params size (MB): {}\n", mb("param_bytes"));
  out += fmt::format("Estimated Total Size (MB): {}\n", mb("torchinfo_estimated_total_bytes"));
  return out + rule + "\n";
}

// This convention's totals: MACs, activation memory, FLOPs and bytes per pass, and the layers
// left out of every total.
std::string convention_totals(const nlohmann::json& ctx, const nlohmann::json& t, bool training) {
  const double batch = static_cast<double>(ctx.at("batch_size").get<int64_t>());
  const auto mb = [&](const char* key) { return fmt::format("{:.2f}", get_number(t, key) / 1e6); };
  std::string out = fmt::format("MACs (conv + linear): {} per sample, {} per batch of {}\n",
                                si(get_number(t, "macs_per_sample_forward")),
                                si(get_number(t, "macs_per_batch_forward")), batch);
  out += fmt::format(
      "Activation memory (MB): forward {} (every layer's output), backward {} "
      "(gradients of the outputs that depend on a parameter)\n",
      mb("forward_activation_bytes"), mb("backward_activation_bytes"));
  if (training) {
    out += fmt::format("Parameters + gradients + optimizer state (MB): {} + {} + {}\n",
                       mb("param_bytes"), mb("gradient_bytes"), mb("optimizer_state_bytes"));
  }
  out += fmt::format("Estimated total (MB): {}\n", mb("estimated_total_bytes"));
  out += fmt::format(
      "Forward: {} FLOPs, {} bytes, {:.2f} FLOP/B\n", si(get_number(t, "flops_per_batch_forward")),
      si(get_number(t, "bytes_forward")), get_number(t, "intensity_forward_flops_per_byte"));
  if (training) {
    out += fmt::format(
        "Backward: {} FLOPs data gradient + {} FLOPs weight gradient, {} bytes; optimizer: {} "
        "FLOPs, {} bytes\nTraining iteration: {} FLOPs ({:.2f}x forward), {} bytes, {:.2f} "
        "FLOP/B\n",
        si(get_number(t, "flops_backward_data")), si(get_number(t, "flops_backward_weights")),
        si(get_number(t, "bytes_backward")), si(get_number(t, "optimizer_flops")),
        si(get_number(t, "optimizer_bytes")), si(get_number(t, "flops_per_iteration")),
        get_number(t, "flops_per_iteration") / get_number(t, "flops_per_batch_forward"),
        si(get_number(t, "bytes_per_iteration")),
        get_number(t, "intensity_iteration_flops_per_byte"));
  }
  const auto& uncounted = t.at("uncounted_layers");
  if (!uncounted.empty()) {
    std::string names;
    for (const auto& n : uncounted) names += (names.empty() ? "" : ", ") + n.get<std::string>();
    out += fmt::format("NOT COUNTED (no formula; left out of every total): {}\n", names);
  }
  return out;
}

}  // namespace

std::string complexity_table(const nlohmann::json& doc) {
  const nlohmann::json& ctx = doc.at("context");
  const nlohmann::json& t = ctx.at("totals");
  const bool training = ctx.value("training", false);
  std::string rule;
  std::string out = table_heading(ctx, training);
  out += aligned_table(layer_rows(doc.at("records"), training), rule);
  out += torchinfo_totals(t, rule);
  return out + convention_totals(ctx, t, training);
}

std::string complexity_summary_table(const nlohmann::json& summary) {
  std::string out = fmt::format("{:<14} {:>7} {:>13} {:>16} {:>16} {:>17}\n", "model", "batch",
                                "params", "GMACs/sample", "GMACs/batch", "GFLOPs/batch");
  for (const auto& [model, batches] : summary.items()) {
    std::vector<std::pair<int64_t, const nlohmann::json*>> ordered;
    for (const auto& [b, v] : batches.items()) {
      int64_t batch = 0;
      const auto [end, ec] = std::from_chars(b.data(), b.data() + b.size(), batch);
      if (ec != std::errc() || end != b.data() + b.size()) {
        throw Error(
            fmt::format("summary.json: model {} has key '{}', expected a batch size", model, b));
      }
      ordered.emplace_back(batch, &v);
    }
    std::sort(ordered.begin(), ordered.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [b, v] : ordered) {
      out += fmt::format("{:<14} {:>7} {:>13} {:>16.4f} {:>16.2f} {:>17.2f}\n", model, b,
                         with_commas(v->at("params").get<int64_t>()),
                         v->at("mult_adds_per_sample_forward").get<double>() / 1e9,
                         v->at("mult_adds_per_batch_forward").get<double>() / 1e9,
                         v->at("flops_per_batch_forward").get<double>() / 1e9);
    }
  }
  return out;
}
}  // namespace nnperf
