// io/records: final_results.json as the activation study reads it back, including where the run
// trained (hyperparameters.device: absent in files from before it existed, then "cpu").
#include "nnperf/io/records.h"

#include <gtest/gtest.h>

#include <string>

#include "nnperf/core/error.h"

namespace nnperf {
namespace {

std::string final_results(const std::string& hyperparameters) {
  return R"({"activation": "ReLU", "final_test_acc": 0.875, "final_test_loss": 0.35,
             "final_val_acc": null, "imgs_per_sec": 1000, "timer_empty_interval_ns": 20,
             "test_samples": 500, "hyperparameters": )" +
         hyperparameters + "}";
}

TEST(Records, FinalResultsCarryTheDevice) {
  const FinalResults old = parse_final_results(final_results(R"({"batch_size": 64})"), "f");
  EXPECT_EQ(old.device, "cpu");
  EXPECT_EQ(old.batch_size, 64);
  EXPECT_EQ(old.test_samples, 500);
  EXPECT_FALSE(old.final_val_acc.has_value());
  const FinalResults gpu =
      parse_final_results(final_results(R"({"batch_size": 32, "device": "cuda"})"), "f");
  EXPECT_EQ(gpu.device, "cuda");
  try {
    (void)parse_final_results(final_results(R"({"batch_size": 32, "device": "tpu"})"), "x.json");
    FAIL() << "device tpu accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("x.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("expected cpu or cuda, got 'tpu'"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)parse_final_results(final_results(R"({"batch_size": 32, "device": 3})"), "f"),
               Error);
}

}  // namespace
}  // namespace nnperf
