// The FFT convolutions' frequency-domain multiply-accumulate, written once over SIMD traits and
// instantiated per level (fft_engine.cc: portable; fft_mac_avx2.cc: AVX2+FMA). Vectorised over 8
// frequencies, so no channel count ever needs a tail. Everything here has internal linkage and
// uses no standard-library inline code, so the linker can never hand the baseline build an
// AVX2-compiled copy of a shared inline function.
#pragma once
#include <cstdint>
#include <utility>

#include "nnperf/kernels/conv/fft_internal.h"

namespace nnperf::fft_conv {
namespace {

inline int64_t mac_min(int64_t a, int64_t b) { return a < b ? a : b; }

template <class S>
struct MacKernel {
  using V = typename S::V;

  // Y[t][o] (+)= sum over nc channels of X[t][c] * W[o][c], for RO channels x RT tiles.
  // W is one panel: channel c of output o at w + (c*RO + o)*16, read front to back.
  template <int RO, int RT>
  static void block(const float* x, int64_t xs, const float* w, float* y, int64_t ys_t,
                    int64_t ys_o, int64_t nc, bool accumulate) {
    V ar[RO][RT], ai[RO][RT];
    for (int o = 0; o < RO; ++o) {
      for (int t = 0; t < RT; ++t) {
        const float* yp = y + t * ys_t + o * ys_o;
        ar[o][t] = accumulate ? S::load(yp) : S::zero();
        ai[o][t] = accumulate ? S::load(yp + kFreqBlock) : S::zero();
      }
    }
    for (int64_t c = 0; c < nc; ++c) {
      V wr[RO], wi[RO];
      for (int o = 0; o < RO; ++o) {
        wr[o] = S::load(w + (c * RO + o) * kBlockFloats);
        wi[o] = S::load(w + (c * RO + o) * kBlockFloats + kFreqBlock);
      }
      for (int t = 0; t < RT; ++t) {
        const V xr = S::load(x + t * xs + c * kBlockFloats);
        const V xi = S::load(x + t * xs + c * kBlockFloats + kFreqBlock);
        for (int o = 0; o < RO; ++o) {
          // (xr + i xi)(wr + i wi) = xr wr - xi wi + i (xr wi + xi wr)
          ar[o][t] = S::fmadd(xr, wr[o], ar[o][t]);
          ar[o][t] = S::fnmadd(xi, wi[o], ar[o][t]);
          ai[o][t] = S::fmadd(xr, wi[o], ai[o][t]);
          ai[o][t] = S::fmadd(xi, wr[o], ai[o][t]);
        }
      }
    }
    for (int o = 0; o < RO; ++o) {
      for (int t = 0; t < RT; ++t) {
        float* yp = y + t * ys_t + o * ys_o;
        S::store(yp, ar[o][t]);
        S::store(yp + kFreqBlock, ai[o][t]);
      }
    }
  }

  using BlockFn = void (*)(const float*, int64_t, const float*, float*, int64_t, int64_t, int64_t,
                           bool);

  // run()'s table[ro-1][rt-1]: the full tile and every edge tile.
  template <int RO, int... T>
  struct Row {
    static constexpr BlockFn fns[sizeof...(T)] = {&block<RO, T + 1>...};
  };
  template <int RO, int... T>
  static constexpr const BlockFn* row(std::integer_sequence<int, T...>) {
    return Row<RO, T...>::fns;
  }
  template <int... O>
  static void fill_table(const BlockFn** rows, std::integer_sequence<int, O...>) {
    ((rows[O] = row<O + 1>(std::make_integer_sequence<int, kRt>())), ...);
  }

  // The panel order of fft_internal.h: input-channel blocks, then output-channel groups of kRo,
  // then channels; a kRo x kRt tile of Y per call, partial sums through Y between channel blocks.
  static void run(const MacArgs& m) {
    const BlockFn* table[kRo];
    fill_table(table, std::make_integer_sequence<int, kRo>());
    for (int64_t c0 = 0; c0 < m.icg; c0 += kIcBlock) {
      const int64_t nc = mac_min(kIcBlock, m.icg - c0);
      for (int64_t o0 = 0; o0 < m.ocg; o0 += kRo) {
        const int ro = static_cast<int>(mac_min(kRo, m.ocg - o0));
        const float* w = m.w + (c0 * m.ocg + o0 * nc) * kBlockFloats;
        for (int64_t t0 = 0; t0 < m.tiles; t0 += kRt) {
          const int rt = static_cast<int>(mac_min(kRt, m.tiles - t0));
          table[ro - 1][rt - 1](m.x + t0 * m.x_tile_stride + c0 * kBlockFloats, m.x_tile_stride, w,
                                m.y + t0 * m.y_tile_stride + o0 * m.y_oc_stride, m.y_tile_stride,
                                m.y_oc_stride, nc, c0 > 0);
        }
      }
    }
  }
};

}  // namespace
}  // namespace nnperf::fft_conv
