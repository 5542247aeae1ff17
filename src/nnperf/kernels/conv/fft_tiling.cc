// `fft_tiling`: FFT convolution on overlapping tiles (overlap-save), as cuDNN's FFT_TILING: each
// th x tw tile of the padded image yields (th-kh+1) x (tw-kw+1) outputs, so the transform stays
// small (at most 64 x 64, chosen per problem by the cost model), the packed weights are
// oc x icg small spectra, and one frequency block's slice of the tile spectra stays in L2 while
// the multiply-accumulate sweeps the output channels.
#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "nnperf/kernels/conv/conv_internal.h"
#include "nnperf/kernels/conv/fft_internal.h"

namespace nnperf {

namespace {

// Tile spectra (input + output) per pass: the packed weights are re-read once per pass, so a
// pass should hold many tiles (a 64-channel 224x224 layer: 256 tiles of 16x16, 2 passes).
constexpr std::size_t kChunkBudgetBytes = std::size_t{32} << 20;
constexpr int64_t kMaxTile = 64;
// Candidate transform sizes: those FFTW_ESTIMATE plans in one codelet pass (24x24 takes 2.6x
// the time of 32x32); an exact fit of the padded image is added when it is at most 64.
constexpr int64_t kTileSizes[] = {8, 9, 10, 12, 15, 16, 20, 32, 64};

}  // namespace

namespace fft_conv {

// The transform size with the lowest modelled cost; th and tw are chosen together, since the
// tile count and the half-spectrum width both enter the cost.
Geometry tiling_geometry(const ConvProblem& p) {
  auto candidates = [](int64_t k, int64_t padded, int64_t* out) {
    int n = 0;
    for (int64_t t : kTileSizes) {
      if (t >= k) out[n++] = t;
    }
    const int64_t fit = next_smooth(padded, false);
    if (fit >= k && fit <= kMaxTile) out[n++] = fit;
    return n;
  };
  int64_t hs[16], ws[16];
  const int nh = candidates(p.kh, p.ih + 2 * p.ph, hs);
  const int nw = candidates(p.kw, p.iw + 2 * p.pw, ws);
  GeometryPicker pick(p, kChunkBudgetBytes);
  for (int i = 0; i < nh; ++i) {
    for (int j = 0; j < nw; ++j) pick.offer(hs[i], ws[j]);
  }
  return pick.best();
}

}  // namespace fft_conv

std::string conv_fft_tiling_why_not(const ConvProblem& p) {
  std::string reason = fft_conv::why_not_common("fft_tiling", p);
  if (!reason.empty()) return reason;
  if (p.kh > kMaxTile || p.kw > kMaxTile) {
    return fmt::format("fft_tiling: kernel {}x{} larger than the largest tile ({}x{})", p.kh, p.kw,
                       kMaxTile, kMaxTile);
  }
  return "";
}

std::size_t conv_fft_tiling_workspace_bytes(const ConvProblem& p, int threads) {
  return fft_conv::workspace_bytes(p, fft_conv::tiling_geometry(p), threads);
}

std::size_t conv_fft_tiling_packed_floats(const ConvProblem& p) {
  return fft_conv::packed_floats(p, fft_conv::tiling_geometry(p));
}

void conv_fft_tiling_pack(const ConvProblem& p, const float* wei, float* packed, int /*threads*/) {
  fft_conv::pack_weights(p, fft_conv::tiling_geometry(p), wei, packed);
}

void conv_fft_tiling_run(const ConvArgs& args) {
  fft_conv::run(fft_conv::tiling_geometry(*args.p), args);
}

double conv_fft_tiling_cost(const ConvProblem& p, int threads) {
  return fft_conv::cost_seconds(p, fft_conv::tiling_geometry(p), threads, conv_machine());
}

}  // namespace nnperf
