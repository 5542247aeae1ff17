// Pooling loops over planes of N*C images (PyTorch semantics), behind nn/pool and
// nn/global_pool: MaxPool2d (padding counts as -inf, ceil_mode, NaN propagates, the argmax for
// the backward is PyTorch's: the first maximum in scan order, or the last NaN, and the output the
// input there; without the argmax, a window whose maximum is a zero of both signs may give the
// other sign), AvgPool2d
// (count_include_pad or not) and AdaptiveAvgPool2d (PyTorch's windows floor(i*in/out) ..
// ceil((i+1)*in/out)). One (image, channel) plane per OpenMP job; pooling is memory-bound. The
// max pool's forward has an AVX2 path (pool_impl.h: column maxima and where they are, then the
// windows a tap at a time across the row). The *_reference functions are plain float64 loops for
// the tests.
#pragma once
#include <cstdint>

namespace nnperf {

// As PyTorch requires (nn/pool.cc refuses the others): p <= k / 2, and every window starts inside
// the padded input, so none lies wholly in the padding.
struct PoolShape {
  int64_t planes = 0, ih = 0, iw = 0, oh = 0, ow = 0;
  int64_t k = 1, s = 1, p = 0;  // square window, stride, padding (not used by the adaptive pool)
};

// The window of output (oy, ox) clipped to the input: [h0, h1) x [w0, w1).
void pool_window(const PoolShape& s, int64_t oy, int64_t ox, int64_t& h0, int64_t& h1, int64_t& w0,
                 int64_t& w1);
// AvgPool2d's divisor: the window clipped to the padded input (count_include_pad) or the input.
int64_t avgpool_divisor(const PoolShape& s, bool count_include_pad, int64_t oy, int64_t ox);

// argmax (null: not wanted) gets each output's input index within its plane. row_buffers holds
// threads x iw floats (per-thread column maxima), index_buffers threads x iw int32 (where they
// are; not read without argmax, may then be null).
void maxpool2d_forward(const PoolShape& s, const float* x, float* y, int32_t* argmax,
                       float* row_buffers, int32_t* index_buffers, int threads);
void maxpool2d_backward(const PoolShape& s, const float* dy, const int32_t* argmax, float* dx,
                        int threads);
void avgpool2d_forward(const PoolShape& s, bool count_include_pad, const float* x, float* y,
                       int threads);
void avgpool2d_backward(const PoolShape& s, bool count_include_pad, const float* dy, float* dx,
                        int threads);
void adaptive_avgpool2d_forward(const PoolShape& s, const float* x, float* y, int threads);
void adaptive_avgpool2d_backward(const PoolShape& s, const float* dy, float* dx, int threads);
int64_t adaptive_window_start(int64_t i, int64_t in, int64_t out);  // floor(i*in/out)
int64_t adaptive_window_end(int64_t i, int64_t in, int64_t out);    // ceil((i+1)*in/out)

// References (float64): outputs, and for max pooling the argmax by the same rule.
void maxpool2d_reference(const PoolShape& s, const float* x, double* y, int64_t* argmax);
void avgpool2d_reference(const PoolShape& s, bool count_include_pad, const float* x, double* y);
void adaptive_avgpool2d_reference(const PoolShape& s, const float* x, double* y);

}  // namespace nnperf
