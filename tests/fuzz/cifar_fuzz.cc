// libFuzzer target: CIFAR binary records through parse_cifar_records (the code behind load_cifar),
// with 1 label byte (CIFAR-10) and 2 (CIFAR-100, fine and coarse). The input is also cut to a
// whole number of records so that mutations reach the label checks and the conversion, not only
// the size check. Properties: a parsed data set has size / record_size images of 3x32x32 in
// [0,1] equal to byte / 255 and labels within num_classes; every refusal is a one-line
// nnperf::Error naming the input.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "nnperf/core/error.h"
#include "nnperf/data/cifar.h"

namespace {

void parse_and_check(std::string_view bytes, int label_bytes, nnperf::CifarLabel label) {
  const std::string source = label_bytes == 1 ? "fuzz-cifar10.bin" : "fuzz-cifar100.bin";
  const int64_t rec = label_bytes + nnperf::kCifarPixelBytes;
  nnperf::Dataset ds;
  try {
    ds = nnperf::parse_cifar_records(bytes, label_bytes, source, {.label = label});
  } catch (const nnperf::Error& e) {
    nnperf::fuzz::check_error_message(e.what(), source);
    return;
  }
  const int64_t n = static_cast<int64_t>(bytes.size()) / rec;
  FUZZ_CHECK(static_cast<int64_t>(bytes.size()) % rec == 0 && n >= 1, "%zu bytes accepted",
             bytes.size());
  FUZZ_CHECK(ds.size() == n && ds.images.numel() == n * nnperf::kCifarPixelBytes,
             "%lld records parsed as %lld", static_cast<long long>(n),
             static_cast<long long>(ds.size()));
  const int classes = label_bytes == 1 ? 10 : (label == nnperf::CifarLabel::kCoarse ? 20 : 100);
  FUZZ_CHECK(ds.num_classes == classes, "num_classes %d", ds.num_classes);
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  for (int64_t i = 0; i < n; ++i) {
    const int32_t l = ds.labels[static_cast<std::size_t>(i)];
    FUZZ_CHECK(l >= 0 && l < classes, "label %d accepted", l);
    const int want =
        label_bytes == 1 || label == nnperf::CifarLabel::kCoarse ? b[i * rec] : b[i * rec + 1];
    FUZZ_CHECK(l == want, "record %lld: label %d, byte %d", static_cast<long long>(i), l, want);
    for (int64_t j = 0; j < nnperf::kCifarPixelBytes; j += 97) {
      const float v = ds.images[i * nnperf::kCifarPixelBytes + j];
      FUZZ_CHECK(v == static_cast<float>(b[i * rec + label_bytes + j]) / 255.0f,
                 "pixel %lld of record %lld", static_cast<long long>(j), static_cast<long long>(i));
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (int label_bytes : {1, 2}) {
    const std::size_t rec = static_cast<std::size_t>(label_bytes + nnperf::kCifarPixelBytes);
    for (auto label : {nnperf::CifarLabel::kFine, nnperf::CifarLabel::kCoarse}) {
      if (label_bytes == 1 && label == nnperf::CifarLabel::kCoarse) continue;
      parse_and_check(bytes, label_bytes, label);
      if (size % rec != 0) parse_and_check(bytes.substr(0, size - size % rec), label_bytes, label);
    }
  }
  return 0;
}
