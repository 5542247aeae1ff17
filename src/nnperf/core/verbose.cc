#include "nnperf/core/verbose.h"

#include <cstdlib>

namespace nnperf {

bool verbose_enabled(std::string_view category) {
  const char* env = std::getenv("NNPERF_VERBOSE");
  if (env == nullptr || category.empty()) return false;
  std::string_view rest(env);
  while (!rest.empty()) {
    const std::size_t end = rest.find_first_of(", ");
    if (rest.substr(0, end) == category) return true;
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  return false;
}

}  // namespace nnperf
