#include "nnperf/runs/batchnorm_bench.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>

#include "nnperf/core/clock.h"
#include "nnperf/core/error.h"
#include "nnperf/core/interrupt.h"
#include "nnperf/core/memory.h"
#include "nnperf/core/name_registry.h"
#include "nnperf/core/rng.h"
#include "nnperf/core/threads.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/io/run_info.h"
#include "nnperf/kernels/conv/cudnn_batchnorm.h"
#include "nnperf/kernels/cuda_kernels.h"
#include "nnperf/profile/stats.h"

namespace nnperf {

namespace {

constexpr double kEps = 1e-5, kMomentum = 0.1;

// The seeded inputs (x with a mean away from 0, as the tests draw them) and the pass's float64
// reference outputs: y; or dx, d_gamma, d_beta.
struct Inputs {
  std::vector<float> x, dy, gamma, beta;
  std::vector<std::vector<double>> want;
};

Inputs make_inputs(const BatchNormShape& s, uint64_t seed, bool backward) {
  const auto n = static_cast<std::size_t>(s.mb * s.channels * s.plane);
  const auto c = static_cast<std::size_t>(s.channels);
  Inputs in{std::vector<float>(n),
            std::vector<float>(backward ? n : 0),
            std::vector<float>(c),
            std::vector<float>(c),
            {}};
  Rng rng(seed);
  rng.fill_uniform(in.x, -3.0f, 5.0f);
  rng.fill_uniform(in.dy, -1.0f, 1.0f);
  rng.fill_uniform(in.gamma, 0.5f, 1.5f);
  rng.fill_uniform(in.beta, -1.0f, 1.0f);
  if (!backward) {
    std::vector<double> y(n), mean(c), var(c);
    batchnorm_train_forward_reference(s, in.x.data(), in.gamma.data(), in.beta.data(), kEps,
                                      y.data(), mean.data(), var.data());
    in.want.push_back(std::move(y));
    return in;
  }
  std::vector<double> dx(n), dg(c), db(c);
  batchnorm_backward_reference(s, in.x.data(), in.dy.data(), in.gamma.data(), kEps, dx.data(),
                               dg.data(), db.data());
  in.want = {std::move(dx), std::move(dg), std::move(db)};
  return in;
}

// One algorithm ready to run: `run` does (CPU) or queues (GPU) the pass once on its own buffers,
// `outputs` reads the pass's results back in the order of Inputs::want.
struct Row {
  std::string name;
  std::function<void()> run;
  std::function<std::vector<std::vector<float>>()> outputs;
};

// The project's CPU kernels (threads as given) in `layout` (own: kAuto); the statistics saved in
// float64.
Row cpu_row(const std::string& name, BatchNormLayout layout, const BatchNormShape& s,
            const Inputs& in, bool backward, int threads) {
  struct Buffers {
    std::vector<float> y, dx, rm, rv, dg, db;
    std::vector<double> mean, inv;
  };
  const auto c = static_cast<std::size_t>(s.channels);
  auto b = std::make_shared<Buffers>(
      Buffers{std::vector<float>(in.x.size()), std::vector<float>(backward ? in.x.size() : 0),
              std::vector<float>(c, 0.0f), std::vector<float>(c, 1.0f), std::vector<float>(c),
              std::vector<float>(c), std::vector<double>(c), std::vector<double>(c)});
  const BatchNormTrainArgs f{
      s,         in.x.data(),  b->y.data(),  in.gamma.data(), in.beta.data(), kEps,
      kMomentum, b->rm.data(), b->rv.data(), b->mean.data(),  b->inv.data(),  threads};
  if (!backward) {
    return {name, [f, layout] { batchnorm_train_forward(f, layout); },
            [b] { return std::vector<std::vector<float>>{b->y}; }};
  }
  batchnorm_train_forward(f, layout);  // the statistics the backward reads
  const BatchNormBackwardArgs g{s,
                                in.x.data(),
                                in.dy.data(),
                                b->dx.data(),
                                in.gamma.data(),
                                b->mean.data(),
                                b->inv.data(),
                                b->dg.data(),
                                b->db.data(),
                                threads};
  return {name, [g, layout] { batchnorm_backward(g, layout); },
          [b] {
            return std::vector<std::vector<float>>{b->dx, b->dg, b->db};
          }};
}

// The GPU's inputs and one row's outputs and statistics, on the device.
struct DeviceBuffers {
  cuda::Buffer x, dy, gamma, beta, y, dx, rm, rv, mean, inv, dg, db;
  DeviceBuffers(const Inputs& in, bool backward)
      : x(cuda::to_device(in.x)),
        dy(backward ? cuda::to_device(in.dy) : cuda::Buffer()),
        gamma(cuda::to_device(in.gamma)),
        beta(cuda::to_device(in.beta)),
        y(in.x.size()),
        dx(backward ? in.x.size() : 0),
        rm(cuda::to_device(std::vector<float>(in.gamma.size(), 0.0f))),
        rv(cuda::to_device(std::vector<float>(in.gamma.size(), 1.0f))),
        mean(2 * in.gamma.size()),  // a double per channel for the own kernels, a float for cuDNN
        inv(2 * in.gamma.size()),
        dg(in.gamma.size()),
        db(in.gamma.size()) {}
  std::vector<std::vector<float>> outputs(bool backward) const {
    if (!backward) return {cuda::to_host(y)};
    return {cuda::to_host(dx), cuda::to_host(dg), cuda::to_host(db)};
  }
};

// The project's CUDA kernels (float64 statistics).
Row cuda_own(const BatchNormShape& s, const Inputs& in, bool backward) {
  auto b = std::make_shared<DeviceBuffers>(in, backward);
  auto* mean = reinterpret_cast<double*>(b->mean.data());
  auto* inv = reinterpret_cast<double*>(b->inv.data());
  const BatchNormTrainArgs f{s,
                             b->x.data(),
                             b->y.data(),
                             b->gamma.data(),
                             b->beta.data(),
                             kEps,
                             kMomentum,
                             b->rm.data(),
                             b->rv.data(),
                             mean,
                             inv,
                             1};
  const auto outputs = [b, backward] { return b->outputs(backward); };
  if (!backward) return {"own", [f] { cuda_kernels::batchnorm_train_forward(f); }, outputs};
  cuda_kernels::batchnorm_train_forward(f);
  const BatchNormBackwardArgs g{s,    b->x.data(), b->dy.data(), b->dx.data(), b->gamma.data(),
                                mean, inv,         b->dg.data(), b->db.data(), 1};
  return {"own", [g] { cuda_kernels::batchnorm_backward(g); }, outputs};
}

// cuDNN's batch normalisation (float statistics).
Row cuda_cudnn(const BatchNormShape& s, const Inputs& in, bool backward) {
  auto b = std::make_shared<DeviceBuffers>(in, backward);
  const cudnn::BatchNormForward f{
      s,         b->x.data(),  b->y.data(),  b->gamma.data(), b->beta.data(), kEps,
      kMomentum, b->rm.data(), b->rv.data(), b->mean.data(),  b->inv.data()};
  const auto outputs = [b, backward] { return b->outputs(backward); };
  if (!backward) return {"cudnn", [f] { cudnn::batchnorm_train_forward(f); }, outputs};
  cudnn::batchnorm_train_forward(f);
  const cudnn::BatchNormBackward g{s,
                                   b->x.data(),
                                   b->dy.data(),
                                   b->dx.data(),
                                   b->gamma.data(),
                                   b->mean.data(),
                                   b->inv.data(),
                                   kEps,
                                   b->dg.data(),
                                   b->db.data()};
  return {"cudnn", [g] { cudnn::batchnorm_backward(g); }, outputs};
}

// The CPU rows' layouts, by the layouts' own names (to_string); own takes the kernels' automatic
// pick (batchnorm_auto_layout).
BatchNormLayout cpu_layout(const std::string& name) {
  for (const BatchNormLayout l : {BatchNormLayout::kChannels, BatchNormLayout::kBlocks}) {
    if (name == to_string(l)) return l;
  }
  return BatchNormLayout::kAuto;
}

// "" when `name` can run shape s on the device, else why not.
std::string why_not(const std::string& name, Device device, const BatchNormShape& s) {
  if (device == Device::kCuda && name == "cudnn") return cudnn::batchnorm_why_not(s);
  if (device == Device::kCpu) return batchnorm_layout_why_not(cpu_layout(name), s);
  return "";
}

Row make_row(const std::string& name, const BatchNormBenchOptions& o, const BatchNormShape& s,
             const Inputs& in, int threads) {
  if (o.device == Device::kCpu) return cpu_row(name, cpu_layout(name), s, in, o.backward, threads);
  return name == "cudnn" ? cuda_cudnn(s, in, o.backward) : cuda_own(s, in, o.backward);
}

std::vector<std::string> selected(const BatchNormBenchOptions& o) {
  const std::vector<std::string> all = batchnorm_bench_algorithms(o.device);
  if (o.algorithms.empty()) return all;
  std::vector<std::string> chosen;
  for (const std::string& n : o.algorithms) {
    const std::string* row = Registry<std::string>(all).find(n);
    if (row == nullptr) {
      throw UsageError(fmt::format("--algorithms: no BatchNorm algorithm '{}' on the {}; one of {}",
                                   n, device_name(o.device), fmt::join(all, ", ")));
    }
    chosen.push_back(*row);  // the table's spelling
  }
  return chosen;
}

// Refuses a shape whose buffers would not fit, before anything is allocated: the host's inputs,
// float64 references and each row's copies; on the GPU also each row's device buffers.
void check_sizes(const BatchNormShape& s, const BatchNormBenchOptions& o, std::size_t rows) {
  const std::optional<int64_t> mbc = checked_mul(s.mb, s.channels);
  const std::optional<int64_t> n = mbc ? checked_mul(*mbc, s.plane) : std::nullopt;
  const std::optional<int64_t> host =
      n ? checked_mul(*n, 24 + 8 * static_cast<int64_t>(rows) + (o.backward ? 12 : 0))
        : std::nullopt;
  if (!host) throw UsageError(fmt::format("--problem {}: the tensor's size overflows", o.problem));
  check_memory(*host, fmt::format("--problem {}", o.problem));
  if (o.device != Device::kCuda) return;
  const int64_t device = *n * 4 * (o.backward ? 4 : 2) * static_cast<int64_t>(rows);
  if (const std::size_t free = cuda::device_properties().free_bytes;
      static_cast<std::size_t>(device) > free) {
    throw Error(
        fmt::format("--problem {}: the rows need {:.1f} GiB of device memory, {:.1f} GiB "
                    "are free",
                    o.problem, device / double(1 << 30), free / double(1 << 30)));
  }
}

// ms[row][timed run]: the rows alternately, --warmup untimed rounds first; the GPU's by CUDA
// events read once per round.
std::vector<std::vector<double>> time_rows(std::vector<Row>& rows, const BatchNormBenchOptions& o) {
  const int n = static_cast<int>(rows.size());
  const auto run = [&](int i) { rows[static_cast<std::size_t>(i)].run(); };
  if (o.device == Device::kCuda)
    return cuda::time_alternately(n, run, false, o.warmup, o.measure, check_interrupt);
  return time_alternately_on_host(n, run, o.warmup, o.measure, check_interrupt);
}

// The record of a timed row: time, bandwidth at the two-pass minimum, errors against `want`.
nlohmann::json record(const Row& row, const std::vector<double>& ms, const Inputs& in,
                      const BatchNormShape& s, const BatchNormBenchOptions& o) {
  const Summary t = summarize(ms);
  const double bytes =
      static_cast<double>(s.mb * s.channels * s.plane) * (o.backward ? 20.0 : 12.0);
  nlohmann::json r{{"algorithm", row.name},
                   {"device", device_name(o.device)},
                   {"problem", o.problem},
                   {"pass", o.backward ? "backward" : "forward"},
                   {"status", "ok"},
                   {"time_ms_median", t.median},
                   {"time_ms_min", t.min},
                   {"time_ms_max", t.max},
                   {"reps", t.count},
                   {"bytes", bytes},
                   {"gb_per_s", bytes / (t.median * 1e-3) * 1e-9}};
  if (o.peak_gbps > 0) r["percent_of_peak_bw"] = 100.0 * r["gb_per_s"].get<double>() / o.peak_gbps;
  if (o.device == Device::kCpu) {  // what ran: own's automatic pick included
    const BatchNormLayout layout = cpu_layout(row.name);
    r["layout"] = to_string(layout == BatchNormLayout::kAuto ? batchnorm_auto_layout(s) : layout);
  }
  const std::vector<std::vector<float>> got = row.outputs();
  double abs_err = 0, rel_err = 0;
  for (std::size_t k = 0; k < in.want.size(); ++k) {
    double err = 0, scale = 0;
    for (std::size_t i = 0; i < in.want[k].size(); ++i) {
      err = std::max(err, std::abs(got[k][i] - in.want[k][i]));
      scale = std::max(scale, std::abs(in.want[k][i]));
    }
    abs_err = std::max(abs_err, err);
    rel_err = std::max(rel_err, scale > 0 ? err / scale : err);
  }
  r["max_abs_err"] = abs_err;
  r["max_rel_err"] = rel_err;
  return r;
}

}  // namespace

BatchNormShape parse_batchnorm_problem(std::string_view text) {
  const auto fail = [&] {
    return UsageError(fmt::format(
        "--problem '{}': expected mbNcNhN with an optional wN (NCHW), e.g. mb32c64h56w56", text));
  };
  std::string_view rest = text;
  const auto number = [&](std::string_view key, int64_t& out) {
    if (!rest.starts_with(key)) throw fail();
    rest.remove_prefix(key.size());
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), out);
    if (ec != std::errc() || end == rest.data() || out <= 0) throw fail();
    rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
  };
  int64_t mb = 0, c = 0, h = 0, w = 0;
  number("mb", mb);
  number("c", c);
  number("h", h);
  if (rest.empty()) {
    w = h;
  } else {
    number("w", w);
  }
  if (!rest.empty()) throw fail();
  const auto plane = checked_mul(h, w);
  if (!plane) throw UsageError(fmt::format("--problem {}: h x w overflows", text));
  return {mb, c, *plane};
}

std::vector<std::string> batchnorm_bench_algorithms(Device device) {
  if (device == Device::kCpu) return {"own", "channels", "blocks"};
  return cudnn::batchnorm_algorithms();
}

nlohmann::json bench_batchnorm(const BatchNormShape& s, const BatchNormBenchOptions& o) {
  if (o.warmup < 0 || o.measure < 1) throw UsageError("--warmup must be >= 0 and --measure >= 1");
  const bool gpu = o.device == Device::kCuda;
  if (gpu) cuda::require("--device cuda");
  const int threads = gpu ? 1 : set_threads(o.threads);
  const std::vector<std::string> names = selected(o);
  check_sizes(s, o, names.size());
  const Inputs in = make_inputs(s, o.seed, o.backward);
  nlohmann::json records = nlohmann::json::array();
  std::vector<Row> rows;
  for (const std::string& n : names) {
    if (const std::string why = why_not(n, o.device, s); !why.empty()) {
      records.push_back({{"algorithm", n},
                         {"device", device_name(o.device)},
                         {"problem", o.problem},
                         {"status", "skipped"},
                         {"reason", why}});
      continue;
    }
    rows.push_back(make_row(n, o, s, in, threads));
  }
  const std::vector<std::vector<double>> ms = time_rows(rows, o);
  for (std::size_t i = 0; i < rows.size(); ++i) records.push_back(record(rows[i], ms[i], in, s, o));
  nlohmann::json ctx = run_context();
  ctx["device"] = device_name(o.device);
  if (gpu) ctx["cuda_device"] = cuda::device_summary();
  ctx["pass"] = o.backward ? "backward" : "forward";
  ctx["threads"] = threads;
  ctx["warmup"] = o.warmup;
  ctx["measure"] = o.measure;
  ctx["bytes_rule"] = "two-pass minimum: forward 12, backward 20 bytes per element";
  ctx["timer"] = gpu ? "cuda-events (one synchronisation per round)" : "cpu-steady-clock";
  if (o.peak_gbps > 0) ctx["peak_gbps"] = o.peak_gbps;
  return {{"context", ctx}, {"records", records}};
}

}  // namespace nnperf
