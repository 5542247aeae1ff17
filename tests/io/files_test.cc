// Tests for io/files: atomic writes leave exactly the target (no temp files), replace old
// content, and every failure names the path; ensure_writable_dir creates and probes folders.
#include "nnperf/io/files.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "nnperf/core/error.h"
#include "test_util.h"

namespace nnperf {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Files, AtomicWriteReplacesAndLeavesNoTemp) {
  test::TempDir dir("nnperf-files");
  const fs::path p = dir / "result.json";
  std::string big(200000, 'x');
  for (std::size_t i = 0; i < big.size(); i += 7) big[i] = static_cast<char>('a' + i % 26);
  write_file_atomic(p, big);
  EXPECT_EQ(read_file(p), big);
  write_file_atomic(p, "short\n");
  EXPECT_EQ(read_file(p), "short\n");
  write_file_atomic(dir / "empty", "");
  EXPECT_EQ(read_file(dir / "empty"), "");
  EXPECT_EQ(listing(dir.path()), (std::vector<std::string>{"empty", "result.json"}));
  // Normal permissions, not mkstemp's 0600.
  const auto perms = fs::status(p).permissions();
  EXPECT_NE(perms & fs::perms::owner_read, fs::perms::none);
  EXPECT_NE(perms & fs::perms::group_read, fs::perms::none);
}

TEST(Files, ErrorsNameThePath) {
  test::TempDir dir("nnperf-files");
  const fs::path missing_dir = dir / "no" / "such" / "dir" / "x.txt";
  std::string msg = error_of([&] { write_file_atomic(missing_dir, "data"); });
  EXPECT_NE(msg.find(missing_dir.string()), std::string::npos) << msg;
  EXPECT_EQ(listing(dir.path()), std::vector<std::string>{});

  msg = error_of([&] { read_file(dir / "absent.txt"); });
  EXPECT_NE(msg.find("absent.txt"), std::string::npos) << msg;
  EXPECT_NE(msg.find("No such file"), std::string::npos) << msg;
  // A folder where a file is read (--peaks adir, --ncu adir): said as such, not "read error".
  fs::create_directories(dir / "adir");
  msg = error_of([&] { read_file(dir / "adir"); });
  EXPECT_EQ(msg, (dir / "adir").string() + ": is a folder; expected a file") << msg;
}

TEST(Files, EnsureWritableDir) {
  test::TempDir dir("nnperf-files");
  const fs::path nested = dir / "a" / "b" / "c";
  ensure_writable_dir(nested);
  EXPECT_TRUE(fs::is_directory(nested));
  EXPECT_EQ(listing(nested), std::vector<std::string>{}) << "the probe file must be removed";
  ensure_writable_dir(nested);  // idempotent

  write_file_atomic(dir / "plain", "not a folder");
  std::string msg = error_of([&] { ensure_writable_dir(dir / "plain"); });
  EXPECT_NE(msg.find("plain"), std::string::npos) << msg;

  msg = error_of([&] { ensure_writable_dir(dir / "plain" / "sub"); });
  EXPECT_NE(msg.find("plain/sub"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannot create"), std::string::npos) << msg;

  // /proc/self refuses new files even for root, unlike a chmod 0555 folder.
  msg = error_of([&] { ensure_writable_dir("/proc/self"); });
  EXPECT_NE(msg.find("/proc/self"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not writable"), std::string::npos) << msg;

  msg = error_of([&] { ensure_writable_dir(""); });
  EXPECT_NE(msg.find("empty path"), std::string::npos) << msg;
}

}  // namespace
}  // namespace nnperf
