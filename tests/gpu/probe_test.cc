// The CUDA probe against a stand-in for the NVIDIA libraries (tests/fakes/fake_cuda.cc: one
// "Fake GPU" with fixed properties) and against library names that do not exist, as on a machine
// without a GPU: every part is reported, and every missing part says why.
#include "nnperf/gpu/probe.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace nnperf {
namespace {

// The stand-in library built beside the tests, or where $NNPERF_FAKE_CUDA_LIB says (a test
// binary copied to another machine, as scripts/gpu_bundle.sh does).
std::string fake_lib() {
  const char* env = std::getenv("NNPERF_FAKE_CUDA_LIB");
  return env != nullptr && *env != '\0' ? env : NNPERF_FAKE_CUDA_LIB;
}

CudaProbeOptions fake_everything() {
  CudaProbeOptions o;
  o.driver = o.nvml = o.runtime = o.cudnn = o.cublas = {fake_lib()};
  o.libraries = true;
  return o;
}

class Probe : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv("NNPERF_FAKE_CUDA_DEVICES");
    ::unsetenv("NNPERF_FAKE_NVML_INIT");
    ::unsetenv("NNPERF_FAKE_POWER_MW");
  }
  void TearDown() override { SetUp(); }
};

TEST_F(Probe, VersionEncodings) {
  EXPECT_EQ(cuda_version_string(12040), "12.4");
  EXPECT_EQ(cuda_version_string(13000), "13.0");
  EXPECT_EQ(cuda_version_string(11080), "11.8");
  EXPECT_EQ(cuda_version_string(0), "unknown");
  EXPECT_EQ(cudnn_version_string(90100), "9.1.0");
  EXPECT_EQ(cudnn_version_string(91002), "9.10.2");
  EXPECT_EQ(cudnn_version_string(8902), "8.9.2");
  EXPECT_EQ(cudnn_version_string(0), "unknown");
}

TEST_F(Probe, ReportsEveryPropertyOfADevice) {
  ::setenv("NNPERF_FAKE_CUDA_DEVICES", "2", 1);
  const CudaProbe p = probe_cuda(fake_everything());
  ASSERT_TRUE(p.driver_loaded) << p.message;
  EXPECT_TRUE(p.message.empty()) << p.message;
  EXPECT_EQ(p.driver_version, 12040);
  EXPECT_EQ(p.nvml_driver, "550.54.15");
  ASSERT_EQ(p.devices.size(), 2u);
  const CudaDeviceInfo& d = p.devices[1];
  EXPECT_EQ(d.index, 1);
  EXPECT_EQ(d.name, "Fake GPU 1");
  EXPECT_EQ(d.total_memory_bytes, 80LL << 30);
  EXPECT_EQ(d.compute_major, 9);
  EXPECT_EQ(d.compute_minor, 0);
  EXPECT_EQ(d.multiprocessors, 132);
  EXPECT_EQ(d.clock_mhz, 1980);         // from the driver (kHz)
  EXPECT_EQ(d.memory_clock_mhz, 2619);  // the driver said 0: NVML's figure, found by PCI bus id
  EXPECT_EQ(d.memory_bus_bits, 5120);
  EXPECT_TRUE(d.power_readable);
  ASSERT_EQ(p.libraries.size(), 3u);
  EXPECT_EQ(p.libraries[0].what, "CUDA runtime");
  EXPECT_EQ(p.libraries[0].version, "12.4");
  EXPECT_EQ(p.libraries[1].what, "cuDNN");
  EXPECT_EQ(p.libraries[1].version, "9.1.0");
  EXPECT_EQ(p.libraries[2].what, "cuBLAS");
  EXPECT_EQ(p.libraries[2].version, "12.4.5");
  for (const auto& l : p.libraries) EXPECT_TRUE(l.loaded) << l.what << ": " << l.reason;

  const std::string r = cuda_report(p);
  for (const std::string& line :
       {"driver: " + fake_lib() + ", supports CUDA 12.4, NVIDIA driver 550.54.15\n",
        "CUDA runtime: 12.4 (" + fake_lib() + ")\n", std::string("cuDNN: 9.1.0 ("),
        std::string("cuBLAS: 12.4.5 ("), std::string("NVML: readable\n"),
        std::string("devices: 2\n"),
        std::string(
            "  [1] Fake GPU 1: compute capability 9.0 (sm_90), 132 SMs, 80.0 GiB, SM clock "
            "1980 MHz, memory clock 2619 MHz, 5120-bit bus, board power readable (NVML)\n")}) {
    EXPECT_NE(r.find(line), std::string::npos) << "missing: " << line << "\nin:\n" << r;
  }
}

TEST_F(Probe, LibrariesAreOnlyLoadedWhenAskedFor) {
  CudaProbeOptions o = fake_everything();
  o.libraries = false;
  const CudaProbe p = probe_cuda(o);
  EXPECT_EQ(p.devices.size(), 1u);
  EXPECT_TRUE(p.libraries.empty());
}

TEST_F(Probe, ADriverWithoutDevicesSaysSo) {
  ::setenv("NNPERF_FAKE_CUDA_DEVICES", "0", 1);
  ::setenv("NNPERF_FAKE_NVML_INIT", "9", 1);  // NVML_ERROR_DRIVER_NOT_LOADED
  const CudaProbe p = probe_cuda(fake_everything());
  EXPECT_FALSE(p.driver_loaded);
  EXPECT_TRUE(p.devices.empty());
  EXPECT_EQ(p.driver_version, 12040);  // asked before cuInit, so known anyway
  EXPECT_NE(p.message.find("CUDA_ERROR_NO_DEVICE"), std::string::npos) << p.message;
  EXPECT_FALSE(p.nvml_loaded);
  EXPECT_NE(p.nvml_reason.find("Driver Not Loaded"), std::string::npos) << p.nvml_reason;
  const std::string r = cuda_report(p);
  EXPECT_NE(r.find("devices: none: the CUDA driver reports no device (cuInit: "
                   "CUDA_ERROR_NO_DEVICE, error 100)\n"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("NVML: not readable: nvmlInit failed: Driver Not Loaded"), std::string::npos)
      << r;
}

TEST_F(Probe, MissingLibrariesAreNamedWithTheLoadersReason) {
  CudaProbeOptions o;
  o.driver = {"/nonexistent/libcuda.so.1"};
  o.nvml = {"/nonexistent/libnvidia-ml.so.1"};
  o.runtime = {"/nonexistent/libcudart.so.13", "/nonexistent/libcudart.so.12"};
  o.cudnn = {"/nonexistent/libcudnn.so.9"};
  o.cublas = {"/nonexistent/libcublas.so.13", "/nonexistent/libcublas.so.12"};
  o.libraries = true;
  const CudaProbe p = probe_cuda(o);
  EXPECT_FALSE(p.driver_loaded);
  EXPECT_TRUE(p.devices.empty());
  EXPECT_EQ(p.message.rfind("no CUDA driver (/nonexistent/libcuda.so.1: ", 0), 0u) << p.message;
  ASSERT_EQ(p.libraries.size(), 3u);
  for (const auto& l : p.libraries) {
    EXPECT_FALSE(l.loaded) << l.what;
    EXPECT_NE(l.reason.find("/nonexistent/"), std::string::npos) << l.reason;
  }
  // Both names tried are in the reason.
  EXPECT_NE(p.libraries[2].reason.find("libcublas.so.13"), std::string::npos);
  EXPECT_NE(p.libraries[2].reason.find("libcublas.so.12"), std::string::npos);
  const std::string r = cuda_report(p);
  EXPECT_EQ(r.rfind("driver: not loaded: no CUDA driver (", 0), 0u) << r;
  EXPECT_NE(r.find("cuDNN: not loaded: /nonexistent/libcudnn.so.9"), std::string::npos) << r;
  EXPECT_NE(r.find("NVML: not readable: /nonexistent/libnvidia-ml.so.1"), std::string::npos) << r;
}

}  // namespace
}  // namespace nnperf
