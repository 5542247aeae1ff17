#include "test_util.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace nnperf::test {

std::vector<float> random_vector(int64_t n, uint64_t seed, float lo, float hi) {
  Rng rng(seed);
  std::vector<float> v(static_cast<std::size_t>(n));
  rng.fill_uniform(v, lo, hi);
  return v;
}

Tensor random_tensor(const Shape& shape, uint64_t seed, float lo, float hi) {
  Tensor t(shape);
  Rng rng(seed);
  rng.fill_uniform(std::span<float>(t.data(), static_cast<std::size_t>(t.numel())), lo, hi);
  return t;
}

TempDir::TempDir(const std::string& tag) {
  std::string tmpl = (std::filesystem::temp_directory_path() / (tag + "-XXXXXX")).string();
  char* made = mkdtemp(tmpl.data());
  if (made == nullptr) throw std::runtime_error("mkdtemp failed for " + tmpl);
  path_ = made;
}

TempDir::~TempDir() {
  std::error_code ec;
  if (std::getenv("NNPERF_KEEP_TEST_DIRS") == nullptr) std::filesystem::remove_all(path_, ec);
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CommandResult run_command(const std::string& command_line) {
  TempDir dir("nnperf-cmd");
  const auto out = dir / "stdout";
  const auto err = dir / "stderr";
  const std::string full = fmt::format("{} >'{}' 2>'{}' </dev/null", command_line, out.string(), err.string());
  const int status = std::system(full.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_text(out);
  r.err = read_text(err);
  return r;
}

CommandResult run_nnperf(const std::string& args) {
  // $NNPERF_BINARY: the binary to test where the build's own path does not exist (a test binary
  // copied to a GPU machine by scripts/gpu_bundle.sh).
  const char* env = std::getenv("NNPERF_BINARY");
  return run_command(
      fmt::format("'{}' {}", env != nullptr && *env != '\0' ? env : NNPERF_BINARY, args));
}

}  // namespace nnperf::test
