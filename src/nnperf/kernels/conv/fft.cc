// `fft`: convolution by 2-D real FFTs of each whole zero-padded image plane (FFTW r2c / c2r at a
// 2^a 3^b 5^c 7^d size that holds it, picked by the cost model), the filters transformed once at
// plan time, a complex multiply-accumulate over input channels per frequency, one inverse
// transform per output plane. The packed weights hold oc x icg whole spectra (~1 GB for a VGG16
// layer at 224), so at batch 1 the run streams them from DRAM: it pays off for 5x5 and larger
// kernels; fft_tiling (small transforms) was as fast or faster on every layer measured.
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "nnperf/kernels/conv/conv_internal.h"
#include "nnperf/kernels/conv/fft_internal.h"

namespace nnperf {

namespace {

// All images of a batch share each pass over the packed weights while their spectra fit here;
// beyond it the batch is split into equal chunks.
constexpr std::size_t kChunkBudgetBytes = std::size_t{256} << 20;
// The weight spectra are plan-time memory of the layer; refuse beyond this.
constexpr double kMaxPackedBytes = 2.0 * (1 << 30);
// Larger planes would overflow the layout arithmetic long before they fit in memory.
constexpr int64_t kMaxPoints = int64_t{1} << 26;

}  // namespace

namespace fft_conv {

Geometry whole_image_geometry(const ConvProblem& p) {
  // The 7-smooth sizes from the padded image up to 1.5x it, th and tw chosen together by the
  // cost model: a few more points can buy a much faster FFTW plan (64 rather than 60), but
  // every point also enlarges the weight spectra the multiply-accumulate streams. tw is even
  // (r2c keeps tw/2+1 columns; even sizes are FFTW's faster case).
  const int64_t hp = p.ih + 2 * p.ph, wp = p.iw + 2 * p.pw;
  GeometryPicker pick(p, kChunkBudgetBytes);
  for (int64_t th = next_smooth(hp, false); th <= std::max(hp + 1, hp * 3 / 2);
       th = next_smooth(th + 1, false)) {
    for (int64_t tw = next_smooth(wp, true); tw <= std::max(wp + 2, wp * 3 / 2);
         tw = next_smooth(tw + 1, true)) {
      pick.offer(th, tw);
    }
  }
  return pick.best();
}

}  // namespace fft_conv

std::string conv_fft_why_not(const ConvProblem& p) {
  std::string reason = fft_conv::why_not_common("fft", p);
  if (!reason.empty()) return reason;
  const int64_t hp = p.ih + 2 * p.ph, wp = p.iw + 2 * p.pw;
  if (hp * wp > kMaxPoints) {
    return fmt::format("fft: padded image {}x{} too large for one transform (max {} points)", hp,
                       wp, kMaxPoints);
  }
  const fft_conv::Geometry geo = fft_conv::whole_image_geometry(p);
  const double bytes = static_cast<double>(fft_conv::packed_floats(p, geo)) * 4.0;
  if (bytes > kMaxPackedBytes) {
    return fmt::format(
        "fft: the {}x{} spectra of the weights would take {:.1f} GiB (limit {:.0f} GiB); "
        "fft_tiling transforms small tiles instead",
        geo.th, geo.tw, bytes / (1 << 30), kMaxPackedBytes / (1 << 30));
  }
  return "";
}

std::size_t conv_fft_workspace_bytes(const ConvProblem& p, int threads) {
  return fft_conv::workspace_bytes(p, fft_conv::whole_image_geometry(p), threads);
}

std::size_t conv_fft_packed_floats(const ConvProblem& p) {
  return fft_conv::packed_floats(p, fft_conv::whole_image_geometry(p));
}

void conv_fft_pack(const ConvProblem& p, const float* wei, float* packed, int /*threads*/) {
  fft_conv::pack_weights(p, fft_conv::whole_image_geometry(p), wei, packed);
}

void conv_fft_run(const ConvArgs& args) {
  fft_conv::run(fft_conv::whole_image_geometry(*args.p), args);
}

double conv_fft_cost(const ConvProblem& p, int threads) {
  return fft_conv::cost_seconds(p, fft_conv::whole_image_geometry(p), threads, conv_machine());
}

}  // namespace nnperf
