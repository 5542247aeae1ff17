// Files that survive a crash: whole-file writes go to a temp file and are renamed into place;
// appends write whole lines and flush. Every error names the path and what went wrong.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nnperf {

// Writes `content` to `path` atomically (temp file in the same folder, fsync, rename).
void write_file_atomic(const std::filesystem::path& path, std::string_view content);
// Appends `content` to the existing file `path` (O_APPEND, short writes retried), then fsyncs it.
void append_file_synced(const std::filesystem::path& path, std::string_view content);
std::string read_file(const std::filesystem::path& path);
// A word safe in a POSIX shell: 'text' with each ' written as '\'' (empty -> '').
std::string shell_quote(const std::string& text);
// Creates the folder (and parents) and checks that it is writable; throws naming it otherwise,
// after the flag that gave it when `flag` is given ("--out-dir x: cannot create the folder: ...").
void ensure_writable_dir(const std::filesystem::path& dir, const std::string& flag = "");
// An output file a flag names, checked before any work (nothing is created): not a folder, device,
// pipe or socket (symbolic links followed), in a folder that exists and takes a new file, and not
// one of `inputs` (files the command reads, or folders whose files it reads: an existing file
// inside one), so that writing cannot replace what the command reads. Throws UsageError naming the
// flag; empty: no check.
void check_output_file(const std::filesystem::path& path, const std::string& flag,
                       const std::vector<std::filesystem::path>& inputs = {});
// Bytes an unprivileged write may still use on the file system that holds `path` (or, where it
// does not exist yet, its nearest existing parent; the current folder for a relative path with
// none). INT64_MAX when the file system does not say.
int64_t free_disk_bytes(const std::filesystem::path& path);
// Output files of several flags (flag, path; empty paths skipped): UsageError naming both flags
// when two name one file, which would keep only the output written last.
void check_distinct_outputs(
    const std::vector<std::pair<std::string, std::filesystem::path>>& outputs);

}  // namespace nnperf
