// `nnperf sweep merge`: the cells' rows joined into the files a single run would have written.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <set>

#include "nnperf/core/error.h"
#include "nnperf/core/text.h"
#include "nnperf/io/csv.h"
#include "nnperf/io/files.h"
#include "nnperf/io/json_read.h"
#include "nnperf/io/run_info.h"
#include "nnperf/runs/profile_outputs.h"
#include "nnperf/runs/sweep.h"

namespace nnperf {

namespace fs = std::filesystem;

namespace {

// One merged CSV: the header of the first part, every part's rows in cell order.
struct Joined {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row_cell;  // the cell each row came from
};

void append(Joined& j, const fs::path& file, const std::string& cell) {
  const CsvTable t = read_csv(file);
  if (t.truncated_row) throw Error(fmt::format("{}: its last row is cut (the cell was killed?)", file.string()));
  if (t.header.empty()) throw Error(fmt::format("{}: empty, not even a header (the cell was killed?)", file.string()));
  if (j.header.empty()) j.header = t.header;
  if (t.header != j.header) {
    throw Error(fmt::format("{}: its columns differ from the other cells' ({})", file.string(),
                            fmt::join(j.header, ",")));
  }
  for (const auto& r : t.rows) {
    j.rows.push_back(r);
    j.row_cell.push_back(cell);
  }
}

std::string render(const Joined& j) {
  std::string out = csv_line(j.header);
  for (const auto& r : j.rows) out += csv_line(r);
  return out;
}

std::size_t column(const Joined& j, const std::string& name, const std::string& what) {
  for (std::size_t i = 0; i < j.header.size(); ++i) {
    if (j.header[i] == name) return i;
  }
  throw Error(fmt::format("{}: no column '{}'", what, name));
}

nlohmann::json records_of(const Joined& j, const std::map<std::string, std::string>& host_of) {
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t r = 0; r < j.rows.size(); ++r) {
    nlohmann::json rec = {{"cell", j.row_cell[r]}, {"host", host_of.at(j.row_cell[r])}};
    for (std::size_t c = 0; c < j.header.size(); ++c) rec[j.header[c]] = j.rows[r][c];
    out.push_back(rec);
  }
  return out;
}

// The rows a cell added to `j` (from row `from`, read from `file`): each of its planned sizes
// exactly once, nothing else.
void check_cell_sizes(const Joined& j, std::size_t from, const nlohmann::json& cell, const fs::path& file) {
  const std::size_t col = column(j, "input_size", file.string());
  std::map<std::string, int> seen;
  for (std::size_t r = from; r < j.rows.size(); ++r) ++seen[j.rows[r][col]];
  std::set<std::string> planned;
  std::vector<std::string> missing, duplicated, unplanned;
  for (const auto& size : cell["sizes"]) {
    const std::string text = std::to_string(size.get<int64_t>());
    planned.insert(text);
    const int n = seen.count(text) ? seen.at(text) : 0;
    if (n == 0) missing.push_back(text);
    if (n > 1) duplicated.push_back(text);
  }
  for (const auto& [size, n] : seen) {
    if (!planned.count(size)) unplanned.push_back(size);
  }
  if (missing.empty() && duplicated.empty() && unplanned.empty()) return;
  std::vector<std::string> what;
  if (!missing.empty()) what.push_back(fmt::format("no row for size {}", fmt::join(missing, ", ")));
  if (!duplicated.empty()) what.push_back(fmt::format("more than one row for size {}", fmt::join(duplicated, ", ")));
  if (!unplanned.empty()) what.push_back(fmt::format("a row for size {}, not planned", fmt::join(unplanned, ", ")));
  const auto sizes = cell["sizes"].get<std::vector<int64_t>>();
  throw Error(fmt::format("{}: {} (cell {} planned size{} {}; the file has {})", file.string(), fmt::join(what, "; "),
                          cell["name"].get<std::string>(), sizes.size() == 1 ? "" : "s", fmt::join(sizes, ", "),
                          count_noun(static_cast<int64_t>(j.rows.size() - from), "row")));
}

struct Merged {
  std::map<fs::path, std::string> files;  // relative to merged/ -> content
  std::map<fs::path, fs::path> copies;    // relative to merged/ -> a cell's file, copied as it is
  nlohmann::json records = nlohmann::json::array();
  nlohmann::json columns = nlohmann::json::array();  // a training sweep's metrics.csv header
  std::vector<std::string> notes;
};

// One group's cells' profile records joined into the lines file of a single sweep (the context,
// then each size's record in cell order), so that `nnperf report` can rebuild the merged CSVs and
// traces from it as from any sweep's; and the cells' traces copied. Empty, with a note saying
// why, when a cell's records cannot be joined (none kept, cut, lacking sizes, another context).
void join_profile_records(const fs::path& dir, const std::string& key,
                          const std::vector<const nlohmann::json*>& cells, const std::string& stem,
                          Merged& m) {
  std::vector<nlohmann::json> lines;
  std::map<fs::path, fs::path> traces;
  for (const auto* c : cells) {
    const fs::path out = dir / (*c)["output"].get<std::string>();
    const fs::path file = out / profile_sweep::kRecordsFile;
    std::string why;
    try {
      const nlohmann::json doc = profile_sweep::read_profile_records(file);
      if (doc.contains("sizes_without_records")) {
        why = fmt::format("lacks the records of sizes {}", doc["sizes_without_records"].dump());
      } else if (!lines.empty() && doc.at("context") != lines[0].at("context")) {
        why = "its context differs from the first cell's";
      } else {
        if (lines.empty()) lines.push_back({{"context", doc.at("context")}});
        for (const auto& rec : doc.at("records")) {
          lines.push_back(rec);
          const fs::path trace =
              out / fmt::format("{}_trace_{}.json", stem, rec.at("size").get<int64_t>());
          if (fs::exists(trace)) traces[fs::path(key) / trace.filename()] = trace;
        }
      }
    } catch (const Error& e) {
      why = e.what();
    }
    if (!why.empty()) {
      m.notes.push_back(fmt::format("{}: no {} (nnperf report cannot rebuild its CSVs): {}: {}",
                                    key, profile_sweep::kRecordsFile, file.string(), why));
      return;
    }
  }
  std::string text;
  for (const auto& l : lines) text += l.dump() + "\n";
  m.files[fs::path(key) / profile_sweep::kRecordsFile] = text;
  m.copies.insert(traces.begin(), traces.end());
}

// Per model x algorithm x pass: the overall and layers CSVs, each planned size exactly once.
void merge_profile(const fs::path& dir, const nlohmann::json& sweep,
                   const std::map<std::string, std::string>& host_of, Merged& m) {
  std::map<std::string, std::vector<const nlohmann::json*>> groups;
  std::vector<std::string> order;
  for (const auto& c : sweep["cells"]) {
    const std::string key = fmt::format("{}_{}{}", c["model"].get<std::string>(), c["algorithm"].get<std::string>(),
                                        c["pass"] == "train" ? "_train" : "");
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&c);
  }
  for (const auto& key : order) {
    const auto& cells = groups[key];
    const std::string stem = fmt::format("{}_{}", (*cells[0])["model"].get<std::string>(),
                                         (*cells[0])["algorithm"].get<std::string>());
    Joined overall, layers;
    std::vector<int64_t> planned;
    std::set<std::string> hosts;
    for (const auto* c : cells) {
      const fs::path out = dir / (*c)["output"].get<std::string>();
      const std::size_t before = overall.rows.size();
      append(overall, out / (stem + "_overall.csv"), (*c)["name"]);
      check_cell_sizes(overall, before, *c, out / (stem + "_overall.csv"));
      if (fs::exists(out / (stem + "_layers.csv"))) append(layers, out / (stem + "_layers.csv"), (*c)["name"]);
      for (const auto& s : (*c)["sizes"]) planned.push_back(s.get<int64_t>());
      hosts.insert(host_of.at((*c)["name"]));
    }
    m.files[fs::path(key) / (stem + "_overall.csv")] = render(overall);
    if (!layers.rows.empty()) m.files[fs::path(key) / (stem + "_layers.csv")] = render(layers);
    join_profile_records(dir, key, cells, stem, m);
    // The first cell's run.json, with the whole sweep's sizes: the merged folder reads as one sweep.
    nlohmann::json run = read_json(dir / (*cells[0])["output"].get<std::string>() / "run.json");
    run["sizes"] = planned;
    if (run.contains("setup") && run["setup"].is_object()) run["setup"]["sizes"] = planned;
    run["merged_from"] = nlohmann::json::array();
    for (const auto* c : cells) run["merged_from"].push_back((*c)["output"]);
    run["hosts"] = hosts;
    m.files[fs::path(key) / "run.json"] = run.dump(4) + "\n";
    if (hosts.size() > 1) {
      m.notes.push_back(fmt::format("{}: its cells ran on {} machines ({}); its rows are not one "
                                    "machine's figures",
                                    key, hosts.size(), fmt::join(hosts, ", ")));
    }
    for (auto& rec : records_of(overall, host_of)) m.records.push_back(std::move(rec));
  }
}

// The training cells' metrics.csv rows, exactly one per cell (label = cell name).
void merge_train(const fs::path& dir, const nlohmann::json& sweep,
                 const std::map<std::string, std::string>& host_of, Merged& m) {
  Joined metrics;
  for (const auto& c : sweep["cells"]) {
    const std::size_t before = metrics.rows.size();
    const fs::path file = dir / c["output"].get<std::string>() / "metrics.csv";
    append(metrics, file, c["name"]);
    const std::size_t label = column(metrics, "label", file.string());
    int mine = 0;
    for (std::size_t r = before; r < metrics.rows.size(); ++r) mine += metrics.rows[r][label] == c["name"];
    if (mine != 1 || metrics.rows.size() - before != 1) {
      throw Error(fmt::format("{}: {}, {} labelled {} (expected exactly 1)", file.string(),
                              count_noun(static_cast<int64_t>(metrics.rows.size() - before), "row"), mine,
                              c["name"].get<std::string>()));
    }
  }
  m.files["metrics.csv"] = render(metrics);
  m.records = records_of(metrics, host_of);
  m.columns = metrics.header;
  std::set<std::string> hosts;
  for (const auto& [cell, host] : host_of) hosts.insert(host);
  if (hosts.size() > 1) {
    m.notes.push_back(fmt::format("the training cells ran on {} machines ({}): compare rows of one host",
                                  hosts.size(), fmt::join(hosts, ", ")));
  }
}

}  // namespace

std::string merge_sweep(const fs::path& dir) {
  const nlohmann::json sweep = read_sweep(dir);
  std::map<std::string, std::string> host_of;
  std::vector<std::string> not_done;
  for (const auto& c : sweep["cells"]) {
    const nlohmann::json s = cell_state(dir, c);
    if (s["state"] != "done") not_done.push_back(c["name"]);
    host_of[c["name"]] = s.value("host", std::string("?"));
  }
  if (!not_done.empty()) {
    throw Error(fmt::format("{}: {} not done ({}{})", dir.string(),
                            not_done.size() == 1 ? std::string("1 cell is") : fmt::format("{} cells are", not_done.size()),
                            fmt::join(not_done.begin(), not_done.begin() + std::min<std::ptrdiff_t>(5, static_cast<std::ptrdiff_t>(not_done.size())), ", "),
                            not_done.size() > 5 ? ", ..." : ""));
  }
  Merged m;
  if (sweep["kind"] == "profile") {
    merge_profile(dir, sweep, host_of, m);
  } else {
    merge_train(dir, sweep, host_of, m);
  }
  std::set<std::string> hosts;
  for (const auto& [cell, host] : host_of) hosts.insert(host);
  nlohmann::json doc = {{"context",
                         {{"sweep", sweep["id"]},
                          {"kind", sweep["kind"]},
                          {"cells", sweep["cells"].size()},
                          {"hosts", hosts},
                          {"notes", m.notes},
                          {"merged", iso8601_now()}}},
                        {"records", m.records}};
  if (!m.columns.empty()) doc["context"]["columns"] = m.columns;  // metrics.csv's, in order
  // Everything is built before anything is written; merged/ is replaced whole.
  const fs::path tmp = dir / "merged.tmp";
  fs::remove_all(tmp);
  for (const auto& [rel, content] : m.files) {
    fs::create_directories((tmp / rel).parent_path());
    write_file_atomic(tmp / rel, content);
  }
  for (const auto& [rel, from] : m.copies) fs::copy_file(from, tmp / rel);
  write_json_atomic(tmp / "sweep_records.json", doc);
  fs::remove_all(dir / "merged");
  fs::rename(tmp, dir / "merged");
  std::string out = fmt::format("merged {} ({}) into {}\n",
                                count_noun(static_cast<int64_t>(sweep["cells"].size()), "cell"),
                                count_noun(static_cast<int64_t>(m.records.size()), "row"),
                                (dir / "merged").string());
  for (const auto& n : m.notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace nnperf
