#include "nnperf/runs/gemm_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <memory>

#include "nnperf/core/error.h"
#include "nnperf/core/interrupt.h"
#include "nnperf/core/memory.h"
#include "nnperf/core/rng.h"
#include "nnperf/core/threads.h"
#include "nnperf/core/workspace.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/io/run_info.h"
#include "nnperf/core/clock.h"
#include "nnperf/profile/stats.h"

namespace nnperf {

namespace {

// The operands as the algorithms see them: host vectors, or device buffers holding the same values.
struct Operands {
  std::vector<float> a, b;
  int64_t lda = 0, ldb = 0;
  std::unique_ptr<cuda::Buffer> da, db;
};

struct Planned {
  const GemmAlgorithm* algo;
  std::vector<float> c;               // CPU result
  std::unique_ptr<cuda::Buffer> dc;   // GPU result
  Workspace workspace;
  GemmArgs args;
  std::vector<double> ms;
};

const char* vendor(Device d) { return d == Device::kCpu ? "blas" : "cublas"; }

std::vector<const GemmAlgorithm*> select(const GemmBenchOptions& o) {
  std::vector<const GemmAlgorithm*> out;
  if (o.algorithms.empty()) {
    for (const GemmAlgorithm& a : gemm_algorithms()) {
      if (a.device == o.device) out.push_back(&a);
    }
  } else {
    for (const auto& n : o.algorithms) {
      try {
        out.push_back(&find_gemm(n, o.device));
      } catch (const UsageError& e) {
        throw UsageError(fmt::format("--algorithms: {}", e.what()));
      }
    }
  }
  return out;
}

// Refuses a shape whose operands (and one C per algorithm) would not fit, before allocating.
void check_sizes(const GemmShape& s, std::size_t algos) {
  const auto ab = checked_add(checked_mul(s.m, s.k).value_or(-1), checked_mul(s.k, s.n).value_or(-1));
  const auto c = checked_mul(s.m, s.n);
  const auto bytes = ab && c && *ab >= 0 ? checked_mul(*ab + *c * static_cast<int64_t>(algos), 4)
                                         : std::nullopt;
  if (!bytes) throw UsageError(fmt::format("--problem {}: the operands' size overflows", s.str()));
  // Host copies exist on both devices (the GPU operands are uploaded from them).
  check_memory(*bytes, fmt::format("--problem {}", s.str()));
}

void run_once(Planned& p) { p.algo->run(p.args); }

std::vector<float> result_of(const Planned& p) {
  if (!p.dc) return p.c;
  std::vector<float> h(p.dc->size());
  p.dc->download(h);
  return h;
}

}  // namespace

GemmShape parse_gemm_shape(std::string_view text) {
  GemmShape s;
  auto fail = [&] {
    return UsageError(fmt::format("--problem '{}': expected mMnNkK with optional _ta and _tb, "
                                  "e.g. m4096n4096k4096 or m784n512k64_ta",
                                  text));
  };
  std::string_view rest = text;
  auto number = [&](char letter, int64_t& out) {
    if (rest.empty() || rest.front() != letter) throw fail();
    rest.remove_prefix(1);
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), out);
    if (ec != std::errc() || end == rest.data() || out <= 0) throw fail();
    rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
  };
  number('m', s.m);
  number('n', s.n);
  number('k', s.k);
  if (rest.starts_with("_ta")) {
    s.trans_a = true;
    rest.remove_prefix(3);
  }
  if (rest.starts_with("_tb")) {
    s.trans_b = true;
    rest.remove_prefix(3);
  }
  if (!rest.empty()) throw fail();
  return s;
}

namespace {

Operands make_operands(const GemmShape& s, uint64_t seed, bool gpu) {
  Operands in;
  in.lda = s.trans_a ? s.m : s.k;
  in.ldb = s.trans_b ? s.k : s.n;
  in.a.resize(static_cast<std::size_t>(s.m * s.k));
  in.b.resize(static_cast<std::size_t>(s.k * s.n));
  Rng rng(seed);
  rng.fill_uniform(in.a, -1.0f, 1.0f);
  rng.fill_uniform(in.b, -1.0f, 1.0f);
  if (gpu) {
    in.da = std::make_unique<cuda::Buffer>(in.a.size());
    in.db = std::make_unique<cuda::Buffer>(in.b.size());
    in.da->upload(in.a);
    in.db->upload(in.b);
  }
  return in;
}

// One row ready to run: its own C (host or device) and workspace.
std::unique_ptr<Planned> plan_row(const GemmAlgorithm* a, const GemmShape& s, const Operands& in,
                                  bool gpu, int threads) {
  auto p = std::make_unique<Planned>();
  p->algo = a;
  const std::size_t c_size = static_cast<std::size_t>(s.m * s.n);
  float* c = nullptr;
  if (gpu) {
    p->dc = std::make_unique<cuda::Buffer>(c_size);
    c = p->dc->data();
  } else {
    p->c.assign(c_size, 0.0f);
    c = p->c.data();
  }
  p->workspace.reserve(a->workspace_bytes(s, threads));
  p->args = gemm_args(s, gpu ? in.da->data() : in.a.data(), in.lda, gpu ? in.db->data() : in.b.data(),
                      in.ldb, c, s.n, p->workspace.data(), threads);
  return p;
}

// Alternating rounds (the rows of each in round_order's order); each row's measured milliseconds
// into its `ms`. On the GPU every run is bracketed by events (slot = round x row) and the whole
// set is read after one synchronisation.
void measure(std::vector<std::unique_ptr<Planned>>& planned, int warmup, int measured, bool gpu) {
  const int rounds = warmup + measured;
  const int n = static_cast<int>(planned.size());
  std::unique_ptr<IntervalTimer> timer = gpu ? cuda::make_event_timer(std::max(1, rounds * n)) : nullptr;
  for (int r = 0; r < rounds; ++r) {
    check_interrupt();
    for (const int i : round_order(n, r)) {
      Planned& p = *planned[static_cast<std::size_t>(i)];
      if (gpu) {
        timer->begin(r * n + i);
        run_once(p);
        timer->end(r * n + i);
      } else {
        const int64_t t0 = now_ns();
        run_once(p);
        if (r >= warmup) p.ms.push_back(static_cast<double>(now_ns() - t0) * 1e-6);
      }
    }
  }
  if (!gpu) return;
  std::vector<double> ms;
  std::vector<int64_t> counts;
  timer->resolve(ms, counts);
  cuda::synchronize();
  for (int r = warmup; r < rounds; ++r) {
    for (int i = 0; i < n; ++i) {
      planned[static_cast<std::size_t>(i)]->ms.push_back(ms[static_cast<std::size_t>(r * n + i)]);
    }
  }
}

// One record per measured row; the vendor's result and time are the references of the others.
void append_records(const std::vector<std::unique_ptr<Planned>>& planned, const GemmShape& s,
                    Device device, nlohmann::json& records) {
  const Planned* ref = nullptr;
  for (const auto& p : planned) {
    if (std::string_view(p->algo->name) == vendor(device)) ref = p.get();
  }
  const std::vector<float> ref_c = ref != nullptr ? result_of(*ref) : std::vector<float>{};
  const double ref_ms = ref != nullptr ? summarize(ref->ms).median : 0.0;
  for (const auto& p : planned) {
    const Summary sm = summarize(p->ms);
    nlohmann::json rec{{"algorithm", p->algo->name}, {"device", device_name(device)},
                       {"problem", s.str()}, {"status", "ok"},
                       {"time_ms_median", sm.median}, {"time_ms_min", sm.min},
                       {"time_ms_max", sm.max}, {"reps", sm.count}, {"flops", s.flops()},
                       {"gflops_per_s", s.flops() / (sm.median * 1e-3) * 1e-9}};
    if (ref != nullptr) {
      const std::vector<float> c = result_of(*p);
      double diff = 0.0;
      for (std::size_t i = 0; i < c.size(); ++i) {
        diff = std::max(diff, std::fabs(static_cast<double>(c[i]) - ref_c[i]));
      }
      rec["vs_vendor"] = ref_ms / sm.median;
      rec["max_abs_diff_vs_vendor"] = diff;
    }
    records.push_back(rec);
  }
}

}  // namespace

nlohmann::json bench_gemm(const GemmShape& s, const GemmBenchOptions& o) {
  if (o.warmup < 0 || o.measure < 1) throw UsageError("--warmup must be >= 0 and --measure >= 1");
  const bool gpu = o.device == Device::kCuda;
  if (gpu) cuda::require("--device cuda");
  const int threads = gpu ? 1 : set_threads(o.threads);
  if (!gpu) set_blas_threads(threads);
  const auto algos = select(o);
  check_sizes(s, algos.size());
  const Operands in = make_operands(s, o.seed, gpu);

  nlohmann::json records = nlohmann::json::array();
  std::vector<std::unique_ptr<Planned>> planned;
  for (const GemmAlgorithm* a : algos) {
    if (const std::string why = a->why_not(s); !why.empty()) {
      records.push_back({{"algorithm", a->name}, {"device", device_name(o.device)},
                         {"problem", s.str()}, {"status", "skipped"}, {"reason", why}});
    } else {
      planned.push_back(plan_row(a, s, in, gpu, threads));
    }
  }
  measure(planned, o.warmup, o.measure, gpu);
  append_records(planned, s, o.device, records);

  nlohmann::json ctx = run_context();
  ctx["device"] = device_name(o.device);
  if (gpu) ctx["cuda_device"] = cuda::device_summary();
  ctx["threads"] = threads;
  ctx["warmup"] = o.warmup;
  ctx["measure"] = o.measure;
  ctx["vendor"] = vendor(o.device);
  ctx["timer"] = gpu ? "cuda-events (one synchronisation after all runs)" : "cpu-steady-clock";
  return {{"context", ctx}, {"records", records}};
}

}  // namespace nnperf
