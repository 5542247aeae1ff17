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

// Folders replaced with --overwrite in this process: the new one and where the old one waits.
struct Replacement {
  fs::path dir, aside;
};
std::vector<Replacement>& replacements() {
  static std::vector<Replacement> r;
  return r;
}

// `dir`'s outputs moved to a hidden sibling that does not exist yet.
fs::path move_aside(const fs::path& dir) {
  const fs::path parent = dir.has_parent_path() ? dir.parent_path() : fs::path(".");
  std::error_code ec;
  for (int i = 1; i < 10000; ++i) {
    const fs::path aside =
        parent / fmt::format(".{}.replaced{}", dir.filename().string(),
                             i == 1 ? std::string() : fmt::format("_{}", i));
    if (fs::exists(aside, ec)) continue;
    fs::rename(dir, aside, ec);
    if (ec) {
      fail("{}: cannot move the old outputs aside for --overwrite: {}", dir.string(),
           ec.message());
    }
    return aside;
  }
  fail("{}: cannot move the old outputs aside for --overwrite: 9999 earlier copies", dir.string());
}

// Whether a run's folder holds anything beyond the run.json written when it was claimed.
bool holds_outputs(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename() != "run.json") return true;
  }
  return false;
}

// Settles one replacement; returns what happened, for the note.
std::string settle(const Replacement& r, RunEnd end) {
  std::error_code ec;
  if (end == RunEnd::kSucceeded) {
    fs::remove_all(r.aside, ec);
    return ec ? fmt::format("the replaced outputs of {} are left in {} ({})", r.dir.string(),
                            r.aside.string(), ec.message())
              : std::string();
  }
  std::string kept;
  if (holds_outputs(r.dir)) {
    fs::path incomplete;
    for (int i = 1; i < 10000 && incomplete.empty(); ++i) {
      const fs::path p(r.dir.string() +
                       (i == 1 ? std::string("_incomplete") : fmt::format("_incomplete_{}", i)));
      if (!fs::exists(p, ec)) incomplete = p;
    }
    fs::rename(r.dir, incomplete, ec);
    if (ec) {
      return fmt::format("the earlier outputs of {} are in {} (this run's could not be moved: {})",
                         r.dir.string(), r.aside.string(), ec.message());
    }
    kept = fmt::format("; this run's outputs are in {}", incomplete.string());
  } else {
    fs::remove_all(r.dir, ec);
  }
  fs::rename(r.aside, r.dir, ec);
  if (ec) {
    return fmt::format("the earlier outputs of {} are in {} ({}){}", r.dir.string(),
                       r.aside.string(), ec.message(), kept);
  }
  return fmt::format("the earlier outputs in {} were kept{}", r.dir.string(), kept);
}

}  // namespace

std::string finish_output_replacements(RunEnd end) {
  std::string note;
  try {
    std::vector<Replacement>& all = replacements();
    for (auto it = all.rbegin(); it != all.rend(); ++it) {
      const std::string s = settle(*it, end);
      if (!s.empty()) note += (note.empty() ? "" : "; ") + s;
    }
    all.clear();
  } catch (const std::exception& e) {
    note += fmt::format(" (settling --overwrite: {})", e.what());
  }
  return note;
}

namespace {

// A hidden `.<name>.replaced[_k]` beside `folder` holds the outputs an --overwrite run moved
// aside and had not settled: that run was killed (SIGKILL, power loss) or is still running.
// Claiming the folder then would leave those outputs hidden for good, so it is refused.
void refuse_unsettled_replacement(const fs::path& folder, const std::string& flag) {
  const fs::path parent = folder.has_parent_path() ? folder.parent_path() : fs::path(".");
  const std::string stem = fmt::format(".{}.replaced", folder.filename().string());
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(parent, ec)) {
    const std::string name = e.path().filename().string();
    if (name != stem && name.rfind(stem + "_", 0) != 0) continue;
    throw UsageError(fmt::format(
        "{} {}: {} holds the outputs an earlier --overwrite run moved aside, and that run never "
        "finished (killed, or still running); nothing was written. Move them back (mv {} {}) or "
        "delete them, then run again",
        flag, folder.string(), e.path().string(), e.path().string(), folder.string()));
  }
}

}  // namespace

void claim_output_dir(const fs::path& dir, const std::string& flag, bool overwrite) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    throw UsageError(fmt::format("{} {}: exists and is not a folder", flag, dir.string()));
  }
  // "out/" names the folder "out": without the trailing separator it has a name to rename.
  fs::path folder = dir.lexically_normal();
  if (!folder.has_filename()) folder = folder.parent_path();
  refuse_unsettled_replacement(folder, flag);
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
    replacements().push_back({folder, move_aside(folder)});
  }
  ensure_writable_dir(dir, flag);
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
