#include "nnperf/io/out_dir.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <system_error>
#include <vector>

#include "nnperf/core/error.h"
#include "nnperf/io/files.h"
#include "nnperf/io/records.h"
#include "nnperf/io/run_info.h"

namespace nnperf {

namespace fs = std::filesystem;

std::optional<FolderOwner> folder_owner(const fs::path& dir) {
  const fs::path rj = dir / "run.json";
  std::error_code ec;
  if (!fs::is_regular_file(rj, ec)) return std::nullopt;
  FolderOwner o;
  RunJson j;
  try {
    j = parse_run_json(read_file(rj), rj.string());
  } catch (const Error& e) {
    return FolderOwner{"?", fmt::format("a run.json nnperf cannot read ({})", e.what())};
  }
  o.job = j.job;
  if (o.job == "profile") {
    o.description = fmt::format("the profile sweep of {} with {}", j.model, j.algorithm);
  } else if (o.job == "train") {
    o.description = "a training run";
  } else if (o.job == "activations") {
    o.description = "an activation study";
  } else {
    o.description = fmt::format("the outputs of 'nnperf {}'", o.job);
  }
  if (!j.date.empty()) o.description += fmt::format(" from {}", j.date);
  return o;
}

namespace {

// "run.json, training_metrics.csv and 3 more".
std::string listing(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < 3; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > 3) s += fmt::format(" and {} more", names.size() - 3);
  return s;
}

}  // namespace

void claim_output_dir(const fs::path& dir, const std::string& flag, bool overwrite) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    throw UsageError(fmt::format("{} {}: exists and is not a folder", flag, dir.string()));
  }
  const bool empty = !fs::exists(dir, ec) || fs::is_empty(dir, ec);
  if (!empty) {
    const auto owner = folder_owner(dir);
    if (!overwrite) {
      throw UsageError(fmt::format(
          "{} {}: already holds {} ({}); nothing was written. Use another {}{}", flag,
          dir.string(), owner ? owner->description : "files that are not an nnperf run",
          listing(dir), flag,
          owner ? " or --overwrite to replace that folder whole" : " (an empty or new folder)"));
    }
    if (!owner) {
      throw UsageError(fmt::format(
          "{} {} --overwrite: the folder holds files that nnperf did not write ({}; no "
          "run.json); refusing to delete them",
          flag, dir.string(), listing(dir)));
    }
    fs::remove_all(dir, ec);
    if (ec) fail("{}: cannot remove the old outputs for --overwrite: {}", dir.string(), ec.message());
  }
  ensure_writable_dir(dir);
}

fs::path prepare_output_dir(const fs::path& given, const std::string& default_stem,
                            const std::string& flag, bool overwrite) {
  if (given.empty()) return create_unique_dir(fmt::format("{}_{}", default_stem, timestamp_compact()));
  claim_output_dir(given, flag, overwrite);
  return given;
}

fs::path create_unique_dir(const fs::path& base) {
  std::error_code ec;
  if (base.has_parent_path()) ensure_writable_dir(base.parent_path());
  for (int i = 1; i < 10000; ++i) {
    fs::path p = i == 1 ? base : fs::path(base.string() + fmt::format("_{}", i));
    if (fs::create_directory(p, ec)) return p;
    if (ec) fail("{}: cannot create the folder: {}", p.string(), ec.message());
  }
  fail("{}: 9999 folders of that name exist already", base.string());
}

}  // namespace nnperf
