// libFuzzer target: run.json text through parse_run_json (what output-folder ownership, profile
// --resume and nnperf status read). Only nnperf::Error may escape, one line naming the file; a
// parsed profile record names a model and an algorithm usable as file names.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "nnperf/core/error.h"
#include "nnperf/io/records.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  nnperf::RunJson r;
  try {
    r = nnperf::parse_run_json(text, "run.json");
  } catch (const nnperf::Error& e) {
    nnperf::fuzz::check_error_message(e.what(), "run.json");
    return 0;
  }
  FUZZ_CHECK(!r.job.empty(), "an empty job");
  if (r.job == "profile") {
    FUZZ_CHECK(!r.model.empty() && r.model.find('/') == std::string::npos, "model '%s'", r.model.c_str());
    FUZZ_CHECK(!r.algorithm.empty() && r.algorithm.find('/') == std::string::npos, "algorithm '%s'",
               r.algorithm.c_str());
    for (int64_t s : r.sizes) FUZZ_CHECK(s >= 1, "size %lld", static_cast<long long>(s));
    if (r.setup) FUZZ_CHECK(r.setup->is_object(), "a setup that is not an object");
  }
  return 0;
}
