// Shared by the convolution tests (conv_test.cc, conv_real_layers_test.cc): the per-element
// error bound of STYLE.md section 2 and a run of one algorithm with guarded buffers.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "nnperf/core/workspace.h"
#include "nnperf/kernels/conv/conv.h"
#include "test_util.h"

namespace nnperf::test {

// |y - ref| <= c_algo * K * eps * sum|a*b| + eps * |ref|, K = icg*kh*kw, eps = 2^-23.
inline double conv_bound(double c_algo, const ConvProblem& p, double abs_sum, double ref) {
  const double k = static_cast<double>(p.icg() * p.kh * p.kw);
  return c_algo * k * kEps * abs_sum + kEps * std::fabs(ref);
}

// Runs `algo` with its own workspace and packed buffers, each followed by a canary that must
// survive; dst starts as NaN (every element must be written) and has a sentinel tail. `bias`
// empty means none.
inline std::vector<float> conv_run_checked(const ConvAlgorithm& algo, const ConvProblem& p,
                                           const std::vector<float>& src,
                                           const std::vector<float>& wei,
                                           const std::vector<float>& bias, int threads,
                                           const std::string& where) {
  constexpr std::size_t kCanary = 256;
  const std::size_t ws_bytes = algo.workspace_bytes(p, threads);
  Workspace ws;
  ws.reserve(ws_bytes + kCanary);
  auto* ws_tail = static_cast<unsigned char*>(ws.data()) + ws_bytes;
  std::memset(ws_tail, 0xA5, kCanary);
  std::size_t packed_floats = 0;
  Workspace packed;
  if (algo.pack_weights != nullptr) {
    packed_floats = algo.packed_weights_floats(p);
    packed.reserve((packed_floats + kCanary) * sizeof(float));
    std::fill_n(static_cast<float*>(packed.data()) + packed_floats, kCanary, 4321.0f);
    algo.pack_weights(p, wei.data(), static_cast<float*>(packed.data()), 1);
  }
  constexpr float kSentinel = 12345.0f;
  std::vector<float> dst(static_cast<std::size_t>(p.dst_numel()) + kCanary,
                         std::numeric_limits<float>::quiet_NaN());
  std::fill(dst.end() - kCanary, dst.end(), kSentinel);
  ConvArgs args;
  args.p = &p;
  args.src = src.data();
  args.wei = wei.data();
  args.packed = algo.pack_weights != nullptr ? static_cast<const float*>(packed.data()) : nullptr;
  args.bias = bias.empty() ? nullptr : bias.data();
  args.dst = dst.data();
  args.workspace = ws.data();
  args.threads = threads;
  algo.run(args);
  for (std::size_t i = 0; i < kCanary; ++i) {
    EXPECT_EQ(ws_tail[i], 0xA5) << where << ": wrote past workspace_bytes";
    if (algo.pack_weights != nullptr) {
      EXPECT_EQ(static_cast<const float*>(packed.data())[packed_floats + i], 4321.0f)
          << where << ": pack_weights wrote past packed_weights_floats";
    }
    EXPECT_EQ(dst[dst.size() - kCanary + i], kSentinel) << where << ": wrote past dst";
  }
  dst.resize(dst.size() - kCanary);
  return dst;
}

}  // namespace nnperf::test
