// Power readers against fixture sysfs trees (no RAPL in these VMs) and a stand-in NVML library
// (tests/fakes/fake_cuda.cc), the choice of meter per device and source, and the window statistics.
#include "nnperf/profile/power.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include "nnperf/core/clock.h"
#include "nnperf/core/error.h"
#include "test_util.h"

namespace nnperf {
namespace {

namespace fs = std::filesystem;

// Replaces the file atomically, as sysfs attributes read whole.
void write(const fs::path& p, const std::string& s) {
  fs::create_directories(p.parent_path());
  const fs::path tmp = p.string() + ".tmp";
  std::ofstream(tmp) << s << "\n";
  fs::rename(tmp, p);
}

// A powercap tree like a two-socket Intel machine's: two packages, one with core and dram zones.
void make_tree(const fs::path& root, uint64_t pkg0, uint64_t pkg1, uint64_t range = 262143328850) {
  write(root / "intel-rapl:0" / "name", "package-0");
  write(root / "intel-rapl:0" / "energy_uj", std::to_string(pkg0));
  write(root / "intel-rapl:0" / "max_energy_range_uj", std::to_string(range));
  write(root / "intel-rapl:0:0" / "name", "core");
  write(root / "intel-rapl:0:0" / "energy_uj", "1000");
  write(root / "intel-rapl:0:0" / "max_energy_range_uj", std::to_string(range));
  write(root / "intel-rapl:1" / "name", "package-1");
  write(root / "intel-rapl:1" / "energy_uj", std::to_string(pkg1));
  write(root / "intel-rapl:1" / "max_energy_range_uj", std::to_string(range));
  write(root / "intel-rapl-mmio:0" / "name", "not-a-rapl-zone-we-read");
}

TEST(Rapl, FindsZonesAndNamesSubZonesAfterTheirPackage) {
  test::TempDir dir;
  make_tree(dir.path(), 5'000'000, 7'000'000);
  RaplReader r(dir.path());
  ASSERT_TRUE(r.available()) << r.unavailable_reason();
  ASSERT_EQ(r.domains().size(), 3u);
  EXPECT_EQ(r.domains()[0].name, "package-0");
  EXPECT_TRUE(r.domains()[0].top_level);
  EXPECT_EQ(r.domains()[1].name, "package-0/core");
  EXPECT_FALSE(r.domains()[1].top_level);
  EXPECT_EQ(r.domains()[2].name, "package-1");
  const auto v = r.read();
  EXPECT_EQ(v, (std::vector<uint64_t>{5'000'000, 1000, 7'000'000}));
}

TEST(Rapl, DeltaHandlesWrapAround) {
  EXPECT_DOUBLE_EQ(RaplReader::delta_joules(1'000'000, 3'500'000, 10'000'000), 2.5);
  // 10 µJ to the top, the wrap itself (max -> 0 is one step), then 5 µJ.
  EXPECT_NEAR(RaplReader::delta_joules(9'999'990, 5, 10'000'000), 16e-6, 1e-12);
}

TEST(Rapl, PackageEnergySumsTopLevelZonesOnly) {
  test::TempDir dir;
  make_tree(dir.path(), 100, 200, 1'000'000);
  RaplReader r(dir.path());
  const auto before = r.read();
  make_tree(dir.path(), 2'000'100, 999'990, 1'000'000);   // package-1 wrapped
  write(dir / "intel-rapl:0:0" / "energy_uj", "900000");  // sub-zone: must not be added
  const auto after = r.read();
  // package-0: 2.0 J; package-1: from 200 up to 999,990 = 0.99979 J (no wrap here since after >
  // before)
  EXPECT_NEAR(r.package_joules(before, after), 2.0 + 0.99979, 1e-9);
}

TEST(Rapl, MissingOrUnreadableTreesAreReportedNotInvented) {
  RaplReader none("/nonexistent/powercap");
  EXPECT_FALSE(none.available());
  EXPECT_NE(none.unavailable_reason().find("/nonexistent/powercap"), std::string::npos);
  test::TempDir dir;
  write(dir / "intel-rapl:0" / "name", "package-0");
  write(dir / "intel-rapl:0" / "energy_uj", "garbage");
  write(dir / "intel-rapl:0" / "max_energy_range_uj", "100");
  RaplReader bad(dir.path());
  EXPECT_FALSE(bad.available());
  EXPECT_NE(bad.unavailable_reason().find("energy_uj"), std::string::npos)
      << bad.unavailable_reason();
}

TEST(PowerMonitor, WindowEnergyIsTheCounterDifference) {
  test::TempDir dir;
  make_tree(dir.path(), 0, 0);
  PowerOptions o;
  o.rapl_root = dir.path();
  o.interval_ms = 2;
  PowerMonitor m(o);
  ASSERT_TRUE(m.available());
  EXPECT_EQ(m.source(), "rapl");
  m.begin();
  // The "hardware": package-0 gains 1 J per step, package-1 0.5 J.
  for (int step = 1; step <= 10; ++step) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    write(dir / "intel-rapl:0" / "energy_uj", std::to_string(step * 1'000'000));
    write(dir / "intel-rapl:1" / "energy_uj", std::to_string(step * 500'000));
  }
  const PowerWindow w = m.end();
  ASSERT_TRUE(w.energy_j.has_value());
  EXPECT_NEAR(*w.energy_j, 15.0, 1e-9);
  ASSERT_TRUE(w.power_mean_w.has_value());
  EXPECT_NEAR(*w.power_mean_w, 15.0 / w.seconds, 1e-9);
  EXPECT_GT(w.samples, 0);
  EXPECT_EQ(w.source, "rapl");
  ASSERT_TRUE(w.power_min_w && w.power_max_w && w.power_std_w);
  EXPECT_LE(*w.power_min_w, *w.power_max_w);
}

TEST(PowerMonitor, AutoWithoutRaplMeansEmptyFiguresAndAReason) {
  PowerOptions o;
  o.rapl_root = "/nonexistent/powercap";
  o.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  PowerMonitor m(o);
  EXPECT_FALSE(m.available());
  EXPECT_NE(m.unavailable_reason().find("/nonexistent/powercap"), std::string::npos)
      << m.unavailable_reason();
  m.begin();
  const PowerWindow w = m.end();
  EXPECT_FALSE(w.energy_j.has_value());
  EXPECT_FALSE(w.power_mean_w.has_value());
  EXPECT_EQ(w.samples, 0);
  EXPECT_EQ(w.source, "none");
  EXPECT_THROW(PowerMonitor(PowerOptions{.rapl_root = "/x", .source = "smart-plug"}), UsageError);
}

// The message of the Error that constructing a monitor with `o` throws ("" when none).
std::string construction_error(const PowerOptions& o) {
  try {
    PowerMonitor m(o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PowerMonitor, NoneReadsNothingEvenWhereACounterIsReadableAndOtherNamesAreRefused) {
  test::TempDir dir;
  write(dir / "intel-rapl:0" / "name", "package-0");
  write(dir / "intel-rapl:0" / "energy_uj", "1000");
  write(dir / "intel-rapl:0" / "max_energy_range_uj", "262143328850");
  PowerOptions o;
  o.rapl_root = dir.path();
  EXPECT_TRUE(PowerMonitor(o).available());  // auto, CPU run: the fixture's RAPL zone
  o.source = "none";
  PowerMonitor m(o);
  EXPECT_FALSE(m.available());
  EXPECT_EQ(m.source(), "none");
  EXPECT_EQ(m.unavailable_reason(), "--power-source none");
  o.source = "nvidia";
  EXPECT_EQ(construction_error(o), "--power-source nvidia: expected auto, rapl, nvml or none");
}

TEST(PowerMonitor, ExplicitRaplThatCannotBeReadIsAnErrorNamingTheFlagAndTheCause) {
  PowerOptions o;
  o.source = "rapl";
  o.rapl_root = "/nonexistent/powercap";
  std::string e = construction_error(o);
  EXPECT_EQ(e.rfind("--power-source rapl: ", 0), 0u) << e;
  EXPECT_NE(e.find("/nonexistent/powercap does not exist"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;

  // A zone whose counter cannot be read: the file and the system's error are named. (As root a
  // mode-0400 file would still read, so the counter here is a folder: read() fails with EISDIR.)
  test::TempDir dir;
  write(dir / "intel-rapl:0" / "name", "package-0");
  fs::create_directories(dir / "intel-rapl:0" / "energy_uj");
  write(dir / "intel-rapl:0" / "max_energy_range_uj", "262143328850");
  o.rapl_root = dir.path();
  e = construction_error(o);
  EXPECT_NE(e.find((dir / "intel-rapl:0" / "energy_uj").string() + ": Is a directory"),
            std::string::npos)
      << e;

  // A counter that is not a number.
  fs::remove_all(dir / "intel-rapl:0" / "energy_uj");
  write(dir / "intel-rapl:0" / "energy_uj", "n/a");
  e = construction_error(o);
  EXPECT_NE(e.find("found 'n/a'"), std::string::npos) << e;

  // An empty powercap folder.
  test::TempDir empty;
  o.rapl_root = empty.path();
  e = construction_error(o);
  EXPECT_NE(e.find("no intel-rapl zones under"), std::string::npos) << e;
}

TEST(PowerMonitor, ExplicitNvmlThatCannotBeLoadedIsAnError) {
  PowerOptions o;
  o.source = "nvml";
  o.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  const std::string e = construction_error(o);
  EXPECT_EQ(e.rfind("--power-source nvml: NVML cannot be read: ", 0), 0u) << e;
  EXPECT_NE(e.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos) << e;
}

// The stand-in NVML library: one board drawing NNPERF_FAKE_POWER_MW (default 50 W).
class FakeNvml : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv("NNPERF_FAKE_NVML_INIT");
    ::unsetenv("NNPERF_FAKE_CUDA_DEVICES");
    ::setenv("NNPERF_FAKE_POWER_MW", "50000", 1);
  }
  void TearDown() override {
    ::unsetenv("NNPERF_FAKE_POWER_MW");
    ::unsetenv("NNPERF_FAKE_ENERGY_MJ_PER_CALL");
  }
  static PowerOptions options(const fs::path& rapl_root) {
    PowerOptions o;
    o.rapl_root = rapl_root;
    o.nvml_library = NNPERF_FAKE_CUDA_LIB;
    o.interval_ms = 2;
    return o;
  }
};

TEST_F(FakeNvml, AutoOnACpuRunNeverReadsTheGpuBoard) {
  // NVML is readable and RAPL is not: a CPU run still gets no figures rather than GPU power.
  PowerMonitor none(options("/nonexistent/powercap"));
  EXPECT_FALSE(none.available());
  EXPECT_EQ(none.source(), "none");
  EXPECT_NE(none.unavailable_reason().find("never with a GPU board's power"), std::string::npos)
      << none.unavailable_reason();
  // With RAPL readable it is RAPL.
  test::TempDir dir;
  make_tree(dir.path(), 0, 0);
  PowerMonitor rapl(options(dir.path()));
  EXPECT_EQ(rapl.source(), "rapl");
}

TEST_F(FakeNvml, AutoOnACudaRunReadsNvmlEvenWhereRaplIsReadable) {
  test::TempDir dir;
  make_tree(dir.path(), 0, 0);
  PowerOptions o = options(dir.path());
  o.device = Device::kCuda;
  PowerMonitor m(o);
  ASSERT_TRUE(m.available()) << m.unavailable_reason();
  EXPECT_EQ(m.source(), "nvml");
  m.begin();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const PowerWindow w = m.end();
  EXPECT_EQ(w.source, "nvml");
  ASSERT_GT(w.samples, 0);
  ASSERT_TRUE(w.energy_j && w.power_mean_w);
  EXPECT_NEAR(*w.power_mean_w, 50.0, 1e-9);  // a constant 50 W integrates to 50 W x the window
  EXPECT_NEAR(*w.energy_j, 50.0 * w.seconds, 1e-9);
}

TEST_F(FakeNvml, TheTotalEnergyCounterGivesTheEnergyAndTheSamplesTheSpread) {
  // A board with the counter: the energy is the counter difference (begin to end: one step of
  // 7,500 mJ), not the integral of the 50 W samples; the samples still give min/max.
  ::setenv("NNPERF_FAKE_ENERGY_MJ_PER_CALL", "7500", 1);
  PowerOptions o = options("/nonexistent/powercap");
  o.device = Device::kCuda;
  PowerMonitor m(o);
  ASSERT_TRUE(m.available()) << m.unavailable_reason();
  m.begin();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const PowerWindow w = m.end();
  ASSERT_TRUE(w.energy_j && w.power_mean_w);
  EXPECT_DOUBLE_EQ(*w.energy_j, 7.5);
  // However busy the machine (the sampler may not have run in 20 ms), end() reads the board once.
  EXPECT_DOUBLE_EQ(*w.power_mean_w, 7.5 / w.seconds);
  ASSERT_GT(w.samples, 0);
  EXPECT_DOUBLE_EQ(*w.power_min_w, 50.0);
  EXPECT_DOUBLE_EQ(*w.power_max_w, 50.0);
  // The reader on its own: summed over the devices, in joules.
  NvmlReader r(NNPERF_FAKE_CUDA_LIB);
  ASSERT_EQ(r.devices(), 1);  // the stand-in's default: one board
  const auto a = r.energy_joules(), b = r.energy_joules();
  ASSERT_TRUE(a && b);
  EXPECT_DOUBLE_EQ(*b - *a, 7.5);
  ::unsetenv("NNPERF_FAKE_ENERGY_MJ_PER_CALL");
  EXPECT_FALSE(r.energy_joules());  // a board without the counter
}

TEST_F(FakeNvml, ACudaRunReadsOnlyItsOwnBoard) {
  // Three boards of 50 W each (the stand-in puts board i on bus i + 1): the CUDA device's bus
  // selects one; no bus, or one NVML does not know, reads all three, summed, and says so.
  // cudaDeviceGetPCIBusId writes a 4-digit domain ("0000:02:00.0"); NVML's own ids have 8.
  ::setenv("NNPERF_FAKE_CUDA_DEVICES", "3", 1);
  for (const std::string bus : {"0000:02:00.0", "00000000:02:00.0"}) {
    NvmlReader own(NNPERF_FAKE_CUDA_LIB, bus);
    ASSERT_TRUE(own.available()) << own.unavailable_reason();
    EXPECT_EQ(own.devices(), 1);
    EXPECT_EQ(own.scope(), "the board at " + bus);
    EXPECT_DOUBLE_EQ(own.power_watts().value_or(0.0), 50.0);
  }
  const std::vector<std::pair<std::string, std::string>> summed = {
      {"", "all 3 boards NVML sees, summed"},
      {"0000:09:00.0", "all 3 boards NVML sees, summed (NVML error 6 looking up bus 0000:09:00.0)"},
      {"bus?", "all 3 boards NVML sees, summed (NVML error 2 looking up bus bus?)"}};
  for (const auto& [bus, scope] : summed) {
    NvmlReader all(NNPERF_FAKE_CUDA_LIB, bus);
    EXPECT_EQ(all.devices(), 3) << bus;
    EXPECT_EQ(all.scope(), scope) << bus;
    EXPECT_DOUBLE_EQ(all.power_watts().value_or(0.0), 150.0) << bus;
  }
  PowerOptions o = options("/nonexistent/powercap");
  o.device = Device::kCuda;
  o.nvml_pci_bus_id = "0000:03:00.0";
  PowerMonitor m(o);
  ASSERT_TRUE(m.available()) << m.unavailable_reason();
  EXPECT_EQ(m.scope(), "the board at 0000:03:00.0");
  m.begin();
  const PowerWindow w = m.end();
  ASSERT_TRUE(w.power_max_w);
  EXPECT_DOUBLE_EQ(*w.power_max_w, 50.0);
}

TEST_F(FakeNvml, AWindowShorterThanTheIntervalEndsAtOnceWithOneReading) {
  // Sampling every 10 s, a 5 ms window: end() wakes the sampler instead of waiting out its
  // interval, the window's length is taken before the sampler stops (so ~5 ms, not 10 s), and
  // the board's power is read once at the end since no interval passed.
  PowerOptions o = options("/nonexistent/powercap");
  o.device = Device::kCuda;
  o.interval_ms = 10000;
  PowerMonitor m(o);
  ASSERT_TRUE(m.available()) << m.unavailable_reason();
  const int64_t t0 = now_ns();
  m.begin();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const PowerWindow w = m.end();
  EXPECT_LT(static_cast<double>(now_ns() - t0) * 1e-9, 2.0);
  EXPECT_GE(w.seconds, 0.005);
  EXPECT_LT(w.seconds, 2.0);
  EXPECT_EQ(w.samples, 1);
  ASSERT_TRUE(w.power_min_w && w.power_max_w);
  EXPECT_DOUBLE_EQ(*w.power_min_w, 50.0);
  EXPECT_DOUBLE_EQ(*w.power_max_w, 50.0);
}

TEST_F(FakeNvml, AutoOnACudaRunWithoutNvmlHasNoFiguresAndSaysWhy) {
  ::setenv("NNPERF_FAKE_NVML_INIT", "9", 1);  // NVML_ERROR_DRIVER_NOT_LOADED
  test::TempDir dir;
  make_tree(dir.path(), 0, 0);
  PowerOptions o = options(dir.path());
  o.device = Device::kCuda;
  PowerMonitor m(o);
  EXPECT_FALSE(m.available());  // not RAPL: the CPU package is not the run's device
  EXPECT_NE(m.unavailable_reason().find("Driver Not Loaded"), std::string::npos)
      << m.unavailable_reason();
  o.source = "nvml";
  const std::string e = construction_error(o);
  EXPECT_EQ(
      e.rfind("--power-source nvml: NVML cannot be read: nvmlInit failed: Driver Not Loaded", 0),
      0u)
      << e;
}

TEST_F(FakeNvml, ExplicitSourcesOverrideTheDevice) {
  test::TempDir dir;
  make_tree(dir.path(), 0, 0);
  PowerOptions o = options(dir.path());
  o.source = "nvml";  // a CPU run measured at the GPU board, because the user asked
  EXPECT_EQ(PowerMonitor(o).source(), "nvml");
  o.source = "rapl";
  o.device = Device::kCuda;
  EXPECT_EQ(PowerMonitor(o).source(), "rapl");
}

TEST(PowerStats, TrapezoidIntegratesInsideTheWindowOnly) {
  // 50 W held for 2 s: 100 J whatever the sample spacing.
  EXPECT_NEAR(trapezoid_joules({{0.5, 50}, {1.0, 50}, {1.7, 50}}, 2.0), 100.0, 1e-12);
  // A ramp 0 -> 100 W over 1 s sampled at both ends: 50 J.
  EXPECT_NEAR(trapezoid_joules({{0.0, 0}, {1.0, 100}}, 1.0), 50.0, 1e-12);
  const PowerWindow w =
      summarize_power(2.0, std::nullopt, {{0.0, 40}, {1.0, 60}, {2.0, 40}}, "nvml");
  ASSERT_TRUE(w.energy_j.has_value());
  EXPECT_NEAR(*w.energy_j, 100.0, 1e-12);     // 50 + 50
  EXPECT_NEAR(*w.power_mean_w, 50.0, 1e-12);  // time-weighted, not the sample mean (46.7)
  EXPECT_NEAR(*w.power_min_w, 40.0, 1e-12);
  EXPECT_NEAR(*w.power_max_w, 60.0, 1e-12);
  EXPECT_EQ(w.samples, 3);
}

}  // namespace
}  // namespace nnperf
