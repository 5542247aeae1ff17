// TensorBoard event files without TensorFlow: each record is TFRecord-framed (little-endian
// uint64 length, masked CRC32C of those 8 bytes, payload, masked CRC32C of the payload) and the
// payload is a tensorflow.Event protobuf encoded by hand. Field numbers (event.proto,
// summary.proto):
//   Event { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
//   Summary { repeated Value value = 1; }   Value { string tag = 1; float simple_value = 2; }
#include "nnperf/io/tensorboard.h"

#include <fmt/format.h>
#include <nmmintrin.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <system_error>

#include "nnperf/core/error.h"
#include "nnperf/io/files.h"
#include "nnperf/io/run_info.h"

namespace nnperf {

namespace fs = std::filesystem;

namespace {

constexpr uint32_t kCrc32cPolyReflected = 0x82F63B78u;

constexpr std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ kCrc32cPolyReflected : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kCrcTable = make_crc_table();

__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t c = 0xFFFFFFFFu;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c = _mm_crc32_u64(c, w);
  }
  auto c32 = static_cast<uint32_t>(c);
  for (; n > 0; --n, ++p) c32 = _mm_crc32_u8(c32, *p);
  return ~c32;
}

bool cpu_has_sse42() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") != 0;
  }();
  return has;
}

// Protobuf wire format: key = field << 3 | wire type (0 varint, 1 fixed64, 2 bytes, 5 fixed32).
void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
void put_key(std::string& out, int field, int wire_type) {
  put_varint(out, static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wire_type));
}
template <typename T>
void put_le(std::string& out, T v) {
  unsigned char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // x86-64 and every target we build for is little-endian
  out.append(reinterpret_cast<const char*>(b), sizeof(T));
}
void put_bytes(std::string& out, int field, const std::string& bytes) {
  put_key(out, field, 2);
  put_varint(out, bytes.size());
  out += bytes;
}

std::string event_header(double wall_time) {
  std::string ev;
  put_key(ev, 1, 1);
  put_le(ev, wall_time);
  return ev;
}

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

}  // namespace

uint32_t crc32c_portable(const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) c = kCrcTable[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return ~c;
}

uint32_t crc32c(const void* data, std::size_t n) {
  return cpu_has_sse42() ? crc32c_sse42(data, n) : crc32c_portable(data, n);
}

uint32_t crc32c_masked(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

TensorBoardWriter::TensorBoardWriter(const fs::path& logdir) {
  ensure_writable_dir(logdir);
  const auto secs = static_cast<long long>(std::time(nullptr));
  const std::string base = fmt::format("events.out.tfevents.{}.{}", secs, hostname());
  // Two writers in one folder within one second get distinct names ("x": never clobber a file).
  for (int k = 0; file_ == nullptr; ++k) {
    path_ = logdir / (k == 0 ? base : fmt::format("{}.{}.{}", base, ::getpid(), k));
    file_ = std::fopen(path_.c_str(), "wbx");
    if (file_ == nullptr && (errno != EEXIST || k > 1000)) {
      fail("{}: cannot create the TensorBoard event file: {}", path_.string(), errno_text(errno));
    }
  }
  opened_ = now();
  write_version_event();
}

TensorBoardWriter::TensorBoardWriter(const fs::path& logdir, const std::string& file_name,
                                     double opened)
    : path_(logdir / file_name), opened_(opened) {
  if (file_name.empty() || file_name.find('/') != std::string::npos || file_name == "." ||
      file_name == "..") {
    fail("{}: a TensorBoard event file name must be a plain file name, not '{}'", logdir.string(),
         file_name);
  }
  ensure_writable_dir(logdir);
  file_ = std::fopen(path_.c_str(), "wbx");
  if (file_ == nullptr) {
    fail("{}: cannot create the TensorBoard event file: {}", path_.string(), errno_text(errno));
  }
  write_version_event();
}

double TensorBoardWriter::now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

void TensorBoardWriter::write_version_event() {
  std::string ev = event_header(opened_);
  put_bytes(ev, 3, "brain.Event:2");
  write_record(ev);
  flush();
}

TensorBoardWriter::~TensorBoardWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void TensorBoardWriter::add_scalar(const std::string& tag, double value, int64_t step) {
  add_scalar(tag, value, step, now());
}

void TensorBoardWriter::add_scalar(const std::string& tag, double value, int64_t step,
                                   double wall_time) {
  if (tag.empty()) fail("{}: a TensorBoard scalar needs a non-empty tag", path_.string());
  std::string val;
  put_bytes(val, 1, tag);
  put_key(val, 2, 5);
  put_le(val, static_cast<float>(value));
  std::string summary;
  put_bytes(summary, 1, val);
  std::string ev = event_header(wall_time);
  put_key(ev, 2, 0);
  put_varint(ev, static_cast<uint64_t>(step));  // int64: negatives take ten bytes, as protobuf does
  put_bytes(ev, 5, summary);
  write_record(ev);
  flush();
}

void TensorBoardWriter::flush() {
  if (std::fflush(file_) != 0) fail("{}: cannot flush: {}", path_.string(), errno_text(errno));
}

void TensorBoardWriter::write_record(const std::string& payload) {
  std::string rec;
  rec.reserve(payload.size() + 16);
  put_le(rec, static_cast<uint64_t>(payload.size()));
  put_le(rec, crc32c_masked(crc32c(rec.data(), 8)));
  rec += payload;
  put_le(rec, crc32c_masked(crc32c(payload.data(), payload.size())));
  if (std::fwrite(rec.data(), 1, rec.size(), file_) != rec.size()) {
    fail("{}: cannot write an event record: {}", path_.string(), errno_text(errno));
  }
}

}  // namespace nnperf
