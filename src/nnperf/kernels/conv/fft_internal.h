// Internals of the two FFT convolutions: `fft` (fft.cc, one 2-D real transform of each whole
// padded image plane) and `fft_tiling` (fft_tiling.cc, overlap-save tiles of a small transform).
// Both are the same pipeline on a different tile geometry (fft_engine.cc): forward r2c FFT of
// every (tile, input channel), a complex multiply-accumulate over input channels per frequency
// (fft_mac_impl.h, vectorised over 8 frequencies), inverse c2r FFT of every (tile, output
// channel), crop and bias. Exposed here for the registry rows and the tests.
#pragma once
#include <fftw3.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "nnperf/core/cpu.h"
#include "nnperf/kernels/conv/conv.h"
#include "nnperf/kernels/conv/conv_internal.h"

namespace nnperf::fft_conv {

// Frequencies per block: 8 real parts then 8 imaginary parts (one AVX2 vector each). This fixes
// the layout of the packed weights and the frequency buffers for every SIMD level.
inline constexpr int64_t kFreqBlock = 8;
inline constexpr int64_t kBlockFloats = 2 * kFreqBlock;

// The multiply-accumulate's register tile: kRo output channels x kRt tiles, each a complex vector
// of 8 frequencies in two registers: 2*2*2 = 8 accumulators + 2x2 weight vectors + 2 for X (14 of
// 16 ymm). Per input channel: 4 weight loads (L1) and 4 X loads (L2) feed 16 FMAs, 8 cycles at 2
// FMAs per cycle, the same as the latency of each accumulator's 2 dependent FMAs. 2x3 would
// hide that latency but needs 18 registers and spilled; 5x1 and 4x1 measured no faster, and
// four accumulators per output (one FMA each per channel) need a load per FMA: Zen3 does only
// two 256-bit loads per cycle, so 3x1 that way was 30% slower.
inline constexpr int kRo = 2;
inline constexpr int kRt = 2;
// Input channels per pass over the tiles: the kRo x 128 channels x 64 B = 16 KiB weight panel
// stays in L1 while every tile streams past it; the partial sums go through Y between passes.
inline constexpr int64_t kIcBlock = 128;

// The tiling of one problem. Tile (ty, tx) of an image covers rows [ty*uh, ty*uh + th) and
// columns [tx*uw, tx*uw + tw) of the zero-padded image; the circular correlation of that tile
// with the filter (zero-padded to th x tw) equals the convolution at its first uh x uw outputs
// (no index wraps around for them), so tiles overlap by kh-1 rows and kw-1 columns.
struct Geometry {
  int64_t th = 0, tw = 0;            // transform size (each 2-D real FFT is th x tw)
  int64_t uh = 0, uw = 0;            // outputs per tile: th - kh + 1, tw - kw + 1
  int64_t tiles_h = 0, tiles_w = 0;  // tiles per image: ceil(oh / uh), ceil(ow / uw)
  int64_t freqs = 0;                 // th * (tw/2 + 1): the r2c half spectrum
  int64_t nfb = 0;                   // frequency blocks: ceil(freqs / kFreqBlock)
  int64_t tiles = 0;                 // mb * tiles_h * tiles_w
  int64_t chunk_tiles = 0;           // tiles transformed and multiplied per pass (<= tiles)
};

// Geometry for transform size th x tw; chunk_tiles is the most tiles whose input and output
// spectra fit in chunk_budget_bytes (at least 1).
Geometry make_geometry(const ConvProblem& p, int64_t th, int64_t tw,
                       std::size_t chunk_budget_bytes);

// The cheapest of the transform sizes offered, by cost_seconds on one thread (the first offered
// wins ties); both algorithms pick their geometry with it, from their own candidate sizes.
class GeometryPicker {
 public:
  GeometryPicker(const ConvProblem& p, std::size_t chunk_budget_bytes)
      : p_(p), chunk_budget_bytes_(chunk_budget_bytes) {}
  void offer(int64_t th, int64_t tw);
  const Geometry& best() const { return best_; }

 private:
  const ConvProblem& p_;
  std::size_t chunk_budget_bytes_;
  Geometry best_;
  double best_cost_ = 0.0;
};

// "" when the pipeline can serve p, else "<name>: <reason>" (invalid problem, stride or dilation
// other than 1; groups are served by one multiply-accumulate per group).
std::string why_not_common(const char* name, const ConvProblem& p);

// The geometry each algorithm runs p with: fft.cc's one tile per image, fft_tiling.cc's
// cost-chosen small transform.
Geometry whole_image_geometry(const ConvProblem& p);
Geometry tiling_geometry(const ConvProblem& p);

// Sizes FFTW transforms fastest: products of 2, 3, 5 and 7.
bool is_smooth(int64_t n);
int64_t next_smooth(int64_t n, bool even);

// The shared pipeline. Packed weights: conj(DFT(w)) / (th*tw) in blocks of 8 re | 8 im; the
// conjugate turns the product into a cross-correlation (as PyTorch's conv2d) and the scale is
// c2r's missing 1/(th*tw). Order: [g][nfb], then for each frequency block one panel in the order
// the multiply-accumulate reads it: input-channel blocks of kIcBlock, in each output-channel
// groups of kRo, in each channel-major (c, o) pairs; so each kernel call streams one run of
// memory.
std::size_t packed_floats(const ConvProblem& p, const Geometry& geo);
// Also creates (once per process) the FFTW plans run() will use, so run() never plans.
void pack_weights(const ConvProblem& p, const Geometry& geo, const float* wei, float* packed);
std::size_t workspace_bytes(const ConvProblem& p, const Geometry& geo, int threads);
void run(const Geometry& geo, const ConvArgs& args);
// Seconds on machine m (rates calibrated on the fitted core by bench/fft_conv_bench.cc): for
// `guess` on the machine model, and for the choice of transform size on the fitted core.
double cost_seconds(const ConvProblem& p, const Geometry& geo, int threads, const ConvMachine& m);

// ---- FFTW plans ----
// A process-wide cache keyed by transform size, filled under a mutex (FFTW's planner is not
// thread-safe); the plans are executed concurrently with fftwf_execute_dft_r2c / _c2r on
// workspace buffers (64-byte aligned, so fftwf_alignment_of is 0 as for the planning arrays).
// NNPERF_FFTW=measure plans with FFTW_MEASURE (slow first call per size, faster transforms);
// the default is FFTW_ESTIMATE.
struct Plans {
  fftwf_plan forward = nullptr;  // r2c, th x tw real -> th x (tw/2+1) complex, out of place
  fftwf_plan inverse = nullptr;  // c2r, unnormalised; destroys its input
};
const Plans& plans_for(int64_t th, int64_t tw);
int64_t plans_created();  // how many sizes have been planned in this process (for the tests)

// ---- the frequency-domain multiply-accumulate, per SIMD level ----
// For one group and one frequency block:
//   Y[t][o] = sum_c X[t][c] * W[o][c]   (complex, 8 frequencies at a time)
// with X at x + t*x_tile_stride + c*16, W the panel of this group and block (see above) and Y at
// y + t*y_tile_stride + o*y_oc_stride (each 8 re then 8 im floats).
struct MacArgs {
  const float* x = nullptr;
  int64_t x_tile_stride = 0;
  const float* w = nullptr;
  float* y = nullptr;
  int64_t y_tile_stride = 0, y_oc_stride = 0;
  int64_t tiles = 0, ocg = 0, icg = 0;
};
void mac_portable(const MacArgs& m);
void mac_avx2(const MacArgs& m);
// Runs the kernel of `level`, capped at what this CPU supports (AVX-512 runs the AVX2 kernel).
void mac_with(SimdLevel level, const MacArgs& m);

}  // namespace nnperf::fft_conv
