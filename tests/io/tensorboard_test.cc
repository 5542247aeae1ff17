// Tests for io/tensorboard: CRC32C against published vectors (RFC 3720) on both code paths, our
// own decoding of the written TFRecord/protobuf bytes, and a read-back with TensorBoard's Python
// EventAccumulator when $NNPERF_PYTHON names an interpreter with the tensorboard package.
#include "nnperf/io/tensorboard.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>

#include "nnperf/core/error.h"
#include "nnperf/core/rng.h"
#include "nnperf/io/files.h"
#include "nnperf/io/run_info.h"
#include "test_util.h"

namespace nnperf {
namespace {

namespace fs = std::filesystem;

TEST(Crc32c, KnownVectors) {
  const char* digits = "123456789";
  EXPECT_EQ(crc32c(digits, 9), 0xE3069283u);
  EXPECT_EQ(crc32c_portable(digits, 9), 0xE3069283u);
  EXPECT_EQ(crc32c("", 0), 0u);
  // RFC 3720, appendix B.4: 32 bytes of zeros, of ones, ascending, descending.
  unsigned char buf[32];
  std::memset(buf, 0, 32);
  EXPECT_EQ(crc32c(buf, 32), 0x8A9136AAu);
  std::memset(buf, 0xFF, 32);
  EXPECT_EQ(crc32c(buf, 32), 0x62A8AB43u);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<unsigned char>(i);
  EXPECT_EQ(crc32c(buf, 32), 0x46DD794Eu);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<unsigned char>(31 - i);
  EXPECT_EQ(crc32c(buf, 32), 0x113FDB5Cu);
  EXPECT_EQ(crc32c_portable(buf, 32), 0x113FDB5Cu);
}

TEST(Crc32c, HardwareAndTablePathsAgree) {
  Rng rng(17);
  std::vector<unsigned char> data(1600);
  for (auto& b : data) b = static_cast<unsigned char>(rng.below(256));
  for (std::size_t n : {1, 2, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 255, 1000, 1499}) {
    for (std::size_t offset : {0, 1, 3}) {  // unaligned starts too
      ASSERT_EQ(crc32c(data.data() + offset, n), crc32c_portable(data.data() + offset, n))
          << "n=" << n << " offset=" << offset;
    }
  }
  const uint32_t crc = 0x12345678u;
  EXPECT_EQ(crc32c_masked(crc), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

// A minimal protobuf/TFRecord decoder, independent of the writer's encoder.
struct Field {
  int number = 0;
  int wire = 0;
  uint64_t varint = 0;  // wire 0, 1 (raw bits), 5 (raw bits)
  std::string bytes;    // wire 2
};

uint64_t get_varint(const std::string& s, std::size_t& i) {
  uint64_t v = 0;
  for (int shift = 0; i < s.size(); shift += 7) {
    const auto b = static_cast<unsigned char>(s[i++]);
    v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) return v;
  }
  ADD_FAILURE() << "varint runs past the end";
  return v;
}

std::vector<Field> decode(const std::string& s) {
  std::vector<Field> out;
  std::size_t i = 0;
  while (i < s.size()) {
    const uint64_t key = get_varint(s, i);
    Field f;
    f.number = static_cast<int>(key >> 3);
    f.wire = static_cast<int>(key & 7);
    if (f.wire == 0) {
      f.varint = get_varint(s, i);
    } else if (f.wire == 1 || f.wire == 5) {
      const std::size_t n = f.wire == 1 ? 8 : 4;
      std::memcpy(&f.varint, s.data() + i, n);
      i += n;
    } else if (f.wire == 2) {
      const uint64_t n = get_varint(s, i);
      f.bytes = s.substr(i, n);
      i += n;
    } else {
      ADD_FAILURE() << "unexpected wire type " << f.wire;
      return out;
    }
    out.push_back(f);
  }
  EXPECT_EQ(i, s.size());
  return out;
}

std::vector<std::string> read_records(const fs::path& p) {
  const std::string data = read_file(p);
  std::vector<std::string> records;
  std::size_t i = 0;
  while (i < data.size()) {
    EXPECT_GE(data.size() - i, 16u) << "record header cut at byte " << i;
    uint64_t len;
    uint32_t len_crc, data_crc;
    std::memcpy(&len, data.data() + i, 8);
    std::memcpy(&len_crc, data.data() + i + 8, 4);
    EXPECT_EQ(len_crc, crc32c_masked(crc32c_portable(data.data() + i, 8)));
    EXPECT_LE(i + 16 + len, data.size());
    records.push_back(data.substr(i + 12, len));
    std::memcpy(&data_crc, data.data() + i + 12 + len, 4);
    EXPECT_EQ(data_crc, crc32c_masked(crc32c_portable(records.back().data(), len)));
    i += 16 + len;
  }
  return records;
}

double as_double(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}
float as_float(uint64_t bits) {
  auto b32 = static_cast<uint32_t>(bits);
  float f;
  std::memcpy(&f, &b32, 4);
  return f;
}

struct Scalar {
  std::string tag;
  int64_t step;
  float value;
};
const std::vector<Scalar> kScalars = {{"loss/train", 0, 2.302585f}, {"loss/train", 1, 1.25f},
                                      {"accuracy", 1, 0.5f},        {"loss/train", 2, 0.75f},
                                      {"accuracy", 2, 0.8125f},     {"lr", 1000000000000, 1e-4f},
                                      {"weird tag: é/ü", 3, -3.5f}};

TEST(TensorBoardWriter, RecordsDecodeToTheEvents) {
  test::TempDir dir("nnperf-tb");
  const fs::path logdir = dir / "logs" / "run1";  // created by the writer
  const double before = static_cast<double>(std::time(nullptr));
  fs::path path;
  {
    TensorBoardWriter w(logdir);
    path = w.path();
    for (const auto& s : kScalars) w.add_scalar(s.tag, s.value, s.step);
    EXPECT_EQ(read_records(path).size(), kScalars.size() + 1) << "every scalar flushed";
  }
  EXPECT_EQ(path.parent_path(), logdir);
  const std::string name = path.filename().string();
  EXPECT_TRUE(name.starts_with("events.out.tfevents.")) << name;
  EXPECT_NE(name.find("." + hostname()), std::string::npos) << name;

  const auto records = read_records(path);
  ASSERT_EQ(records.size(), kScalars.size() + 1);
  const auto first = decode(records[0]);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].number, 1);
  EXPECT_NEAR(as_double(first[0].varint), before, 5.0);
  EXPECT_EQ(first[1].number, 3);
  EXPECT_EQ(first[1].bytes, "brain.Event:2");
  for (std::size_t k = 0; k < kScalars.size(); ++k) {
    const auto ev = decode(records[k + 1]);
    ASSERT_EQ(ev.size(), 3u);
    EXPECT_EQ(ev[0].number, 1);
    EXPECT_GE(as_double(ev[0].varint), as_double(first[0].varint));
    EXPECT_EQ(ev[1].number, 2);
    EXPECT_EQ(static_cast<int64_t>(ev[1].varint), kScalars[k].step);
    EXPECT_EQ(ev[2].number, 5);
    const auto summary = decode(ev[2].bytes);
    ASSERT_EQ(summary.size(), 1u);
    const auto value = decode(summary[0].bytes);
    ASSERT_EQ(value.size(), 2u);
    EXPECT_EQ(value[0].bytes, kScalars[k].tag);
    EXPECT_EQ(value[1].number, 2);
    EXPECT_EQ(value[1].wire, 5);
    EXPECT_EQ(as_float(value[1].varint), kScalars[k].value);
  }
}

TEST(TensorBoardWriter, TwoWritersInOneFolderGetTwoFiles) {
  test::TempDir dir("nnperf-tb");
  TensorBoardWriter a(dir.path());
  TensorBoardWriter b(dir.path());
  EXPECT_NE(a.path(), b.path());
  a.add_scalar("x", 1, 1);
  b.add_scalar("x", 2, 1);
  EXPECT_EQ(read_records(a.path()).size(), 2u);
  EXPECT_EQ(read_records(b.path()).size(), 2u);
  EXPECT_THROW(a.add_scalar("", 1, 1), Error);
}

// A file written again under its name, opened at its time, with its scalars at their times, is
// the same bytes (how the report rebuilds a run's event file); the name must be a plain file name
// and a file never clobbered.
TEST(TensorBoardWriter, AFileWrittenAgainWithItsTimesHasTheSameBytes) {
  test::TempDir dir("nnperf-tb");
  fs::path original;
  std::string name;
  double opened = 0;
  const double t0 = 1795881593.25;
  {
    TensorBoardWriter w(dir / "a");
    original = w.path();
    name = w.path().filename().string();
    opened = w.opened();
    for (std::size_t k = 0; k < kScalars.size(); ++k)
      w.add_scalar(kScalars[k].tag, kScalars[k].value, kScalars[k].step, t0 + 0.125 * k);
  }
  EXPECT_NEAR(opened, static_cast<double>(std::time(nullptr)), 5.0);
  {
    TensorBoardWriter w(dir / "b", name, opened);
    EXPECT_EQ(w.opened(), opened);
    for (std::size_t k = 0; k < kScalars.size(); ++k)
      w.add_scalar(kScalars[k].tag, kScalars[k].value, kScalars[k].step, t0 + 0.125 * k);
  }
  EXPECT_EQ(test::read_text(dir / "b" / name), test::read_text(original));
  const auto ev = decode(read_records(dir / "b" / name)[2]);
  EXPECT_EQ(as_double(ev[0].varint), t0 + 0.125);
  EXPECT_THROW(TensorBoardWriter(dir / "b", name, opened), Error);  // exists: never clobbered
  EXPECT_EQ(test::read_text(dir / "b" / name), test::read_text(original));
  for (const char* bad : {"", "..", "../x", "a/b"}) {
    EXPECT_THROW(TensorBoardWriter(dir / "c", bad, opened), Error) << bad;
  }
  EXPECT_FALSE(fs::exists(dir / "x"));
}

TEST(TensorBoardWriter, TensorBoardReadsItBack) {
  const char* py = std::getenv("NNPERF_PYTHON");
  if (py == nullptr || *py == '\0') {
    GTEST_SKIP() << "NNPERF_PYTHON is not set; set it to a python with the tensorboard package "
                    "(scripts/tb-venv.sh creates one) to check files with TensorBoard's reader";
  }
  const auto probe = test::run_command(fmt::format("'{}' -c 'import tensorboard'", py));
  if (probe.exit_code != 0) {
    GTEST_SKIP() << "NNPERF_PYTHON=" << py << " cannot import tensorboard: " << probe.err;
  }
  test::TempDir dir("nnperf-tb");
  {
    TensorBoardWriter w(dir / "logs");
    for (const auto& s : kScalars) w.add_scalar(s.tag, s.value, s.step);
  }
  write_file_atomic(dir / "read.py", R"(import json, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1])
acc.Reload()
out = {tag: [[e.step, e.value] for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}
print(json.dumps(out))
)");
  const auto r = test::run_command(
      fmt::format("'{}' '{}' '{}'", py, (dir / "read.py").string(), (dir / "logs").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto got = nlohmann::json::parse(r.out);
  std::map<std::string, std::vector<std::pair<int64_t, float>>> want;
  for (const auto& s : kScalars) want[s.tag].push_back({s.step, s.value});
  ASSERT_EQ(got.size(), want.size()) << r.out;
  for (const auto& [tag, points] : want) {
    ASSERT_TRUE(got.contains(tag)) << tag << " missing in " << r.out;
    const auto& series = got[tag];
    ASSERT_EQ(series.size(), points.size()) << tag;
    for (std::size_t i = 0; i < points.size(); ++i) {
      EXPECT_EQ(series[i][0].get<int64_t>(), points[i].first) << tag;
      EXPECT_EQ(series[i][1].get<double>(), static_cast<double>(points[i].second)) << tag;
    }
  }
}

}  // namespace
}  // namespace nnperf
