// NNPERF_VERBOSE: a comma-separated list of diagnostic categories, parsed in this one place for
// every layer of the library (as ONEDNN_VERBOSE is). Categories:
//   dispatch  each layer's plan-time algorithm choice and fallback reason (nn/graph.cc)
//   exec      one line per op execution with its time (profile/exec_log.h, installed by runs/)
#pragma once
#include <string_view>

namespace nnperf {

// True when NNPERF_VERBOSE lists `category` ("dispatch", "exec"); items are separated by commas
// or spaces and compared exactly ("dispatch,exec" turns both on). Reads the environment on
// every call (plan time and run set-up only), so a test may change it.
bool verbose_enabled(std::string_view category);

}  // namespace nnperf
