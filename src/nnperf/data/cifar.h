// CIFAR-10 and CIFAR-100 in their "binary version" (the .bin files of cifar-10-binary.tar.gz and
// cifar-100-binary.tar.gz from https://www.cs.toronto.edu/~kriz/cifar.html). A file is a run of
// fixed-size records: 1 label byte (CIFAR-10) or 2 (CIFAR-100: coarse, fine), then 3,072 pixel
// bytes = the 32x32 R plane, G plane and B plane, each row-major: already N x C x H x W order.
// Every size and label is checked before it is used; errors name the file and what was expected.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "nnperf/data/dataset.h"

namespace nnperf {

enum class CifarSplit { kTrain, kTest };
// CIFAR-100 has two labels per image: the fine class (100) and its superclass (20, "coarse").
enum class CifarLabel { kFine, kCoarse };

constexpr int kCifarSide = 32;
constexpr int kCifarChannels = 3;
constexpr int64_t kCifarPixelBytes = int64_t{kCifarChannels} * kCifarSide * kCifarSide;  // 3072

struct CifarOptions {
  CifarLabel label = CifarLabel::kFine;  // CIFAR-100 only; CIFAR-10 has one label
  int64_t limit = 0;                     // keep the first `limit` records (0: all)
};

// Loads `dir` = cifar-10-batches-bin/ (data_batch_1.bin .. data_batch_5.bin for kTrain,
// test_batch.bin for kTest) or cifar-100-binary/ (train.bin, test.bin); which one is decided by
// the files present. A folder holding one of those two folders is accepted as well. All five
// CIFAR-10 training batches must be present. Returns N x 3 x 32 x 32 floats (byte / 255), named
// "cifar-10/train", "cifar-100/test" or "cifar-100-coarse/train". Each file's size must be a
// whole number of records; every label is range-checked; the float copy is checked against the
// memory budget (core/memory.h) before it is allocated. nnperf never downloads the data.
Dataset load_cifar(const std::filesystem::path& dir, CifarSplit split,
                   const CifarOptions& options = {});

// The records of one CIFAR file already in memory (the code behind load_cifar; the fuzzer's
// entry). label_bytes is 1 (CIFAR-10) or 2 (CIFAR-100); `source` names the bytes in errors and
// the result's name.
Dataset parse_cifar_records(std::string_view bytes, int label_bytes, const std::string& source,
                            const CifarOptions& options = {});

const char* to_string(CifarSplit split);  // "train", "test"

}  // namespace nnperf
