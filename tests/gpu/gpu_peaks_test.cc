// `peaks --device cuda` (analysis/gpu_peaks.h, kernels/peak/gpu_peak.h). Everywhere: the env
// entry is read back by the roofline's reader with the measured figures as its ceilings, and an
// SGEMM size that cannot fit is refused before allocating. With a device: each kernel leaves the
// values a host loop computes (the FMA chains bit for bit, since fmaf rounds once on both sides;
// odd lengths for the float4 tails), and a quick measurement gives ceilings in a sane order.
// Without one: every entry refuses with the reason.
#include "nnperf/analysis/gpu_peaks.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "nnperf/analysis/peaks.h"
#include "nnperf/core/error.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/kernels/peak/gpu_peak.h"
#include "test_util.h"

namespace nnperf {
namespace {

#define SKIP_WITHOUT_DEVICE() \
  if (!cuda::available()) GTEST_SKIP() << cuda::unavailable_reason()

GpuPeaks made_up_peaks() {
  GpuPeaks p;
  p.device.name = "NVIDIA H100 80GB HBM3";
  p.device.multiprocessors = 132;
  p.device.compute_major = 9;
  p.device.l2_bytes = 50 << 20;
  p.fma = {"cuda fma", "sm_90", 1, 270336, 8, 7, 51000.0, 50500.0, 51200.0};
  p.bandwidth = {{"L2", "read", 1, 9000, 8900, 9100, 4 << 20, 4 << 20, 1},
                 {"L2", "triad", 1, 7000, 6900, 7100, 12 << 20, 12 << 20, 1},
                 {"DRAM", "triad", 1, 2900, 2850, 2950, int64_t{3} << 29, int64_t{3} << 29, 1}};
  p.sgemm = {{"cublas", 4096, 1, 48000, 47000, 49000}, {"cuda", 4096, 1, 30000, 29000, 31000}};
  return p;
}

TEST(GpuPeaks, TheEnvEntryIsWhatTheRooflineReads) {
  const GpuPeaks p = made_up_peaks();
  const nlohmann::json doc{{"h100-cuda", gpu_peaks_env_json(p)}};
  const MachineCeilings m = ceilings_from_json(doc, "h100-cuda", "peaks.json");
  EXPECT_DOUBLE_EQ(m.peak_gflops_fp32, 51000.0);
  EXPECT_DOUBLE_EQ(m.peak_gbps, 2900.0);  // device-memory triad, not L2
  ASSERT_EQ(m.compute.size(), 1u);
  EXPECT_EQ(m.compute[0].simd, "sm_90");
  EXPECT_EQ(m.compute[0].threads, 1);
  ASSERT_EQ(m.memory.size(), 2u);  // the triad of each level
  EXPECT_EQ(m.memory[0].level, "L2");
  EXPECT_DOUBLE_EQ(m.memory[0].gbps, 7000.0);
  EXPECT_EQ(m.memory[1].level, "DRAM");
  EXPECT_NE(m.description.find("NVIDIA H100"), std::string::npos) << m.description;
  const nlohmann::json e = gpu_peaks_env_json(p);
  EXPECT_EQ(e["device"], "cuda");
  ASSERT_EQ(e["sgemm"].size(), 2u);
  EXPECT_NEAR(e["sgemm"][0]["percent_of_fma_peak"].get<double>(), 100.0 * 48000 / 51000, 1e-9);
  EXPECT_EQ(e["bandwidth_plateaus"].size(), 3u);
}

TEST(GpuPeaks, AnSgemmThatCannotFitIsRefusedBeforeAllocating) {
  EXPECT_EQ(gpu_sgemm_size_error(4096, std::size_t{80} << 30), "");
  EXPECT_EQ(gpu_sgemm_size_error(0, 0), "");
  EXPECT_EQ(gpu_sgemm_size_error(65536, std::size_t{40} << 30),
            "--sgemm-n 65536: three 65536x65536 float32 matrices need 48.0 GiB, the device has "
            "40.0 GiB free");
}

TEST(GpuPeaks, WithoutADeviceEveryEntryRefusesWithTheReason) {
  if (cuda::available()) GTEST_SKIP() << "a CUDA device is usable here";
  float x = 0.0f;
  try {
    cuda_kernels::fma_chains(&x, 1, 1, 1, 1.0f, 0.0f);
    FAIL() << "ran without a device";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), cuda::unavailable_reason());
  }
  EXPECT_THROW(cuda_kernels::stream_triad(&x, &x, &x, 1.0f, 1, 1, 1), Error);
  EXPECT_THROW(cuda::device_properties(), Error);
  EXPECT_THROW(measure_gpu_peaks(quick_gpu_peak_options()), UsageError);
}

using cuda::to_host;

TEST(GpuPeaks, TheFmaChainsLeaveTheHostLoopsValuesBitForBit) {
  SKIP_WITHOUT_DEVICE();
  const int blocks = 3, threads = 64;
  const int64_t iters = 1001;
  const float a = 0.999999f, b = 1e-6f;
  cuda::Buffer out(static_cast<std::size_t>(blocks * threads));
  cuda_kernels::fma_chains(out.data(), blocks, threads, iters, a, b);
  const std::vector<float> got = to_host(out);
  for (int t = 0; t < blocks * threads; ++t) {
    float s = 0.0f;
    for (int c = 0; c < cuda_kernels::kGpuFmaChains; ++c) {
      float x = static_cast<float>(c) + static_cast<float>(t) * 1e-6f;
      for (int64_t i = 0; i < iters; ++i) x = std::fma(x, a, b);
      s += x;
    }
    ASSERT_EQ(got[static_cast<std::size_t>(t)], s) << "thread " << t;
  }
}

TEST(GpuPeaks, TheStreamKernelsMoveEveryElementIncludingTheTail) {
  SKIP_WITHOUT_DEVICE();
  for (int64_t n : {1, 5, 1027, 1000003}) {
    SCOPED_TRACE(fmt::format("n = {}", n));
    const int blocks = 7, passes = 3;
    const std::vector<float> hb = test::random_vector(n, 11, -1.0f, 1.0f);
    const std::vector<float> hc = test::random_vector(n, 12, -1.0f, 1.0f);
    cuda::Buffer a(static_cast<std::size_t>(n)), b(static_cast<std::size_t>(n)),
        c(static_cast<std::size_t>(n)),
        partial(static_cast<std::size_t>(blocks) * cuda_kernels::kGpuStreamThreads);
    b.upload(hb);
    c.upload(hc);
    cuda_kernels::stream_triad(a.data(), b.data(), c.data(), 0.5f, n, passes, blocks);
    const std::vector<float> triad = to_host(a);
    for (int64_t i = 0; i < n; ++i) {
      const auto k = static_cast<std::size_t>(i);
      ASSERT_EQ(triad[k], std::fma(0.5f, hc[k], hb[k])) << i;
    }
    cuda_kernels::stream_copy(c.data(), a.data(), n, passes, blocks);
    EXPECT_EQ(to_host(a), hc);
    cuda_kernels::stream_read(b.data(), partial.data(), n, passes, blocks);
    double sum = 0, abs_sum = 0, want = 0;
    for (float v : to_host(partial)) sum += v;
    for (float v : hb) {
      want += v;
      abs_sum += std::fabs(v);
    }
    // Each thread sums its elements in float32: error <= (elements per thread) * eps * sum |x|.
    const double per_thread =
        std::ceil(static_cast<double>(n) * passes / (blocks * cuda_kernels::kGpuStreamThreads)) + 4;
    EXPECT_NEAR(sum, passes * want, per_thread * 6e-8 * passes * abs_sum + 1e-6);
  }
}

TEST(GpuPeaks, AQuickMeasurementGivesCeilingsInASaneOrder) {
  SKIP_WITHOUT_DEVICE();
  GpuPeakOptions o = quick_gpu_peak_options();
  o.rounds = 2;
  o.sample_seconds = 0.002;
  o.sgemm_n = 1024;
  const GpuPeaks p = measure_gpu_peaks(o);
  EXPECT_GT(p.fma.gflops, 1000.0);  // any sm_80/sm_90 part does several TFLOP/s
  EXPECT_LE(p.fma.min, p.fma.gflops);
  EXPECT_GE(p.fma.max, p.fma.gflops);
  ASSERT_GT(p.peak_gbps(), 100.0);
  for (const BandwidthPlateau& b : p.bandwidth) {
    EXPECT_GT(b.gbps, 0.0) << b.level << " " << b.kernel;
    if (b.level == "L2" && b.kernel == "triad") {
      EXPECT_GT(b.gbps, p.peak_gbps());
    }
  }
  ASSERT_EQ(p.sgemm.size(), 2u);
  for (const SgemmFigure& s : p.sgemm) {
    EXPECT_GT(s.gflops, 0.0) << s.impl;
    EXPECT_LT(s.gflops, 1.1 * p.fma.gflops) << s.impl << ": above the FMA ceiling";
  }
  const MachineCeilings m =
      ceilings_from_json(nlohmann::json{{"gpu", gpu_peaks_env_json(p)}}, "gpu", "peaks.json");
  EXPECT_DOUBLE_EQ(m.peak_gflops_fp32, p.fma.gflops);
}

}  // namespace
}  // namespace nnperf
