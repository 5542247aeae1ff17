// libFuzzer target: convolution descriptors (benchdnn grammar) through parse_conv_problem.
// Properties checked beyond "no crash, no UB, no hang":
//  - the parser throws nothing but nnperf::Error (anything else escapes and libFuzzer reports it),
//    with a one-line message that starts by quoting the descriptor;
//  - a parsed problem is valid (invalid_reason() empty), its canonical string str() parses back
//    to the same fields and the same string;
//  - conv_problem_min_bytes is the exact float32 size of input + weights + output, positive and
//    never the overflow value for a parsed problem; FLOPs are finite and positive.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "nnperf/core/error.h"
#include "nnperf/kernels/conv/conv.h"

namespace {

bool same_fields(const nnperf::ConvProblem& a, const nnperf::ConvProblem& b) {
  return a.g == b.g && a.mb == b.mb && a.ic == b.ic && a.ih == b.ih && a.iw == b.iw &&
         a.oc == b.oc && a.kh == b.kh && a.kw == b.kw && a.sh == b.sh && a.sw == b.sw &&
         a.ph == b.ph && a.pw == b.pw && a.dh == b.dh && a.dw == b.dw;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  nnperf::ConvProblem p;
  try {
    p = nnperf::parse_conv_problem(text);
  } catch (const nnperf::Error& e) {
    nnperf::fuzz::check_error_message(e.what(), "convolution descriptor '");
    return 0;
  }
  FUZZ_CHECK(p.invalid_reason().empty(), "parsed an invalid problem: %s",
             p.invalid_reason().c_str());
  for (int64_t v : {p.g, p.mb, p.ic, p.ih, p.iw, p.oc, p.kh, p.kw, p.sh, p.sw, p.ph, p.pw, p.dh,
                    p.dw}) {
    FUZZ_CHECK(v >= 0 && v <= nnperf::kConvMaxTerm, "term %lld outside 0..kConvMaxTerm",
               static_cast<long long>(v));
  }
  FUZZ_CHECK(p.oh() >= 1 && p.ow() >= 1, "output %lldx%lld", static_cast<long long>(p.oh()),
             static_cast<long long>(p.ow()));

  const std::string canonical = p.str();
  nnperf::ConvProblem q;
  try {
    q = nnperf::parse_conv_problem(canonical);
  } catch (const nnperf::Error& e) {
    FUZZ_CHECK(false, "the canonical string %s of a parsed problem does not parse: %s",
               canonical.c_str(), e.what());
  }
  FUZZ_CHECK(same_fields(p, q), "%s parses to a different problem", canonical.c_str());
  FUZZ_CHECK(q.str() == canonical, "%s prints back as %s", canonical.c_str(), q.str().c_str());

  const int64_t bytes = nnperf::conv_problem_min_bytes(p);
  FUZZ_CHECK(bytes > 0 && bytes != std::numeric_limits<int64_t>::max(), "min bytes %lld for %s",
             static_cast<long long>(bytes), canonical.c_str());
  // invalid_reason caps each tensor at 1e12 elements, so this sum cannot overflow.
  FUZZ_CHECK(bytes == (p.src_numel() + p.wei_numel() + p.dst_numel()) * 4,
             "min bytes %lld for %s", static_cast<long long>(bytes), canonical.c_str());
  FUZZ_CHECK(std::isfinite(p.flops()) && p.flops() > 0, "flops %g for %s", p.flops(),
             canonical.c_str());
  return 0;
}
