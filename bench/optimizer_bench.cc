// The optimizers' update over ResNet-18's parameters (10 classes: 11.2M values, one tensor per
// layer, as Trainer hands them over): SGD without momentum, with momentum and Nesterov (the CNN
// trainer's recipe, weight decay 5e-4), and Adam, each
//   - through Optimizer::step on 1 and 2 threads (what a training step pays), and
//   - SGD's bodies on one thread: `loop`, sgd_element in a plain loop as GCC compiles it (scalar
//     with momentum: its branches stop the vectoriser; Sgd::step's own Nesterov loop, before the
//     SIMD bodies, was scalar on one thread too), then `sse` and `avx2`
//     (train/optimizer_internal.h).
// Reports GB/s of the bytes each update must move (SGD: w and g read, w written, plus the momentum
// buffer read and written; Adam: w, g, m, v read, w, m, v written).
//   optimizer_bench    Google Benchmark run (usual --benchmark_* flags)
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.h"
#include "nnperf/core/cpu.h"
#include "nnperf/core/rng.h"
#include "nnperf/models/registry.h"
#include "nnperf/train/optimizer.h"
#include "nnperf/train/optimizer_internal.h"

namespace {

using nnperf::Tensor;

// ResNet-18's parameter tensors, one per layer that has parameters: random weights and gradients.
struct Model {
  std::vector<Tensor> w, g;
  int64_t values = 0;
  Model() {
    nnperf::ModelOptions mo;
    mo.classes = 10;
    const nnperf::Graph graph = nnperf::find_model("resnet18").build(mo);
    nnperf::Rng rng(7);
    for (int n = 1; n < graph.size(); ++n) {
      const int64_t count = graph.layer(n).num_params();
      if (count == 0) continue;
      w.push_back(Tensor::zeros(nnperf::Shape{count}));
      g.push_back(Tensor::zeros(nnperf::Shape{count}));
      rng.fill_uniform(std::span<float>(w.back().data(), count), -0.1f, 0.1f);
      rng.fill_uniform(std::span<float>(g.back().data(), count), -0.01f, 0.01f);
      values += count;
    }
  }
  std::vector<nnperf::Param> params() {
    std::vector<nnperf::Param> out;
    for (std::size_t i = 0; i < w.size(); ++i) out.push_back({fmt::format("p{}", i), &w[i], &g[i]});
    return out;
  }
};

Model& model() {
  static Model m;
  return m;
}

struct Rule {
  const char* name;
  nnperf::OptimizerOptions options;
  double floats_moved;  // per parameter value and update
};

nnperf::OptimizerOptions sgd(double momentum, bool nesterov) {
  nnperf::OptimizerOptions o;
  o.name = "sgd";
  o.lr = 0.1;
  o.momentum = momentum;
  o.weight_decay = 5e-4;
  o.nesterov = nesterov;
  return o;
}

nnperf::OptimizerOptions adam() {
  nnperf::OptimizerOptions o;
  o.name = "adam";
  o.weight_decay = 5e-4;
  return o;
}

const Rule kRules[] = {{"sgd_plain", sgd(0.0, false), 3},
                       {"sgd_momentum", sgd(0.9, false), 5},
                       {"sgd_nesterov", sgd(0.9, true), 5},
                       {"adam", adam(), 7}};

void set_bytes(benchmark::State& state, double floats_moved) {
  const double bytes = 4.0 * floats_moved * static_cast<double>(model().values);
  state.SetBytesProcessed(static_cast<int64_t>(bytes * static_cast<double>(state.iterations())));
}

void bm_step(benchmark::State& state, const Rule* r, int threads) {
  Model& m = model();
  const std::vector<nnperf::Param> params = m.params();
  const std::unique_ptr<nnperf::Optimizer> opt = nnperf::make_optimizer(r->options);
  opt->set_threads(threads);
  opt->step(params);  // creates the state
  for (auto _ : state) {
    opt->step(params);
    benchmark::ClobberMemory();
  }
  set_bytes(state, r->floats_moved);
}

using Body = void (*)(float*, const float*, float*, int64_t, const nnperf::SgdCoefficients&);

void sgd_loop(float* w, const float* grad, float* buf, int64_t n,
              const nnperf::SgdCoefficients& c) {
  for (int64_t j = 0; j < n; ++j) nnperf::sgd_element(w, grad, buf, j, c);
}

struct Path {
  const char* name;
  Body body;
  nnperf::SimdLevel needs;
};
const Path kPaths[] = {{"loop", sgd_loop, nnperf::SimdLevel::kScalar},
                       {"sse", nnperf::sgd_update_sse, nnperf::SimdLevel::kScalar},
                       {"avx2", nnperf::sgd_update_avx2, nnperf::SimdLevel::kAvx2}};

void bm_sgd_body(benchmark::State& state, const Rule* r, const Path* p) {
  Model& m = model();
  const bool momentum = r->options.momentum != 0.0;
  std::vector<Tensor> buf;
  for (const Tensor& t : m.w) buf.push_back(Tensor::zeros(t.shape()));
  const nnperf::SgdCoefficients c =
      nnperf::sgd_coefficients(r->options, static_cast<float>(r->options.lr), false);
  for (auto _ : state) {
    for (std::size_t i = 0; i < m.w.size(); ++i) {
      p->body(m.w[i].data(), m.g[i].data(), momentum ? buf[i].data() : nullptr, m.w[i].numel(), c);
    }
    benchmark::ClobberMemory();
  }
  set_bytes(state, r->floats_moved);
}

void register_benchmarks() {
  nnperf::bench::add_context(false);
  for (const Rule& r : kRules) {
    for (const int threads : {1, 2}) {
      benchmark::RegisterBenchmark(fmt::format("step/{}/threads:{}", r.name, threads).c_str(),
                                   bm_step, &r, threads)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  }
  for (const Rule& r : kRules) {
    if (r.options.name != "sgd") continue;
    for (const Path& p : kPaths) {
      if (nnperf::active_simd() < p.needs) continue;
      benchmark::RegisterBenchmark(fmt::format("sgd_body/{}/{}", r.name, p.name).c_str(),
                                   bm_sgd_body, &r, &p)
          ->Unit(benchmark::kMillisecond);
    }
  }
}

}  // namespace

int main(int argc, char** argv) { return nnperf::bench::run_main(argc, argv, register_benchmarks); }
