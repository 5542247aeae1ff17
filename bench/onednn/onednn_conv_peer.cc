// oneDNN peer of `nnperf bench conv2d`: times oneDNN's f32 forward-inference convolution on
// benchdnn-style problems with algorithm::convolution_direct, convolution_winograd and
// convolution_auto, memory format `any` for src/weights/dst (oneDNN picks its blocked layouts).
// The user's NCHW src and OIHW weights are reordered into those layouts once, outside the timed
// region; only the convolution primitive is timed (median of --measure after --warmup, the
// algorithms alternating rep by rep), as an inference engine that keeps activations in oneDNN's
// layout between layers would run it. An algorithm oneDNN cannot create for a problem (Winograd
// on most shapes, or on CPUs without AVX-512) is recorded as "unsupported" with oneDNN's reason.
//
//   onednn_conv_peer --problem mb1ic64ih56oc64kh3ph1 [--problem ...] --threads 1 --json F
//   onednn_conv_peer --check      compares every algorithm with nnperf's float64 reference on
//                                 small shapes; exit 1 on a mismatch
//
// Writes {"peer": "onednn", "version", "context", "records": [{algorithm ("onednn_direct" ...),
// problem, status, time_ms_median, time_ms_min, time_ms_max, gflops_per_s, impl, ...}]}.
#include <omp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <dnnl.hpp>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "nnperf/core/error.h"
#include "nnperf/io/run_info.h"
#include "nnperf/kernels/conv/conv.h"

namespace {

using dnnl::memory;
using nnperf::ConvProblem;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

struct AlgoName {
  dnnl::algorithm algo;
  const char* name;
  double tolerance_factor;  // c_algo of docs/conventions.md for --check
};
// Winograd's transforms lose more than direct summation (nnperf's own winograd rows state theirs).
constexpr AlgoName kAlgos[] = {{dnnl::algorithm::convolution_direct, "onednn_direct", 1.0},
                               {dnnl::algorithm::convolution_winograd, "onednn_winograd", 64.0},
                               {dnnl::algorithm::convolution_auto, "onednn_auto", 1.0}};
constexpr double kEps = 0x1.0p-23;

std::string version_string() {
  const dnnl_version_t* v = dnnl_version();
  const std::string runtime =
      v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : std::to_string(v->cpu_runtime);
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch) + " (git " + v->hash + ", CPU runtime " + runtime + ")";
}

std::string isa_string(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    default:
      return "other (" + std::to_string(static_cast<int>(isa)) + ")";
  }
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// User-side tensors (NCHW src, OIHW/GOIHW weights, bias), seeded uniform in [-1, 1].
struct Inputs {
  std::vector<float> src, wei, bias;
};

Inputs make_inputs(const ConvProblem& p, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Inputs in{std::vector<float>(static_cast<size_t>(p.src_numel())),
            std::vector<float>(static_cast<size_t>(p.wei_numel())),
            std::vector<float>(static_cast<size_t>(p.oc))};
  for (auto* v : {&in.src, &in.wei, &in.bias})
    for (float& x : *v) x = u(gen);
  return in;
}

// One created primitive with its memories in oneDNN's chosen layouts.
struct Planned {
  const AlgoName* algo = nullptr;
  std::string impl;
  dnnl::convolution_forward conv;
  memory src, wei, bias, dst;
  std::vector<double> ms;
};

memory::dims src_dims(const ConvProblem& p) { return {p.mb, p.ic, p.ih, p.iw}; }
memory::dims dst_dims(const ConvProblem& p) { return {p.mb, p.oc, p.oh(), p.ow()}; }
memory::dims wei_dims(const ConvProblem& p) {
  if (p.g == 1) return {p.oc, p.ic, p.kh, p.kw};
  return {p.g, p.ocg(), p.icg(), p.kh, p.kw};
}

// Creates the primitive; throws dnnl::error (status unimplemented) when oneDNN has no
// implementation of this algorithm for the problem on this CPU.
Planned plan(const AlgoName& a, const ConvProblem& p, const Inputs& in, const dnnl::engine& eng,
             dnnl::stream& s) {
  const memory::desc src_any(src_dims(p), dt::f32, tag::any),
      wei_any(wei_dims(p), dt::f32, tag::any), bias_md({p.oc}, dt::f32, tag::x),
      dst_any(dst_dims(p), dt::f32, tag::any);
  // oneDNN's dilation is 0-based (nnperf's d1 = dense = oneDNN 0). Right padding equal to the
  // left one gives the same floor((ih + 2p - ext) / s) + 1 output size as nnperf.
  const dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, a.algo, src_any,
                                          wei_any, bias_md, dst_any, {p.sh, p.sw},
                                          {p.dh - 1, p.dw - 1}, {p.ph, p.pw}, {p.ph, p.pw});
  const dnnl::convolution_forward::primitive_desc pd(d, eng);
  Planned pl;
  pl.algo = &a;
  pl.impl = pd.impl_info_str();
  pl.conv = dnnl::convolution_forward(pd);
  memory user_src({src_dims(p), dt::f32, tag::nchw}, eng, const_cast<float*>(in.src.data()));
  memory user_wei({wei_dims(p), dt::f32, p.g == 1 ? tag::oihw : tag::goihw}, eng,
                  const_cast<float*>(in.wei.data()));
  pl.src = memory(pd.src_desc(), eng);
  pl.wei = memory(pd.weights_desc(), eng);
  pl.bias = memory(bias_md, eng, const_cast<float*>(in.bias.data()));
  pl.dst = memory(pd.dst_desc(), eng);
  dnnl::reorder(user_src, pl.src).execute(s, user_src, pl.src);
  dnnl::reorder(user_wei, pl.wei).execute(s, user_wei, pl.wei);
  s.wait();
  return pl;
}

void run(Planned& pl, dnnl::stream& s) {
  pl.conv.execute(s, {{DNNL_ARG_SRC, pl.src},
                      {DNNL_ARG_WEIGHTS, pl.wei},
                      {DNNL_ARG_BIAS, pl.bias},
                      {DNNL_ARG_DST, pl.dst}});
  s.wait();
}

std::string layout_of(const memory::desc& md) {
  // The blocked format has no tag query in the 2.x API; its strides and inner blocks say it.
  const dnnl_memory_desc_t& c = md.data;
  if (c.format_kind != dnnl_blocked) return "non-blocked";
  std::string out = "strides";
  for (int i = 0; i < c.ndims; ++i)
    out += (i ? "," : ":") + std::to_string(c.format_desc.blocking.strides[i]);
  for (int i = 0; i < c.format_desc.blocking.inner_nblks; ++i)
    out += " blk" + std::to_string(c.format_desc.blocking.inner_idxs[i]) + "x" +
           std::to_string(c.format_desc.blocking.inner_blks[i]);
  return out;
}

nlohmann::json bench_problem(const ConvProblem& p, int warmup, int measure, unsigned seed,
                             const dnnl::engine& eng, dnnl::stream& s) {
  const Inputs in = make_inputs(p, seed);
  std::vector<Planned> planned;
  nlohmann::json records = nlohmann::json::array();
  for (const AlgoName& a : kAlgos) {
    try {
      planned.push_back(plan(a, p, in, eng, s));
    } catch (const dnnl::error& e) {
      records.push_back({{"algorithm", a.name},
                         {"problem", p.str()},
                         {"status", "unsupported"},
                         {"reason", std::string("oneDNN: ") + e.what() + " (status " +
                                        std::to_string(static_cast<int>(e.status)) + ")"},
                         {"peer", "onednn"}});
    }
  }
  for (int r = 0; r < warmup + measure; ++r) {
    for (Planned& pl : planned) {
      const auto t0 = std::chrono::steady_clock::now();
      run(pl, s);
      const double t = ms_since(t0);
      if (r >= warmup) pl.ms.push_back(t);
    }
  }
  for (Planned& pl : planned) {
    std::vector<double> v = pl.ms;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    const double median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    records.push_back({{"algorithm", pl.algo->name},
                       {"problem", p.str()},
                       {"status", "ok"},
                       {"impl", pl.impl},
                       {"src_layout", layout_of(pl.src.get_desc())},
                       {"wei_layout", layout_of(pl.wei.get_desc())},
                       {"time_ms_median", median},
                       {"time_ms_min", v.front()},
                       {"time_ms_max", v.back()},
                       {"reps", n},
                       {"flops", p.flops()},
                       {"gflops_per_s", p.flops() / (median * 1e-3) * 1e-9},
                       {"peer", "onednn"}});
  }
  return records;
}

// --check: every algorithm oneDNN can create on small shapes against nnperf's float64 reference,
// with the bound of docs/conventions.md. Returns the number of failures.
int check(const dnnl::engine& eng, dnnl::stream& s) {
  const char* shapes[] = {"mb2ic5ih11oc7kh3ph1",    "mb1ic16ih13oc24kh3sh2ph1",
                          "mb1ic8ih9oc16kh1",       "g2mb1ic8ih10oc6kh3ph1",
                          "mb1ic4ih12oc4kh3ph2dh2", "mb1ic3ih19oc8kh7sh2ph3",
                          "mb1ic64ih14oc64kh3ph1",  "mb2ic32ih9iw12oc48kh3kw1pw1"};
  int failures = 0, checked = 0;
  for (const char* text : shapes) {
    const ConvProblem p = nnperf::parse_conv_problem(text);
    const Inputs in = make_inputs(p, 7);
    std::vector<double> ref(static_cast<size_t>(p.dst_numel())), abs_sum(ref.size());
    nnperf::conv2d_reference(p, in.src.data(), in.wei.data(), in.bias.data(), ref.data(),
                             abs_sum.data());
    const double k = static_cast<double>(p.icg() * p.kh * p.kw);
    for (const AlgoName& a : kAlgos) {
      Planned pl;
      try {
        pl = plan(a, p, in, eng, s);
      } catch (const dnnl::error& e) {
        std::printf("check %-28s %-16s unsupported (%s)\n", p.str().c_str(), a.name, e.what());
        continue;
      }
      // Poison the output so an unwritten element fails.
      {
        float* d = static_cast<float*>(pl.dst.get_data_handle());
        std::fill(d, d + pl.dst.get_desc().get_size() / sizeof(float),
                  std::numeric_limits<float>::quiet_NaN());
      }
      run(pl, s);
      memory out({dst_dims(p), dt::f32, tag::nchw}, eng);
      dnnl::reorder(pl.dst, out).execute(s, pl.dst, out);
      s.wait();
      const float* y = static_cast<const float*>(out.get_data_handle());
      // convolution_auto is held to the direct bound unless oneDNN picked a Winograd kernel.
      const double c_algo = pl.impl.find("wino") != std::string::npos ? 64.0 : a.tolerance_factor;
      double worst = 0, max_abs = 0;
      for (size_t i = 0; i < ref.size(); ++i) {
        const double err = std::abs(static_cast<double>(y[i]) - ref[i]);
        const double bound = c_algo * k * kEps * abs_sum[i] + kEps * std::abs(ref[i]);
        const double ratio =
            std::isnan(err) ? std::numeric_limits<double>::infinity() : err / bound;
        worst = std::max(worst, ratio);
        max_abs =
            std::isnan(err) ? std::numeric_limits<double>::infinity() : std::max(max_abs, err);
      }
      const bool ok = worst <= 1.0;
      failures += ok ? 0 : 1;
      ++checked;
      std::printf("check %-28s %-16s %s max_abs_err %.3g, worst err/bound %.3g (c=%g)  [%s]\n",
                  p.str().c_str(), a.name, ok ? "PASS" : "FAIL", max_abs, worst, c_algo,
                  pl.impl.c_str());
    }
  }
  std::printf("check: %d of %d passed\n", checked - failures, checked);
  return checked == 0 ? 1 : failures;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "oneDNN peer of `nnperf bench conv2d` (direct, winograd, auto; formats `any`; conv only "
      "timed)"};
  std::vector<std::string> problems;
  int threads = 1, warmup = 3, measure = 10, batch = 0;
  unsigned seed = 1;
  std::string json_path;
  bool do_check = false;
  app.add_option("--problem", problems, "benchdnn descriptor (repeatable)");
  app.add_option("--batch", batch, "Replace the descriptors' mb (0 = keep)");
  app.add_option("--threads", threads, "OpenMP threads")->capture_default_str();
  app.add_option("--warmup", warmup, "Untimed runs per algorithm")->capture_default_str();
  app.add_option("--measure", measure, "Timed runs per algorithm")->capture_default_str();
  app.add_option("--seed", seed, "Seed of the inputs")->capture_default_str();
  app.add_option("--json", json_path, "Write {peer, version, context, records} JSON here");
  app.add_flag("--check", do_check,
               "Compare with nnperf's float64 reference on small shapes; exit 1 on mismatch");
  CLI11_PARSE(app, argc, argv);
  try {
    if (threads < 1 || warmup < 0 || measure < 1)
      throw nnperf::UsageError("--threads and --measure must be >= 1, --warmup >= 0");
    omp_set_num_threads(threads);
    dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    dnnl::stream s(eng);
    const std::string isa = isa_string(dnnl::get_effective_cpu_isa());
    std::printf("oneDNN %s, isa %s, %d thread(s)\n", version_string().c_str(), isa.c_str(),
                threads);
    if (do_check) return check(eng, s) == 0 ? 0 : 1;
    if (problems.empty()) throw nnperf::UsageError("give --problem (or --check)");
    nlohmann::json records = nlohmann::json::array();
    std::printf("%-34s %-16s %10s %9s %8s  %s\n", "problem", "algorithm", "median_ms", "min_ms",
                "GFLOP/s", "impl");
    for (const std::string& text : problems) {
      ConvProblem p = nnperf::parse_conv_problem(text);
      if (batch > 0) p.mb = batch;
      const std::string bad = p.invalid_reason();
      if (!bad.empty()) throw nnperf::UsageError("--problem " + text + ": " + bad);
      for (auto& r : bench_problem(p, warmup, measure, seed, eng, s)) {
        if (r["status"] == "ok") {
          std::printf("%-34s %-16s %10.3f %9.3f %8.1f  %s\n", p.str().c_str(),
                      r["algorithm"].get<std::string>().c_str(), r["time_ms_median"].get<double>(),
                      r["time_ms_min"].get<double>(), r["gflops_per_s"].get<double>(),
                      r["impl"].get<std::string>().c_str());
        } else {
          std::printf("%-34s %-16s unsupported\n", p.str().c_str(),
                      r["algorithm"].get<std::string>().c_str());
        }
        records.push_back(r);
      }
      std::fflush(stdout);
    }
    if (!json_path.empty()) {
      nlohmann::json ctx = nnperf::run_context();
      ctx["threads"] = threads;
      ctx["omp_max_threads"] = omp_get_max_threads();
      ctx["warmup"] = warmup;
      ctx["measure"] = measure;
      ctx["onednn_isa"] = isa;
      ctx["timed"] =
          "convolution primitive only; src/weights reordered to oneDNN's layouts beforehand";
      ctx["flops_convention"] = "direct-convolution FLOPs (2 per multiply-add)";
      nnperf::write_json_atomic(json_path, {{"peer", "onednn"},
                                            {"version", version_string()},
                                            {"context", ctx},
                                            {"records", records}});
    }
    return 0;
  } catch (const dnnl::error& e) {
    std::fprintf(stderr, "onednn_conv_peer: oneDNN error: %s (status %d)\n", e.what(),
                 static_cast<int>(e.status));
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onednn_conv_peer: %s\n", e.what());
    return 2;
  }
}
