// Whole-file writes that survive a crash (temp file in the same folder, fsync, rename) and
// reads/checks that name the path and the OS error when they fail.
#include "nnperf/io/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <system_error>

#include "nnperf/core/error.h"

namespace nnperf {

namespace fs = std::filesystem;

namespace {

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

// Writes all of `content` to fd, retrying short writes and EINTR. Returns 0 or an errno value.
int write_all(int fd, std::string_view content) {
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return 0;
}

// Makes the rename itself durable; failure here is not worth an error (the data is in place).
void fsync_dir(const fs::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

// What a path that is not a regular file is, for messages.
std::string file_kind(const fs::file_status& st) {
  switch (st.type()) {
    case fs::file_type::directory: return "a folder";
    case fs::file_type::character: return "a character device";
    case fs::file_type::block: return "a block device";
    case fs::file_type::fifo: return "a pipe";
    case fs::file_type::socket: return "a socket";
    default: return "not a regular file";
  }
}

// A path into /dev or /proc (such as /dev/stdout, a link to this process's descriptor 1): an
// atomic rename there would replace the descriptor's file, not write to it.
bool special_path(const fs::path& path) {
  std::error_code ec;
  for (const fs::path& p : {fs::absolute(path, ec).lexically_normal(), fs::weakly_canonical(path, ec)}) {
    const std::string s = p.string();
    if (s.rfind("/dev/", 0) == 0 || s.rfind("/proc/", 0) == 0) return true;
  }
  return false;
}

// Where an output really goes: through symbolic links (an atomic rename would replace the link
// itself), and never to a device, pipe or socket (an atomic write cannot go there, and /dev/stdout
// renamed over would be gone for every later program).
fs::path output_target(const fs::path& path) {
  std::error_code ec;
  if (special_path(path)) {
    fail("{}: is in /dev or /proc; results are written to regular files only", path.string());
  }
  const fs::file_status st = fs::status(path, ec);
  if (fs::exists(st) && !fs::is_regular_file(st)) {
    fail("{}: is {}; results are written to regular files only", path.string(), file_kind(st));
  }
  // Follow the links by hand: weakly_canonical leaves a link to a file not written yet as it is.
  fs::path target = path;
  for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(target, ec)); ++hops) {
    const fs::path next = fs::read_symlink(target, ec);
    if (ec) break;
    target = next.is_absolute() ? next : target.parent_path() / next;
  }
  return target;
}

// write_all, then fsync and close fd (always closed): 0, or the errno of the first step that
// failed, which `step` then names ("write", "fsync" or "close").
int write_sync_close(int fd, std::string_view content, const char*& step) {
  int err = write_all(fd, content);
  step = "write";
  if (err == 0 && ::fsync(fd) != 0) {
    err = errno;
    step = "fsync";
  }
  if (::close(fd) != 0 && err == 0) {
    err = errno;
    step = "close";
  }
  return err;
}

}  // namespace

void write_file_atomic(const fs::path& given, std::string_view content) {
  const fs::path path = output_target(given);
  const fs::path dir = path.parent_path();
  // mkstemp gives a unique name, so concurrent writers of the same target never share a temp.
  std::string tmpl = (dir / ("." + path.filename().string() + ".tmp-XXXXXX")).string();
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) {
    fail("{}: cannot create a temporary file in {} for an atomic write: {}", path.string(),
         dir.empty() ? std::string(".") : dir.string(), errno_text(errno));
  }
  // mkstemp creates 0600; give the file the usual permissions (0666 minus umask).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);

  const char* step = "write";
  int err = write_sync_close(fd, content, step);
  if (err == 0 && ::rename(tmpl.c_str(), path.c_str()) != 0) {
    err = errno;
    step = "rename";
  }
  if (err != 0) {
    ::unlink(tmpl.c_str());
    fail("{}: atomic write failed at {} ({} bytes): {}", path.string(), step, content.size(),
         errno_text(err));
  }
  fsync_dir(dir);
}

void append_file_synced(const fs::path& path, std::string_view content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) fail("{}: cannot open for appending: {}", path.string(), errno_text(errno));
  const char* step = "write";
  const int err = write_sync_close(fd, content, step);
  if (err != 0) {
    fail("{}: append failed at {} ({} bytes): {}", path.string(), step, content.size(),
         errno_text(err));
  }
}

std::string read_file(const fs::path& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) fail("{}: cannot open for reading: {}", path.string(), errno_text(errno));
  std::string out;
  struct stat st {};
  const bool stated = ::fstat(::fileno(f), &st) == 0;
  if (stated && S_ISDIR(st.st_mode)) {
    std::fclose(f);
    fail("{}: is a folder; expected a file", path.string());
  }
  if (stated && S_ISREG(st.st_mode) && st.st_size > 0) {
    out.reserve(static_cast<std::size_t>(st.st_size));
  }
  char buf[1 << 16];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const bool bad = std::ferror(f) != 0;
  const int err = errno;
  std::fclose(f);
  if (bad) fail("{}: read error: {}", path.string(), errno_text(err));
  return out;
}

void ensure_writable_dir(const fs::path& dir, const std::string& flag) {
  if (dir.empty()) fail("an output folder is required but an empty path was given");
  // "--out-dir x" where a flag gave the folder, so every command's message names it alike.
  const std::string what = flag.empty() ? dir.string() : flag + " " + dir.string();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail("{}: cannot create the folder: {}", what, ec.message());
  if (!fs::is_directory(dir, ec)) fail("{}: exists but is not a folder", what);
  // access(W_OK) is wrong on read-only mounts and for root, so create and remove a real file.
  std::string probe = (dir / ".nnperf-write-probe-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) fail("{}: folder is not writable: {}", what, errno_text(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

int64_t free_disk_bytes(const fs::path& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  while (!p.empty() && !fs::exists(p, ec)) {
    if (p == p.parent_path()) break;
    p = p.parent_path();
  }
  const fs::space_info info = fs::space(p, ec);
  if (ec || info.available == static_cast<std::uintmax_t>(-1)) {
    return std::numeric_limits<int64_t>::max();
  }
  return static_cast<int64_t>(
      std::min<std::uintmax_t>(info.available, std::numeric_limits<int64_t>::max()));
}

void check_distinct_outputs(const std::vector<std::pair<std::string, fs::path>>& outputs) {
  struct Seen {
    const std::string* flag;
    const fs::path* given;
    fs::path real;
  };
  std::vector<Seen> seen;
  for (const auto& [flag, path] : outputs) {
    if (path.empty()) continue;
    std::error_code ec;
    fs::path real = fs::weakly_canonical(fs::absolute(path, ec), ec);
    for (const Seen& s : seen) {
      if (s.real == real) {
        throw UsageError(fmt::format(
            "{} {} and {} {}: one file for two outputs (only the one written last would be kept)",
            *s.flag, s.given->string(), flag, path.string()));
      }
    }
    seen.push_back({&flag, &path, std::move(real)});
  }
}

void check_output_file(const fs::path& path, const std::string& flag, const std::vector<fs::path>& inputs) {
  if (path.empty()) return;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    throw UsageError(
        fmt::format("{} {}: is a folder; expected a file to write", flag, path.string()));
  }
  const fs::file_status st = fs::status(path, ec);
  if (fs::exists(st) && !fs::is_regular_file(st)) {
    throw UsageError(fmt::format("{} {}: is {}; expected a regular file to write", flag, path.string(),
                                 file_kind(st)));
  }
  if (special_path(path)) {
    throw UsageError(fmt::format("{} {}: is in /dev or /proc; expected a regular file to write", flag,
                                 path.string()));
  }
  if (fs::exists(st)) {
    const fs::path real = fs::weakly_canonical(path, ec);
    for (const fs::path& in : inputs) {
      if (in.empty() || !fs::exists(in, ec)) continue;
      const fs::path folder = fs::weakly_canonical(in, ec);
      const bool same = fs::equivalent(path, in, ec);
      const auto [end, _] = std::mismatch(folder.begin(), folder.end(), real.begin(), real.end());
      if (same || (fs::is_directory(in, ec) && end == folder.end())) {
        throw UsageError(fmt::format("{} {}: is {} this command reads ({}); writing there would replace "
                                     "it: choose another file",
                                     flag, path.string(), same ? "a file" : "in a folder", in.string()));
      }
    }
  }
  const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
  if (!fs::is_directory(parent, ec)) {
    throw UsageError(fmt::format(
        "{} {}: {} {}", flag, path.string(), parent.string(),
        fs::exists(parent, ec) ? "is a file, not a folder" : "does not exist (no such folder)"));
  }
  std::string probe = (parent / ".nnperf-write-probe-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    throw UsageError(fmt::format("{} {}: cannot write in {}: {}", flag, path.string(),
                                 parent.string(), errno_text(errno)));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace nnperf
