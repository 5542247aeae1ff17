// libFuzzer target: final_results.json text through parse_final_results (what the activation
// study's analysis reads back). Only nnperf::Error may escape, one line naming the file; parsed
// values are in range (accuracies in [0, 1], batch size and test samples >= 1).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "nnperf/core/error.h"
#include "nnperf/io/records.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  nnperf::FinalResults r;
  try {
    r = nnperf::parse_final_results(text, "final_results.json");
  } catch (const nnperf::Error& e) {
    nnperf::fuzz::check_error_message(e.what(), "final_results.json");
    return 0;
  }
  FUZZ_CHECK(r.final_test_acc >= 0 && r.final_test_acc <= 1, "test acc %g", r.final_test_acc);
  FUZZ_CHECK(std::isfinite(r.final_test_loss), "test loss %g", r.final_test_loss);
  if (r.final_val_acc) FUZZ_CHECK(*r.final_val_acc >= 0 && *r.final_val_acc <= 1, "val acc %g", *r.final_val_acc);
  FUZZ_CHECK(r.batch_size >= 1, "batch %lld", static_cast<long long>(r.batch_size));
  FUZZ_CHECK(r.test_samples >= 1, "test samples %lld", static_cast<long long>(r.test_samples));
  return 0;
}
