// Tests for data/cifar: CIFAR-10 and CIFAR-100 binary files written at run time into a TempDir
// (the real archives are not on the test machines) with known bytes: pixel order and scaling
// against hand-computed values, fine and coarse labels, and every refusal (cut record, bad label,
// missing batch, wrong folder, memory budget).
#include "nnperf/data/cifar.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "nnperf/core/error.h"
#include "test_util.h"

namespace nnperf {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

// The pixel byte of record r, channel c, row y, column x: distinct enough to catch a swapped
// plane, row or column.
unsigned char pixel(int r, int c, int y, int x) {
  return static_cast<unsigned char>((r * 37 + c * 101 + y * 7 + x * 3) % 256);
}

std::string record(int r, std::vector<unsigned char> labels) {
  std::string s(labels.begin(), labels.end());
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 32; ++y) {
      for (int x = 0; x < 32; ++x) s.push_back(static_cast<char>(pixel(r, c, y, x)));
    }
  }
  return s;
}

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A CIFAR-10 folder: five training batches of `per` records (labels (r + batch) % 10) and a test
// batch.
fs::path make_cifar10(const TempDir& tmp, int per) {
  const fs::path dir = tmp / "cifar-10-batches-bin";
  fs::create_directories(dir);
  for (int b = 1; b <= 5; ++b) {
    std::string bytes;
    for (int r = 0; r < per; ++r) {
      bytes += record(r + 10 * b, {static_cast<unsigned char>((r + b) % 10)});
    }
    write_file(dir / ("data_batch_" + std::to_string(b) + ".bin"), bytes);
  }
  write_file(dir / "test_batch.bin", record(0, {9}) + record(1, {0}) + record(2, {4}));
  return dir;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

using test::ScopedEnv;

TEST(Cifar, ParseThreeRecordsPixelOrderAndScaling) {
  const std::string bytes = record(0, {3}) + record(1, {7}) + record(2, {0});
  const Dataset ds = parse_cifar_records(bytes, 1, "three.bin");
  ASSERT_EQ(ds.size(), 3);
  EXPECT_EQ(ds.images.shape().dims(), (std::vector<int64_t>{3, 3, 32, 32}));
  EXPECT_EQ(ds.labels, (std::vector<int32_t>{3, 7, 0}));
  EXPECT_EQ(ds.num_classes, 10);
  EXPECT_EQ(ds.name, "three.bin");
  // Record 1, green plane (c = 1), row 5, column 9: byte (37 + 101 + 35 + 27) % 256 = 200.
  EXPECT_EQ(pixel(1, 1, 5, 9), 200);
  EXPECT_EQ(ds.images[((1 * 3 + 1) * 32 + 5) * 32 + 9], 200.0f / 255.0f);
  // Record 2, blue plane, row 31, column 0: (74 + 202 + 217) % 256 = 237.
  EXPECT_EQ(ds.images[((2 * 3 + 2) * 32 + 31) * 32 + 0], 237.0f / 255.0f);
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 3; ++c) {
      for (int y = 0; y < 32; ++y) {
        for (int x = 0; x < 32; ++x) {
          ASSERT_EQ(ds.images[((r * 3 + c) * 32 + y) * 32 + x],
                    static_cast<float>(pixel(r, c, y, x)) / 255.0f)
              << r << " " << c << " " << y << " " << x;
        }
      }
    }
  }
  const Dataset two = parse_cifar_records(bytes, 1, "three.bin", {.limit = 2});
  EXPECT_EQ(two.size(), 2);
  EXPECT_EQ(two.labels, (std::vector<int32_t>{3, 7}));
}

TEST(Cifar, Cifar100FineAndCoarseLabels) {
  TempDir tmp("nnperf-cifar");
  const fs::path dir = tmp / "cifar-100-binary";
  fs::create_directories(dir);
  write_file(dir / "train.bin", record(0, {19, 99}) + record(1, {4, 31}));
  write_file(dir / "test.bin", record(2, {0, 0}));
  const Dataset fine = load_cifar(dir, CifarSplit::kTrain);
  EXPECT_EQ(fine.labels, (std::vector<int32_t>{99, 31}));
  EXPECT_EQ(fine.num_classes, 100);
  EXPECT_EQ(fine.name, "cifar-100/train");
  EXPECT_EQ(fine.images[3 * 1024 + 0], static_cast<float>(pixel(1, 0, 0, 0)) / 255.0f);
  const Dataset coarse = load_cifar(dir, CifarSplit::kTrain, {.label = CifarLabel::kCoarse});
  EXPECT_EQ(coarse.labels, (std::vector<int32_t>{19, 4}));
  EXPECT_EQ(coarse.num_classes, 20);
  EXPECT_EQ(coarse.name, "cifar-100-coarse/train");
  // The parent folder (where the archive was extracted) is accepted too.
  const Dataset test = load_cifar(tmp.path(), CifarSplit::kTest);
  EXPECT_EQ(test.size(), 1);
  EXPECT_EQ(test.name, "cifar-100/test");

  EXPECT_NE(error_of([&] {
              parse_cifar_records(record(0, {20, 5}), 2, "c.bin");
            }).find("c.bin: record 0 has coarse label 20 (expected 0 to 19)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              parse_cifar_records(record(0, {1, 1}) + record(1, {2, 100}), 2, "f.bin");
            }).find("f.bin: record 1 has fine label 100 (expected 0 to 99)"),
            std::string::npos);
}

TEST(Cifar, Cifar10TrainConcatenatesTheFiveBatchesInOrder) {
  TempDir tmp("nnperf-cifar");
  const fs::path dir = make_cifar10(tmp, 2);
  const Dataset train = load_cifar(dir, CifarSplit::kTrain);
  ASSERT_EQ(train.size(), 10);
  EXPECT_EQ(train.name, "cifar-10/train");
  EXPECT_EQ(train.labels, (std::vector<int32_t>{1, 2, 2, 3, 3, 4, 4, 5, 5, 6}));
  // Sample 5 = batch 3, record 1 (r = 31): its red pixel at (0, 0).
  EXPECT_EQ(train.images[5 * 3072], static_cast<float>(pixel(31, 0, 0, 0)) / 255.0f);
  const Dataset test = load_cifar(dir, CifarSplit::kTest);
  EXPECT_EQ(test.labels, (std::vector<int32_t>{9, 0, 4}));
  const Dataset limited = load_cifar(dir, CifarSplit::kTrain, {.limit = 3});
  EXPECT_EQ(limited.labels, (std::vector<int32_t>{1, 2, 2}));
  EXPECT_EQ(limited.images[2 * 3072 + 100], train.images[2 * 3072 + 100]);
}

TEST(Cifar, CutRecordNamesFileSizeRecordSizeAndLeftover) {
  const std::string bytes = record(0, {1}) + record(1, {2}).substr(0, 1000);
  const std::string e = error_of([&] { parse_cifar_records(bytes, 1, "cut.bin"); });
  EXPECT_NE(e.find("cut.bin: size 4073 bytes is not a whole number of CIFAR-10 records of 3073 "
                   "bytes"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("1 whole records and 1000 bytes left over"), std::string::npos) << e;
  EXPECT_NE(error_of([] { parse_cifar_records("", 2, "empty.bin"); }).find("empty.bin: empty"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_cifar_records("x", 3, "odd"); }).find("odd: label_bytes must be 1"),
            std::string::npos);
}

TEST(Cifar, BadLabelNamesFileRecordAndValue) {
  TempDir tmp("nnperf-cifar");
  const fs::path dir = make_cifar10(tmp, 2);
  write_file(dir / "data_batch_4.bin", record(0, {0}) + record(1, {10}));
  const std::string e = error_of([&] { load_cifar(dir, CifarSplit::kTrain); });
  EXPECT_NE(
      e.find((dir / "data_batch_4.bin").string() + ": record 1 has label 10 (expected 0 to 9)"),
      std::string::npos)
      << e;
}

TEST(Cifar, MissingBatchSaysWhichFileAndWhereToPutWhat) {
  TempDir tmp("nnperf-cifar");
  const fs::path dir = make_cifar10(tmp, 1);
  fs::remove(dir / "data_batch_3.bin");
  const std::string e = error_of([&] { load_cifar(dir, CifarSplit::kTrain); });
  EXPECT_EQ(e.rfind((dir / "data_batch_3.bin").string() + ": missing", 0), 0u) << e;
  EXPECT_NE(
      e.find("download cifar-10-binary.tar.gz from https://www.cs.toronto.edu/~kriz/cifar.html "
             "and extract it so that " +
             (dir / "data_batch_1.bin").string() + " exists"),
      std::string::npos)
      << e;
  // The test split alone still loads.
  EXPECT_EQ(load_cifar(dir, CifarSplit::kTest).size(), 3);
  // A cut batch among the five is named too.
  write_file(dir / "data_batch_3.bin", record(0, {1}).substr(0, 3000));
  EXPECT_NE(error_of([&] {
              load_cifar(dir, CifarSplit::kTrain);
            }).find("data_batch_3.bin: size 3000 bytes"),
            std::string::npos);
}

TEST(Cifar, WrongFolderIsRefusedWithTheDownloadHint) {
  TempDir tmp("nnperf-cifar");
  std::string e = error_of([&] { load_cifar(tmp / "nowhere", CifarSplit::kTrain); });
  EXPECT_NE(e.find("nowhere: CIFAR folder not found"), std::string::npos) << e;
  EXPECT_NE(e.find("https://www.cs.toronto.edu/~kriz/cifar.html"), std::string::npos) << e;
  write_file(tmp / "train-images-idx3-ubyte", "not cifar");
  e = error_of([&] { load_cifar(tmp.path(), CifarSplit::kTrain); });
  EXPECT_NE(e.find(tmp.path().string() + ": no CIFAR binary files here"), std::string::npos) << e;
  EXPECT_NE(e.find("never downloads"), std::string::npos) << e;
}

TEST(Cifar, MemoryBudgetIsCheckedBeforeAllocating) {
  TempDir tmp("nnperf-cifar");
  const fs::path dir = make_cifar10(tmp, 40);  // 200 images: 2.4 MB of floats
  ScopedEnv limit("NNPERF_MEMORY_LIMIT", "1M");
  const std::string e = error_of([&] { load_cifar(dir, CifarSplit::kTrain); });
  EXPECT_NE(e.find("200 images of 3x32x32 as float32"), std::string::npos) << e;
  EXPECT_NE(e.find("needs"), std::string::npos) << e;
  EXPECT_EQ(load_cifar(dir, CifarSplit::kTrain, {.limit = 10}).size(), 10);
}

}  // namespace
}  // namespace nnperf
