// `implicit_precomp_gemm`: implicit_gemm with the patch gather precomputed (cuDNN's
// IMPLICIT_PRECOMP_GEMM idea). At plan time, beside the weight panels, pack_weights stores two
// int32 tables: koff[k] = offset of reduction index k = (c, r, s) and noff[j] = offset of output
// pixel j in a zero-padded copy of the image; element (k, j) of the patch matrix is then
// xpad[koff[k] + noff[j]], so the packing loop has no index arithmetic or bounds checks, only
// loads. The copy stores each padded row as sw phases (columns r, r+sw, ...), which makes the
// 16 pixels of a panel one or two contiguous runs at any stride: two vector loads (and a blend
// where the panel crosses a row end), AVX2 gathers where a panel spans three or more rows (maps
// narrower than 8, and some of 9-13 columns with padding). The run pads
// the image into the workspace (one copy of the input; none at stride 1 without padding) and
// shares implicit_gemm's loop nest.
#include <fmt/format.h>

#include <cstdint>
#include <limits>

#include "nnperf/kernels/conv/conv_internal.h"
#include "nnperf/kernels/conv/implicit_gemm_impl.h"

namespace nnperf {

namespace {

using conv_igemm::alias_i32;

int64_t padded_elements(const ConvProblem& p) {
  return p.ic * (p.ih + 2 * p.ph) * p.sw * conv_ceil_div(p.iw + 2 * p.pw, p.sw);
}

}  // namespace

std::string conv_implicit_precomp_gemm_why_not(const ConvProblem& p) {
  std::string reason = conv_serves_any(p);
  if (!reason.empty()) return reason;
  if (padded_elements(p) > std::numeric_limits<int32_t>::max()) {
    return fmt::format("the padded input ({} elements) does not fit the int32 offset tables",
                       padded_elements(p));
  }
  return "";
}

std::size_t conv_implicit_precomp_gemm_workspace_bytes(const ConvProblem& p, int threads) {
  const conv_igemm::Geometry g = conv_igemm::geometry(p, threads, true);
  return g.bpack_bytes + g.xpad_bytes;
}

std::size_t conv_implicit_precomp_gemm_packed_floats(const ConvProblem& p) {
  const conv_igemm::Geometry g = conv_igemm::geometry(p, 1, true);
  return g.a_floats + g.table_floats;
}

void conv_implicit_precomp_gemm_pack(const ConvProblem& p, const float* wei, float* packed,
                                     int /*threads*/) {
  const conv_igemm::Geometry geo = conv_igemm::geometry(p, 1, true);
  conv_igemm::pack_weight_panels(p, wei, packed);
  auto* koff = reinterpret_cast<alias_i32*>(packed + geo.a_floats);
  const int64_t k = p.icg() * p.kh * p.kw, n = p.oh() * p.ow(), ow = p.ow();
  for (int64_t idx = 0; idx < k; ++idx) {
    const int64_t s = idx % p.kw, r = idx / p.kw % p.kh, c = idx / (p.kw * p.kh);
    koff[idx] = static_cast<int32_t>(c * geo.hp * geo.rs + r * p.dh * geo.rs +
                                     (s * p.dw) % p.sw * geo.wph + (s * p.dw) / p.sw);
  }
  alias_i32* noff = koff + k;
  for (int64_t j = 0; j < n; ++j) {
    noff[j] = static_cast<int32_t>(j / ow * p.sh * geo.rs + j % ow);
  }
}

void conv_implicit_precomp_gemm_run(const ConvArgs& args) {
  const ConvProblem& p = *args.p;
  const conv_igemm::Geometry geo = conv_igemm::geometry(p, 1, true);
  const auto* koff = reinterpret_cast<const int32_t*>(args.packed + geo.a_floats);
  conv_igemm::run(args, true, koff, koff + p.icg() * p.kh * p.kw);
}

// As implicit_gemm (on the fitted core ~86 GFLOP/s, portable ~21), with cheaper packing (~0.1 ns
// per patch element: vector loads; ~0.4 with gathers on maps narrower than 8) plus one padded
// copy of the input, 8 bytes per padded element, at 1.35 x the core's 1-thread DRAM triad: timed
// alone (the GEMMs skipped) on 128 channels of 56x56 on a Zen 3 core whose triad is 19.7 GB/s,
// 26.5 GB/s at stride 2 (the vector deinterleave; 39.5 at stride 1), 2026-11-27. It was 15 / 21
// of the triad while the stride-2 copy went element by element.
constexpr double kRate = 86.0 / conv_fit::kFmaGflops;
constexpr double kPortableRate = 21.0 / conv_fit::kFmaGflops;
constexpr double kPadCopyDram = 1.35;

double conv_implicit_precomp_gemm_cost(const ConvProblem& p, int threads) {
  const ConvMachine m = conv_machine();
  const double pad_bytes =
      p.ph + p.pw > 0 || p.sw > 1 ? 8.0 * static_cast<double>(p.mb * padded_elements(p)) : 0.0;
  return conv_igemm::cost_seconds(p, threads, (m.avx2 ? kRate : kPortableRate) * m.fma_flops_per_s,
                                  m.seconds(p.ow() >= 8 ? 0.1e-9 : 0.4e-9)) +
         pad_bytes / (kPadCopyDram * m.dram_at(threads));
}

}  // namespace nnperf
