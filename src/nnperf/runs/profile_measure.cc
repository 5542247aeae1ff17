// The profiler's measurement of one input size (runs/profile_measure.h).
#include "nnperf/runs/profile_measure.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nnperf/core/clock.h"
#include "nnperf/core/interrupt.h"
#include "nnperf/core/memory.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/kernels/conv/conv_dispatch.h"
#include "nnperf/profile/profiler.h"

namespace nnperf::profile_sweep {

namespace {

AlgorithmUse algorithm_use(const Graph& g, const std::string& requested,
                           const std::function<LayerColumns(int)>& columns) {
  AlgorithmUse u;
  const bool named = find_conv_choice(requested) == nullptr;
  for (int n = 1; n < g.size(); ++n) {
    const LayerColumns c = columns(n);
    if (!c.is_conv) continue;
    ++u.conv_layers;
    ++u.used[c.algorithm_used];
    if (named && c.algorithm_used != requested) {
      ++u.other;
      if (u.first_reason.empty())
        u.first_reason = fmt::format("{}: {}", g.name(n), c.fallback_reason);
    }
  }
  return u;
}

// The loss and optimizer phases of every training step, per pass (the layers have their own).
class PhaseRecorder final : public StepHook {
 public:
  void phase(StepPhase p, bool begin) override {
    if (p != StepPhase::kLoss && p != StepPhase::kOptimizer) return;
    auto& ms = p == StepPhase::kLoss ? loss : optimizer;
    if (begin) {
      begin_ = now_ns();
    } else {
      ms.push_back(static_cast<double>(now_ns() - begin_) * 1e-6);
    }
  }
  std::vector<double> loss, optimizer;

 private:
  int64_t begin_ = 0;
};

}  // namespace

LayerColumns node_columns(const Sweep& sw, int n) {
  LayerColumns c = layer_columns(sw.graph, n);
  if (sw.gpu && c.is_conv) {
    const CudaNodeInfo& info = sw.gpu->node(n);
    c.algorithm_used = info.algorithm;
    c.fallback_reason = info.fallback_reason;
    c.workspace_bytes = std::to_string(info.workspace_bytes);
  }
  return c;
}

namespace {

// The whole model, no hooks (but the exec log's, when asked for), power sampled over exactly the
// measured passes.
void measure_whole(Sweep& sw, const ProfileOptions& o, const Tensor& x, SizeRecord& r,
                   const std::function<void(const std::string&)>& show) {
  sw.graph.set_hook(with_exec_log(sw.exec.get(), nullptr));
  for (int i = 0; i < o.warmup; ++i) {
    show(fmt::format("warm-up {}/{}", i + 1, o.warmup));
    sw.run(x);
    check_interrupt();
  }
  std::vector<double> ms;
  ms.reserve(static_cast<std::size_t>(o.measure));
  sw.power.begin();
  for (int i = 0; i < o.measure && !interrupt_requested(); ++i) {
    const int64_t t0 = now_ns();
    sw.run(x);
    ms.push_back(static_cast<double>(now_ns() - t0) * 1e-6);
  }
  r.power = sw.power.end();
  check_interrupt();
  r.whole = summarize(ms);
  r.passes = static_cast<int64_t>(ms.size());
  r.energy_passes = r.passes;
}

// The layers, in separate passes with a hook around every node (training: forward + backward,
// and the loss and the update as rows of their own).
void measure_layers(Sweep& sw, const ProfileOptions& o, const Tensor& x, SizeRecord& r,
                    const std::function<void(const std::string&)>& show) {
  Graph& g = sw.graph;
  LayerRecorder rec(g.size(), sw.trainer != nullptr);
  PhaseRecorder phases;
  rec.reserve(o.measure);
  g.set_hook(with_exec_log(sw.exec.get(), &rec));
  if (sw.trainer) sw.trainer->set_step_hook(&phases);
  for (int i = 0; i < o.measure; ++i) {
    show(fmt::format("layers pass {}/{}", i + 1, o.measure));
    rec.start_pass();
    sw.run(x);
    check_interrupt();
  }
  g.set_hook(with_exec_log(sw.exec.get(), nullptr));
  if (sw.trainer) sw.trainer->set_step_hook(nullptr);
  for (int n = 1; n < g.size(); ++n) {
    r.layers.push_back(
        {g.name(n), node_columns(sw, n), summarize(rec.ms()[static_cast<std::size_t>(n)])});
    r.layers_sum += r.layers.back().time.mean;
  }
  if (sw.trainer) {
    for (const auto& [name, ms] :
         {std::pair{"loss", &phases.loss}, {"optimizer", &phases.optimizer}}) {
      LayerColumns c;
      c.layer_type = name == std::string("loss") ? "CrossEntropyLoss" : "SGD";
      r.layers.push_back({name, c, summarize(*ms)});
      r.layers_sum += r.layers.back().time.mean;
    }
  }
  for (const auto& sp : rec.last_pass()) {
    const Layer& L = g.layer(sp.node);
    const bool fwd = sp.phase == Phase::kForward;
    r.trace.push_back({g.name(sp.node) + (fwd ? "" : ".backward"),
                       L.kind(),
                       static_cast<double>(sp.begin_ns - rec.pass_begin_ns()) * 1e-3,
                       static_cast<double>(sp.end_ns - sp.begin_ns) * 1e-3,
                       {{"layer", L.describe()},
                        {"dispatch", L.dispatch()},
                        {"phase", fwd ? "forward" : "backward"},
                        {"output", g.output_shape(sp.node).str()}}});
  }
}

// Energy on the GPU is read over untimed passes filling at least this long: over the 20 timed
// passes alone (0.04-0.27 s on an H200), NVML's power samples stayed below the energy counter's
// mean and the energy per pass was a third lower than over a second.
constexpr double kGpuEnergyWindowSeconds = 1.0;

// The whole model on the GPU: each measured pass between two CUDA events, all read after one
// synchronisation at the end; then, with a power source, energy over a window of whole passes
// (kGpuEnergyWindowSeconds or more), synchronised every 8 passes to watch the clock.
void measure_whole_gpu(Sweep& sw, const ProfileOptions& o, SizeRecord& r,
                       const std::function<void(const std::string&)>& show) {
  show(fmt::format("warm-up ({})", o.warmup));
  for (int i = 0; i < o.warmup; ++i) sw.gpu->run();
  // The graph is captured at the first run(): with --warmup 0 it is captured here instead, so
  // that no timed pass holds the capture's host work and nothing runs untimed (a profiler such as
  // ncu, scripts/ncu_profile.sh, sees exactly the --measure passes).
  sw.gpu->prepare();
  cuda::synchronize();
  check_interrupt();
  const std::unique_ptr<IntervalTimer> timer = cuda::make_event_timer(o.measure);
  for (int i = 0; i < o.measure; ++i) {
    timer->begin(i);
    sw.gpu->run();
    timer->end(i);
  }
  std::vector<double> ms;
  std::vector<int64_t> counts;
  timer->resolve(ms, counts);  // the one synchronisation
  check_interrupt();
  r.whole = summarize(ms);
  r.passes = o.measure;
  if (!sw.power.available()) return;
  show(fmt::format("energy ({:.0f} s or more)", kGpuEnergyWindowSeconds));
  sw.power.begin();
  const int64_t t0 = now_ns();
  do {
    for (int i = 0; i < 8; ++i) sw.gpu->run();
    r.energy_passes += 8;
    cuda::synchronize();
  } while (seconds_since(t0) < kGpuEnergyWindowSeconds && !interrupt_requested());
  r.power = sw.power.end();
  check_interrupt();
}

// The layers on the GPU: separate passes with an event after every node's kernels (a node's
// time runs from the event before it, less the device time one event adds, floored at 0), read
// after one synchronisation per pass. The trace lays the last pass's layers end to end (one
// stream runs them in order).
void measure_layers_gpu(Sweep& sw, const ProfileOptions& o, SizeRecord& r,
                        const std::function<void(const std::string&)>& show) {
  const Graph& g = sw.graph;
  const std::unique_ptr<Timeline> timeline = cuda::make_event_timeline();
  std::vector<std::vector<double>> per_node(static_cast<std::size_t>(g.size()));
  sw.gpu->set_timeline(timeline.get());
  for (int i = 0; i < o.measure; ++i) {
    show(fmt::format("layers pass {}/{}", i + 1, o.measure));
    sw.gpu->run();
    const std::vector<double> ms = sw.gpu->node_ms();
    for (int n = 1; n < g.size(); ++n) {
      const double t = ms[static_cast<std::size_t>(n)];
      per_node[static_cast<std::size_t>(n)].push_back(
          sw.gpu->marked(n) ? std::max(0.0, t - sw.mark_cost_ms) : t);
      r.layers_sum_raw += t / o.measure;
    }
    check_interrupt();
  }
  sw.gpu->set_timeline(nullptr);
  double at_us = 0;
  for (int n = 1; n < g.size(); ++n) {
    const std::vector<double>& t = per_node[static_cast<std::size_t>(n)];
    const LayerColumns c = node_columns(sw, n);
    r.layers.push_back({g.name(n), c, summarize(t)});
    r.layers_sum += r.layers.back().time.mean;
    const double us = t.back() * 1e3;
    r.trace.push_back(
        {g.name(n),
         c.layer_type,
         at_us,
         us,
         {{"layer", g.layer(n).describe()},
          {"algorithm", c.algorithm_used},
          {"phase", "forward"},
          {"output", g.output_shape(n).str()},
          {"clock",
           "CUDA events, one after each layer, its measured cost taken off; begin = the earlier "
           "layers' times"}}});
    at_us += us;
  }
}

}  // namespace

SizeRecord measure_size(Sweep& sw, const ProfileOptions& o, int64_t size,
                        const std::function<void(const std::string&)>& show) {
  SizeRecord r;
  r.size = size;
  show("planning");
  const int64_t channels = sw.model.default_input[0];
  const MemoryContext memory_context(fmt::format("{} at input {}x{}x{}x{} (--batch-size, --sizes)",
                                                 sw.model.name, o.batch_size, channels, size,
                                                 size));
  plan_model(sw.model, sw.graph, Shape{o.batch_size, channels, size, size}, sw.ctx);
  if (o.device == Device::kCuda) {
    sw.gpu.reset();  // the last size's device memory first
    sw.gpu = std::make_unique<CudaInference>(sw.graph, o.algorithm, o.strict, o.cuda_graph,
                                             o.find_engines);
  }
  r.use = algorithm_use(sw.graph, o.algorithm, [&](int n) { return node_columns(sw, n); });
  Tensor x(Shape{o.batch_size, channels, size, size});
  sw.rng.fill_uniform({x.data(), static_cast<std::size_t>(x.numel())}, -1.0f, 1.0f);
  if (sw.gpu) {
    sw.gpu->set_input({x.data(), static_cast<std::size_t>(x.numel())});
    measure_whole_gpu(sw, o, r, show);
    if (o.layers) measure_layers_gpu(sw, o, r, show);
    r.device_bytes = sw.gpu->device_bytes();
    r.graph_nodes = sw.gpu->graph_nodes();
    return r;
  }
  if (sw.trainer) {  // random labels over the model's classes
    const int64_t classes = sw.graph.output_shape(sw.graph.size() - 1)[1];
    sw.labels.resize(static_cast<std::size_t>(o.batch_size));
    for (auto& l : sw.labels)
      l = static_cast<int32_t>(sw.rng.below(static_cast<uint64_t>(classes)));
  }
  measure_whole(sw, o, x, r, show);
  if (o.layers) measure_layers(sw, o, x, r, show);
  return r;
}

}  // namespace nnperf::profile_sweep
