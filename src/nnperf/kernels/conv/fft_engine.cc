// The pipeline both FFT convolutions run on, for any tile geometry: forward r2c FFT of every
// (tile, input channel) into frequency blocks, the complex multiply-accumulate over input
// channels (one job per group and frequency block), inverse c2r FFT of every (tile, output
// channel), crop to the tile's valid outputs, add bias. Also the FFTW plan cache, the weight
// transform done at plan time, the portable multiply-accumulate and the cost model.
#include <fftw3.h>
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "nnperf/core/cpu.h"
#include "nnperf/core/error.h"
#include "nnperf/core/interrupt.h"
#include "nnperf/kernels/conv/conv_internal.h"
#include "nnperf/kernels/conv/fft_internal.h"
#include "nnperf/kernels/conv/fft_mac_impl.h"

namespace nnperf::fft_conv {

namespace {

// Portable multiply-accumulate: GCC vector extensions of 8 floats, lowered to 2 x SSE2 on
// baseline x86-64; a*b+c rounds twice here (no FMA), still far inside the tolerance.
struct Portable {
  using V = float __attribute__((vector_size(32)));
  static V zero() { return V{}; }
  static V load(const float* p) {
    V v;
    std::memcpy(&v, p, sizeof(v));
    return v;
  }
  static void store(float* p, V v) { std::memcpy(p, &v, sizeof(v)); }
  static V fmadd(V a, V b, V c) { return a * b + c; }
  static V fnmadd(V a, V b, V c) { return c - a * b; }
};

// ---- the FFTW plan cache ----

struct PlanCache {
  std::mutex mutex;
  std::map<std::pair<int64_t, int64_t>, Plans> plans;  // node-based: references stay valid
};

// Never destroyed: plans live as long as the process, and a static destructor running
// fftwf_destroy_plan after FFTW's own cleanup (or while another thread executes) would be unsafe.
PlanCache& plan_cache() {
  static PlanCache* cache = new PlanCache;
  return *cache;
}

unsigned planner_flags() {
  const char* env = std::getenv("NNPERF_FFTW");
  const std::string_view v = env == nullptr ? "" : env;
  if (v.empty() || v == "estimate") return FFTW_ESTIMATE;
  if (v == "measure") return FFTW_MEASURE;
  throw UsageError(
      fmt::format("NNPERF_FFTW='{}': expected 'estimate' (the default) or 'measure'", v));
}

struct FftwFree {
  void operator()(void* p) const { fftwf_free(p); }
};
using FftwReal = std::unique_ptr<float, FftwFree>;
using FftwComplex = std::unique_ptr<fftwf_complex, FftwFree>;

FftwReal alloc_real(int64_t n) {
  FftwReal p(fftwf_alloc_real(static_cast<std::size_t>(n)));
  if (!p) throw Error(fmt::format("fftwf_alloc_real({}) failed: out of memory", n));
  return p;
}
FftwComplex alloc_complex(int64_t n) {
  FftwComplex p(fftwf_alloc_complex(static_cast<std::size_t>(n)));
  if (!p) throw Error(fmt::format("fftwf_alloc_complex({}) failed: out of memory", n));
  return p;
}

// ---- the pipeline's steps ----

// Floats of one thread's FFT scratch: a th x tw real plane and a th x (tw/2+1) complex one, each
// a multiple of 16 floats so every buffer in the workspace stays 64-byte aligned.
int64_t real_floats(const Geometry& geo) { return conv_round_up(geo.th * geo.tw, 16); }
int64_t complex_floats(const Geometry& geo) { return conv_round_up(2 * geo.freqs, 16); }
int64_t x_floats(const ConvProblem& p, const Geometry& geo) {
  return geo.chunk_tiles * p.ic * geo.nfb * kBlockFloats;
}
int64_t y_floats(const ConvProblem& p, const Geometry& geo) {
  return geo.chunk_tiles * p.oc * geo.nfb * kBlockFloats;
}

// Tile (ty, tx) of one input plane (ih x iw) into buf (th x tw), zeros where the tile leaves the
// image (the padding, and past the far edge).
void fill_tile(const ConvProblem& p, const Geometry& geo, const float* plane, int64_t ty,
               int64_t tx, float* buf) {
  const int64_t y0 = ty * geo.uh - p.ph, x0 = tx * geo.uw - p.pw;
  const int64_t j_lo = std::clamp<int64_t>(-x0, 0, geo.tw);
  const int64_t j_hi = std::clamp<int64_t>(p.iw - x0, j_lo, geo.tw);
  for (int64_t i = 0; i < geo.th; ++i) {
    float* row = buf + i * geo.tw;
    const int64_t iy = y0 + i;
    if (iy < 0 || iy >= p.ih) {
      std::fill(row, row + geo.tw, 0.0f);
      continue;
    }
    std::fill(row, row + j_lo, 0.0f);
    std::memcpy(row + j_lo, plane + iy * p.iw + x0 + j_lo,
                static_cast<std::size_t>(j_hi - j_lo) * sizeof(float));
    std::fill(row + j_hi, row + geo.tw, 0.0f);
  }
}

// Interleaved spectrum -> frequency blocks (8 re, 8 im) at x, x + stride, ...; the tail of the
// last block is zero.
void scatter_spectrum(const fftwf_complex* spec, const Geometry& geo, float* x, int64_t stride) {
  for (int64_t fb = 0; fb < geo.nfb; ++fb) {
    float* d = x + fb * stride;
    const int64_t f0 = fb * kFreqBlock;
    const int64_t n = std::min(kFreqBlock, geo.freqs - f0);
    for (int64_t j = 0; j < n; ++j) {
      d[j] = spec[f0 + j][0];
      d[kFreqBlock + j] = spec[f0 + j][1];
    }
    for (int64_t j = n; j < kFreqBlock; ++j) d[j] = d[kFreqBlock + j] = 0.0f;
  }
}

void gather_spectrum(const float* y, const Geometry& geo, fftwf_complex* spec) {
  for (int64_t fb = 0; fb < geo.nfb; ++fb) {
    const float* s = y + fb * kBlockFloats;
    const int64_t f0 = fb * kFreqBlock;
    const int64_t n = std::min(kFreqBlock, geo.freqs - f0);
    for (int64_t j = 0; j < n; ++j) {
      spec[f0 + j][0] = s[j];
      spec[f0 + j][1] = s[kFreqBlock + j];
    }
  }
}

// ---- cost model (measured on the fitted Zen 3 EPYC core, AVX2, conv_internal.h; see
// bench/fft_conv_bench.cc), as ratios to its FMA peak, triad bandwidth and L3 ----
// The multiply-accumulate sustains ~60 GFLOP/s of its own FLOPs (8 per complex multiply-add)
// while the packed weights come from cache; the portable one ~30 (NNPERF_SIMD=scalar, same bench).
constexpr double kMacRate = 60.0 / conv_fit::kFmaGflops;
constexpr double kMacPortableRate = 30.0 / conv_fit::kFmaGflops;
// Fill, scatter, gather and crop around each transform: ~0.65 ns per point (scales with clock).
constexpr double kCopySecondsPerPoint = 0.65e-9;
// Packed weights beyond the L3 share of one core (16 MB of the fitted core's 32 MiB) stream from
// DRAM once per chunk (~15 GB/s).
constexpr double kWeightsDram = 15.0 / conv_fit::kDramGbps;
constexpr double kL3Share = 16e6 / conv_fit::kL3Bytes;

// Sizes FFTW_ESTIMATE plans in one pass of its hard-coded codelets: powers of two and most
// sizes up to 16, 20. Other 7-smooth sizes get multi-pass plans 3-8x slower per point.
bool codelet_size(int64_t n) { return (n <= 16 && n != 14) || n == 20 || (n & (n - 1)) == 0; }

// One FFTW r2c or c2r of th x tw: ~0.19 ns * log2(th*tw) per point for codelet sizes (16x16 in
// 370 ns, 32x32 in 1.7 us), 2.5x / 5x that with one / two other sizes (24x24 4.4 us, 60x60
// 39 us under FFTW_ESTIMATE; FFTW_MEASURE narrows the gap). Seconds on the fitted core.
double fft_seconds(int64_t th, int64_t tw) {
  const double n = static_cast<double>(th * tw);
  const int slow = (codelet_size(th) ? 0 : 1) + (codelet_size(tw) ? 0 : 1);
  const double penalty = slow == 0 ? 1.0 : slow == 1 ? 2.5 : 5.0;
  return n * (0.19e-9 * std::log2(std::max(n, 2.0)) * penalty + kCopySecondsPerPoint);
}

// The fitted core itself (AVX2 kernels): the transform size, and with it the workspace and the
// packed weights' layout, is chosen on its figures, so a problem's geometry never depends on the
// machine model, which a test or flag may replace between planning and running.
ConvMachine fitted_machine() {
  ConvMachine m;
  m.avx2 = true;
  m.fma_flops_per_s = m.blas_flops_per_s = conv_fit::kFmaGflops * 1e9;
  m.dram_bytes_per_s = m.dram_total_bytes_per_s = conv_fit::kDramGbps * 1e9;
  m.l3_bytes = conv_fit::kL3Bytes;
  return m;
}

}  // namespace

std::string why_not_common(const char* name, const ConvProblem& p) {
  const std::string invalid = p.invalid_reason();
  if (!invalid.empty()) return fmt::format("{}: {}", name, invalid);
  if (p.sh != 1 || p.sw != 1) {
    return fmt::format("{}: stride {} not supported (stride 1 only)", name,
                       p.sh != 1 ? p.sh : p.sw);
  }
  if (p.dh != 1 || p.dw != 1) {
    return fmt::format("{}: dilation {} not supported (dilation 1 only)", name,
                       p.dh != 1 ? p.dh : p.dw);
  }
  return "";
}

bool is_smooth(int64_t n) {
  if (n < 1) return false;
  for (int64_t f : {2, 3, 5, 7}) {
    while (n % f == 0) n /= f;
  }
  return n == 1;
}

int64_t next_smooth(int64_t n, bool even) {
  int64_t m = std::max<int64_t>(n, 1);
  while (!is_smooth(m) || (even && m % 2 != 0)) ++m;
  return m;
}

Geometry make_geometry(const ConvProblem& p, int64_t th, int64_t tw,
                       std::size_t chunk_budget_bytes) {
  Geometry geo;
  geo.th = th;
  geo.tw = tw;
  geo.uh = th - p.kh + 1;
  geo.uw = tw - p.kw + 1;
  NNPERF_CHECK(geo.uh >= 1 && geo.uw >= 1, "FFT transform {}x{} smaller than the kernel of {}", th,
               tw, p.str());
  geo.tiles_h = conv_ceil_div(p.oh(), geo.uh);
  geo.tiles_w = conv_ceil_div(p.ow(), geo.uw);
  geo.freqs = th * (tw / 2 + 1);
  geo.nfb = conv_ceil_div(geo.freqs, kFreqBlock);
  geo.tiles = p.mb * geo.tiles_h * geo.tiles_w;
  const int64_t tile_bytes = (p.ic + p.oc) * geo.nfb * kBlockFloats * 4;
  const int64_t fit = std::max<int64_t>(1, static_cast<int64_t>(chunk_budget_bytes) / tile_bytes);
  const int64_t chunks = conv_ceil_div(geo.tiles, std::min(fit, geo.tiles));
  geo.chunk_tiles = conv_ceil_div(geo.tiles, chunks);  // equal chunks
  return geo;
}

void GeometryPicker::offer(int64_t th, int64_t tw) {
  const Geometry geo = make_geometry(p_, th, tw, chunk_budget_bytes_);
  const double cost = cost_seconds(p_, geo, 1, fitted_machine());
  if (best_.th == 0 || cost < best_cost_) {
    best_ = geo;
    best_cost_ = cost;
  }
}

const Plans& plans_for(int64_t th, int64_t tw) {
  PlanCache& cache = plan_cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto it = cache.plans.find({th, tw});
  if (it != cache.plans.end()) return it->second;
  const unsigned flags = planner_flags() | FFTW_DESTROY_INPUT;
  // Planned on fftwf_malloc'ed arrays: alignment_of is 0 for them as for every 64-byte aligned
  // workspace buffer run() passes to the new-array execute functions, as FFTW requires.
  FftwReal real = alloc_real(th * tw);
  FftwComplex spec = alloc_complex(th * (tw / 2 + 1));
  NNPERF_CHECK(fftwf_alignment_of(real.get()) == 0 &&
                   fftwf_alignment_of(reinterpret_cast<float*>(spec.get())) == 0,
               "fftwf_malloc returned a buffer FFTW itself considers misaligned");
  Plans plans;
  plans.forward = fftwf_plan_dft_r2c_2d(static_cast<int>(th), static_cast<int>(tw), real.get(),
                                        spec.get(), flags);
  plans.inverse = fftwf_plan_dft_c2r_2d(static_cast<int>(th), static_cast<int>(tw), spec.get(),
                                        real.get(), flags);
  if (plans.forward == nullptr || plans.inverse == nullptr) {
    throw Error(fmt::format("FFTW could not plan a {}x{} real transform", th, tw));
  }
  return cache.plans.emplace(std::make_pair(th, tw), plans).first->second;
}

int64_t plans_created() {
  PlanCache& cache = plan_cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  return static_cast<int64_t>(cache.plans.size());
}

void mac_portable(const MacArgs& m) { MacKernel<Portable>::run(m); }

void mac_with(SimdLevel level, const MacArgs& m) {
  level = std::min(level, cpu_info().simd);
  if (level >= SimdLevel::kAvx2) {
    mac_avx2(m);
  } else {
    mac_portable(m);
  }
}

std::size_t packed_floats(const ConvProblem& p, const Geometry& geo) {
  return static_cast<std::size_t>(p.oc * p.icg() * geo.nfb * kBlockFloats);
}

// Block index of (output o, input channel c) within one frequency block's panel (see
// fft_internal.h), the order MacKernel::run reads it.
int64_t panel_index(int64_t o, int64_t c, int64_t ocg, int64_t icg) {
  const int64_t c0 = c / kIcBlock * kIcBlock, o0 = o / kRo * kRo;
  const int64_t nc = std::min(kIcBlock, icg - c0);
  const int64_t ro = std::min<int64_t>(kRo, ocg - o0);
  return c0 * ocg + o0 * nc + (c - c0) * ro + (o - o0);
}

void pack_weights(const ConvProblem& p, const Geometry& geo, const float* wei, float* packed) {
  const Plans& plans = plans_for(geo.th, geo.tw);
  const int64_t icg = p.icg(), ocg = p.ocg();
  FftwReal real = alloc_real(geo.th * geo.tw);
  FftwComplex spec = alloc_complex(geo.freqs);
  const double scale = 1.0 / static_cast<double>(geo.th * geo.tw);
  for (int64_t o = 0; o < p.oc; ++o) {
    // A safe point for Ctrl-C (one thread here, nothing shared half-written): the whole packing
    // of a large layer (VGG-16's 64x64 filters as 226x226 spectra) takes over a second.
    check_interrupt();
    const int64_t grp = o / ocg, ol = o % ocg;
    for (int64_t c = 0; c < icg; ++c) {
      float* buf = real.get();
      std::fill(buf, buf + geo.th * geo.tw, 0.0f);
      const float* k = wei + (o * icg + c) * p.kh * p.kw;
      for (int64_t u = 0; u < p.kh; ++u) {
        for (int64_t v = 0; v < p.kw; ++v) buf[u * geo.tw + v] = k[u * p.kw + v];
      }
      fftwf_execute_dft_r2c(plans.forward, buf, spec.get());
      for (int64_t fb = 0; fb < geo.nfb; ++fb) {
        float* d = packed +
                   ((grp * geo.nfb + fb) * ocg * icg + panel_index(ol, c, ocg, icg)) * kBlockFloats;
        for (int64_t j = 0; j < kFreqBlock; ++j) {
          const int64_t f = fb * kFreqBlock + j;
          const bool in = f < geo.freqs;
          d[j] = in ? static_cast<float>(spec.get()[f][0] * scale) : 0.0f;
          d[kFreqBlock + j] = in ? static_cast<float>(-spec.get()[f][1] * scale) : 0.0f;
        }
      }
    }
  }
}

std::size_t workspace_bytes(const ConvProblem& p, const Geometry& geo, int threads) {
  const int64_t per_thread = real_floats(geo) + complex_floats(geo);
  return static_cast<std::size_t>(x_floats(p, geo) + y_floats(p, geo) +
                                  std::max(1, threads) * per_thread) *
         sizeof(float);
}

double cost_seconds(const ConvProblem& p, const Geometry& geo, int threads, const ConvMachine& m) {
  const double tiles = static_cast<double>(geo.tiles);
  const double mac_flops =
      8.0 * tiles * static_cast<double>(geo.nfb * kFreqBlock) * static_cast<double>(p.oc * p.icg());
  const double fft_s =
      tiles * static_cast<double>(p.ic + p.oc) * m.seconds(fft_seconds(geo.th, geo.tw));
  const double w_bytes = static_cast<double>(packed_floats(p, geo)) * 4.0;
  const double chunks = static_cast<double>(conv_ceil_div(geo.tiles, geo.chunk_tiles));
  const double w_s = w_bytes > kL3Share * m.l3_bytes
                         ? w_bytes * chunks / (kWeightsDram * m.dram_bytes_per_s)
                         : 0.0;
  const double mac_s = mac_flops / ((m.avx2 ? kMacRate : kMacPortableRate) * m.fma_flops_per_s);
  // Streaming the weights overlaps the multiply-accumulate only in part.
  const double mac_w = std::max(mac_s, w_s) + 0.5 * std::min(mac_s, w_s);
  const int t = std::max(1, threads);
  return (mac_s / t + fft_s / t) + std::max(0.0, mac_w - mac_s);
}

namespace {

// One inverse-transformed tile (`tile`, th x tw) into output plane `plane`: its first uh x uw
// points, clipped at the plane's edges, plus the bias.
void store_tile(const ConvProblem& p, const Geometry& geo, const float* tile, float b, float* plane,
                int64_t ty, int64_t tx) {
  const int64_t oh = p.oh(), ow = p.ow();
  const int64_t oy0 = ty * geo.uh, ox0 = tx * geo.uw;
  const int64_t rows = std::min(geo.uh, oh - oy0), cols = std::min(geo.uw, ow - ox0);
  // Outputs whose window lies wholly in the padding (padding >= kernel size) are exactly the
  // bias; the transform would leave rounding noise there, which no bound relative to their (zero)
  // products allows.
  const int64_t j_lo = std::clamp(p.pw - p.kw + 1 - ox0, int64_t{0}, cols);
  const int64_t j_hi = std::clamp(p.iw + p.pw - ox0, j_lo, cols);
  float* d = plane + oy0 * ow + ox0;
  for (int64_t i = 0; i < rows; ++i) {
    float* row = d + i * ow;
    const int64_t oy = oy0 + i;
    if (oy < p.ph - p.kh + 1 || oy >= p.ih + p.ph) {
      std::fill(row, row + cols, b);
      continue;
    }
    const float* s = tile + i * geo.tw;
    std::fill(row, row + j_lo, b);
    for (int64_t j = j_lo; j < j_hi; ++j) row[j] = s[j] + b;
    std::fill(row + j_hi, row + cols, b);
  }
}

}  // namespace

void run(const Geometry& geo, const ConvArgs& a) {
  const ConvProblem& p = *a.p;
  const Plans& plans = plans_for(geo.th, geo.tw);  // a look-up: pack_weights created them
  const int64_t icg = p.icg(), ocg = p.ocg(), oh = p.oh(), ow = p.ow();
  const int64_t per_image = geo.tiles_h * geo.tiles_w;
  float* x = static_cast<float*>(a.workspace);
  float* y = x + x_floats(p, geo);
  float* scratch = y + y_floats(p, geo);
  const int64_t rf = real_floats(geo), per_thread = rf + complex_floats(geo);
  const int64_t x_tile_stride = p.g * geo.nfb * icg * kBlockFloats;
  const int64_t y_tile_stride = p.oc * geo.nfb * kBlockFloats;
  const SimdLevel level = active_simd();
  // Work in FLOP-equivalents (seconds modelled on the fitted core at ~50 GFLOP/s, half its FMA
  // peak); the multiply-accumulate's jobs (one per group and frequency block) are the coarsest
  // split of the three phases.
  const double work = cost_seconds(p, geo, 1, fitted_machine()) * 0.5 * conv_fit::kFmaGflops * 1e9;
  const int threads = conv_useful_threads(a.threads, work, p.g * geo.nfb);

#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    float* buf = scratch + omp_get_thread_num() * per_thread;
    fftwf_complex* spec = reinterpret_cast<fftwf_complex*>(buf + rf);
    for (int64_t q0 = 0; q0 < geo.tiles; q0 += geo.chunk_tiles) {
      const int64_t nq = std::min(geo.chunk_tiles, geo.tiles - q0);
      // 1. Spectra of the input tiles: X[tile][group][block][c] (8 re, 8 im).
#pragma omp for schedule(static)
      for (int64_t item = 0; item < p.ic * nq; ++item) {
        const int64_t ci = item / nq, qi = item % nq, q = q0 + qi;
        const int64_t n = q / per_image, ty = q % per_image / geo.tiles_w, tx = q % geo.tiles_w;
        fill_tile(p, geo, a.src + (n * p.ic + ci) * p.ih * p.iw, ty, tx, buf);
        fftwf_execute_dft_r2c(plans.forward, buf, spec);
        const int64_t grp = ci / icg, c = ci % icg;
        scatter_spectrum(spec, geo,
                         x + qi * x_tile_stride + (grp * geo.nfb * icg + c) * kBlockFloats,
                         icg * kBlockFloats);
      }
      // 2. Y[tile][oc][block] = sum over the group's channels of X * conj(W) / (th*tw).
#pragma omp for schedule(static)
      for (int64_t item = 0; item < p.g * geo.nfb; ++item) {
        const int64_t grp = item / geo.nfb, fb = item % geo.nfb;
        MacArgs m;
        m.x = x + (grp * geo.nfb + fb) * icg * kBlockFloats;
        m.x_tile_stride = x_tile_stride;
        m.w = a.packed + (grp * geo.nfb + fb) * ocg * icg * kBlockFloats;
        m.y = y + (grp * ocg * geo.nfb + fb) * kBlockFloats;
        m.y_tile_stride = y_tile_stride;
        m.y_oc_stride = geo.nfb * kBlockFloats;
        m.tiles = nq;
        m.ocg = ocg;
        m.icg = icg;
        mac_with(level, m);
      }
      // 3. Inverse transforms; the first uh x uw points of each tile are outputs.
#pragma omp for schedule(static)
      for (int64_t item = 0; item < p.oc * nq; ++item) {
        const int64_t o = item / nq, qi = item % nq, q = q0 + qi;
        const int64_t n = q / per_image, ty = q % per_image / geo.tiles_w, tx = q % geo.tiles_w;
        gather_spectrum(y + qi * y_tile_stride + o * geo.nfb * kBlockFloats, geo, spec);
        fftwf_execute_dft_c2r(plans.inverse, spec, buf);
        store_tile(p, geo, buf, a.bias == nullptr ? 0.0f : a.bias[o],
                   a.dst + (n * p.oc + o) * oh * ow, ty, tx);
      }
    }
  }
}

}  // namespace nnperf::fft_conv
