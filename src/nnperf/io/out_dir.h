// Output folders that never mix two runs. Every job claims its folder before writing anything:
// a missing or empty folder is taken; a folder that already holds a run's outputs (a run.json, or
// any file or folder in it) is refused with what it holds, unless the user asked to replace it
// whole (--overwrite), which nnperf does only for a folder that nnperf itself wrote (it has a
// run.json): a folder of someone else's files is never deleted. Nor is a replaced folder deleted
// before the new run has ended well: it is moved aside (renamed within its parent) and
// finish_output_replacements, called when the command ends, deletes it or puts it back. Default folder names are made
// unique with an atomic mkdir, so two runs started in the same second get two folders.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

namespace nnperf {

// What an existing folder holds, from its run.json: the job ("train", "profile", ...) and a
// short description ("profile sweep of vgg16 with gemm"); nullopt when there is no run.json.
struct FolderOwner {
  std::string job;
  std::string description;
};
std::optional<FolderOwner> folder_owner(const std::filesystem::path& dir);

// Claims `dir` for a new run; `flag` names the flag that chose it (for the message). Throws
// UsageError when the folder holds anything and `overwrite` is false, or when `overwrite` is true
// but the folder is not an nnperf output folder.
void claim_output_dir(const std::filesystem::path& dir, const std::string& flag, bool overwrite);

// How the command that replaced folders ended.
enum class RunEnd { kSucceeded, kFailed, kInterrupted };
// Settles every folder this process replaced with --overwrite. Succeeded: the old outputs are
// deleted. Failed or interrupted: the old outputs are put back, and the new run's outputs, if it
// wrote any, are kept beside them as `<folder>_incomplete` (or _incomplete_2, ...). Returns a
// note for the command's last line ("" when nothing was replaced); never throws.
std::string finish_output_replacements(RunEnd end);

// The folder a job writes into: `given` claimed as above, or, when `given` is empty, a new unique
// folder `<default_stem>_<YYYYmmdd_HHMMSS>` (see create_unique_dir).
std::filesystem::path prepare_output_dir(const std::filesystem::path& given,
                                         const std::string& default_stem, const std::string& flag,
                                         bool overwrite);

// Creates base, or base_2, base_3, ... (the first that does not exist yet, created atomically)
// and returns it: for default folder names built from a timestamp.
std::filesystem::path create_unique_dir(const std::filesystem::path& base);

}  // namespace nnperf
