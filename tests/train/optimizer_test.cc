// Optimizers against hand-written float64 updates for 3 steps (torch.optim.SGD and Adam rules):
// SGD plain / momentum / nesterov / weight decay, Adam with bias correction and weight decay;
// checkpoint state round trip; bad options and bad state give clear errors; SGD's SIMD bodies give
// sgd_element's bits.
#include "nnperf/train/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "nnperf/core/cpu.h"
#include "nnperf/core/error.h"
#include "nnperf/core/rng.h"
#include "nnperf/train/optimizer_internal.h"
#include "test_util.h"

namespace nnperf {
namespace {

// Two parameters (11 elements: the vector body plus a tail; and a 2 x 3 matrix) with gradients
// that change every step.
struct Model {
  Tensor w1 = test::random_tensor({11}, 1);
  Tensor g1 = Tensor::zeros({11});
  Tensor w2 = test::random_tensor({2, 3}, 2);
  Tensor g2 = Tensor::zeros({2, 3});
  std::vector<Param> params() { return {{"w1", &w1, &g1}, {"w2", &w2, &g2}}; }
  void set_grads(int step) {
    Rng rng(100 + static_cast<uint64_t>(step));
    rng.fill_uniform(std::span<float>(g1.data(), 11), -1.0f, 1.0f);
    rng.fill_uniform(std::span<float>(g2.data(), 6), -1.0f, 1.0f);
  }
  std::vector<double> values() const {
    std::vector<double> v(w1.data(), w1.data() + 11);
    v.insert(v.end(), w2.data(), w2.data() + 6);
    return v;
  }
  std::vector<double> grads() const {
    std::vector<double> v(g1.data(), g1.data() + 11);
    v.insert(v.end(), g2.data(), g2.data() + 6);
    return v;
  }
};

void expect_close(const std::vector<double>& got, const std::vector<double>& want, int step,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    // A few float roundings per step on values ~1.
    ASSERT_NEAR(got[i], want[i], 1e-6 * (1 + std::fabs(want[i])))
        << what << " step " << step << " element " << i;
  }
}

struct SgdCase {
  float lr, momentum, weight_decay;
  bool nesterov;
};

class SgdSteps : public ::testing::TestWithParam<SgdCase> {};

TEST_P(SgdSteps, MatchTorchOptimSgd) {
  const SgdCase c = GetParam();
  OptimizerOptions o;
  o.name = "sgd";
  o.lr = c.lr;
  o.momentum = c.momentum;
  o.weight_decay = c.weight_decay;
  o.nesterov = c.nesterov;
  auto opt = make_optimizer(o);
  EXPECT_EQ(opt->name(), "sgd");
  Model m;
  std::vector<double> p = m.values(), buf(p.size(), 0.0);
  for (int step = 0; step < 3; ++step) {
    m.set_grads(step);
    const std::vector<double> g = m.grads();
    for (size_t i = 0; i < p.size(); ++i) {
      double d = g[i] + c.weight_decay * p[i];
      if (c.momentum != 0) {
        buf[i] = step == 0 ? d : c.momentum * buf[i] + d;
        d = c.nesterov ? d + c.momentum * buf[i] : buf[i];
      }
      p[i] -= c.lr * d;
    }
    opt->step(m.params());
    expect_close(m.values(), p, step, "params");
  }
  EXPECT_EQ(opt->steps(), 3);
  EXPECT_EQ(opt->state().size(), c.momentum != 0 ? 2u : 0u);
}

INSTANTIATE_TEST_SUITE_P(Variants, SgdSteps,
                         ::testing::Values(SgdCase{0.1f, 0.0f, 0.0f, false},
                                           SgdCase{0.1f, 0.9f, 0.0f, false},
                                           SgdCase{0.05f, 0.9f, 0.0f, true},
                                           SgdCase{0.1f, 0.0f, 1e-2f, false},
                                           SgdCase{0.1f, 0.9f, 1e-4f, true}));

struct AdamCase {
  float lr, beta1, beta2, eps, weight_decay;
};

class AdamSteps : public ::testing::TestWithParam<AdamCase> {};

TEST_P(AdamSteps, MatchTorchOptimAdamWithBiasCorrection) {
  const AdamCase c = GetParam();
  OptimizerOptions o;
  o.name = "Adam";  // case-insensitive
  o.lr = c.lr;
  o.beta1 = c.beta1;
  o.beta2 = c.beta2;
  o.eps = c.eps;
  o.weight_decay = c.weight_decay;
  auto opt = make_optimizer(o);
  EXPECT_EQ(opt->name(), "adam");
  Model m;
  std::vector<double> p = m.values(), mom(p.size(), 0.0), var(p.size(), 0.0);
  for (int step = 0; step < 3; ++step) {
    m.set_grads(step);
    const std::vector<double> g = m.grads();
    const double t = step + 1;
    const double b1 = c.beta1, b2 = c.beta2;
    for (size_t i = 0; i < p.size(); ++i) {
      const double d = g[i] + c.weight_decay * p[i];
      mom[i] = b1 * mom[i] + (1 - b1) * d;
      var[i] = b2 * var[i] + (1 - b2) * d * d;
      const double m_hat = mom[i] / (1 - std::pow(b1, t));
      const double v_hat = var[i] / (1 - std::pow(b2, t));
      p[i] -= c.lr * m_hat / (std::sqrt(v_hat) + c.eps);
    }
    opt->step(m.params());
    expect_close(m.values(), p, step, "params");
  }
  // The first step moves every weight by ~lr (m_hat / sqrt(v_hat) = sign(g)): a vacuous update
  // would have failed above, this documents the scale.
  const auto st = opt->state();
  ASSERT_EQ(st.size(), 4u);
  EXPECT_EQ(st[0].first, "exp_avg.0");
  EXPECT_EQ(st[3].first, "exp_avg_sq.1");
  for (size_t i = 0; i < 11; ++i)
    EXPECT_NEAR((*st[0].second)[static_cast<int64_t>(i)], mom[i], 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Variants, AdamSteps,
                         ::testing::Values(AdamCase{1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f},
                                           AdamCase{1e-2f, 0.8f, 0.99f, 1e-6f, 0.0f},
                                           AdamCase{1e-3f, 0.9f, 0.999f, 1e-8f, 1e-2f}));

TEST(Adam, VectorBodyAndScalarTailAgree) {
  // Same value and gradient at element 0 (SSE body) and element 10 (scalar tail).
  auto opt = make_optimizer(OptimizerOptions{});
  Model m;
  m.w1[10] = m.w1[0];
  for (int step = 0; step < 3; ++step) {
    m.set_grads(step);
    m.g1[10] = m.g1[0];
    opt->step(m.params());
    ASSERT_EQ(m.w1[10], m.w1[0]) << "step " << step;
  }
}

// Two optimizers: one runs 3 steps; the other runs 2, is rebuilt from its checkpointed state, and
// runs the third. Both must end bit-identical.
void check_state_round_trip(const OptimizerOptions& o) {
  Model a, b;
  auto opt_a = make_optimizer(o);
  auto opt_b = make_optimizer(o);
  for (int step = 0; step < 2; ++step) {
    a.set_grads(step);
    b.set_grads(step);
    opt_a->step(a.params());
    opt_b->step(b.params());
  }
  std::vector<std::pair<std::string, Tensor>> saved;
  for (const auto& [name, t] : opt_b->state()) saved.emplace_back(name, *t);
  auto resumed = make_optimizer(o);
  resumed->load_state(saved, opt_b->steps());
  EXPECT_EQ(resumed->steps(), 2);
  a.set_grads(2);
  b.set_grads(2);
  opt_a->step(a.params());
  resumed->step(b.params());
  const auto va = a.values(), vb = b.values();
  for (size_t i = 0; i < va.size(); ++i) ASSERT_EQ(va[i], vb[i]) << o.name << " element " << i;
}

TEST(OptimizerState, RoundTripResumesExactly) {
  OptimizerOptions sgd;
  sgd.name = "sgd";
  sgd.lr = 0.1f;
  sgd.nesterov = true;
  check_state_round_trip(sgd);
  check_state_round_trip(OptimizerOptions{});  // adam
}

TEST(OptimizerState, BadStateIsRejected) {
  auto adam = make_optimizer(OptimizerOptions{});
  std::vector<std::pair<std::string, Tensor>> bad;
  bad.emplace_back("momentum.0", Tensor::zeros({11}));
  EXPECT_THROW(adam->load_state(bad, 1), Error);

  // Buffers of the wrong shape for the model: caught on the next step, naming the parameter.
  std::vector<std::pair<std::string, Tensor>> wrong;
  wrong.emplace_back("exp_avg.0", Tensor::zeros({11}));
  wrong.emplace_back("exp_avg.1", Tensor::zeros({3, 2}));
  wrong.emplace_back("exp_avg_sq.0", Tensor::zeros({11}));
  wrong.emplace_back("exp_avg_sq.1", Tensor::zeros({3, 2}));
  adam->load_state(wrong, 5);
  Model m;
  m.set_grads(0);
  try {
    adam->step(m.params());
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("w2"), std::string::npos) << e.what();
  }
  std::vector<std::pair<std::string, Tensor>> gap;
  gap.emplace_back("exp_avg.0", Tensor::zeros({11}));
  gap.emplace_back("exp_avg_sq.0", Tensor::zeros({11}));
  gap.emplace_back("exp_avg.2", Tensor::zeros({11}));
  EXPECT_THROW(adam->load_state(gap, 1), Error);
}

TEST(MakeOptimizer, BadOptionsThrowUsageErrors) {
  OptimizerOptions o;
  o.name = "rmsprop";
  try {
    make_optimizer(o);
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("sgd or adam"), std::string::npos) << e.what();
  }
  o.name = "sgd";
  o.momentum = 0.0f;
  o.nesterov = true;
  EXPECT_THROW(make_optimizer(o), UsageError);
  o = OptimizerOptions{};
  o.lr = -1.0f;
  EXPECT_THROW(make_optimizer(o), UsageError);
  o = OptimizerOptions{};
  o.beta2 = 1.0f;
  EXPECT_THROW(make_optimizer(o), UsageError);
}

// The GPU trainers compare names: whatever the case the user typed, they read the optimizer's own
// name (an "Adam" once ran SGD with momentum on the GPU while the CPU ran Adam).
TEST(MakeOptimizer, CheckedOptionsCarryTheOptimizersOwnName) {
  OptimizerOptions o;
  o.name = "Adam";
  o.lr = 0.25;
  EXPECT_EQ(make_optimizer(o)->name(), "adam");
  const OptimizerOptions checked = checked_optimizer(o);
  EXPECT_EQ(checked.name, "adam");
  EXPECT_EQ(checked.lr, 0.25);
  o.name = "SGD";
  EXPECT_EQ(checked_optimizer(o).name, "sgd");
  o.name = "rmsprop";
  EXPECT_THROW(checked_optimizer(o), UsageError);
}

TEST(Optimizer, SetLrChangesTheStep) {
  OptimizerOptions o;
  o.name = "sgd";
  o.momentum = 0.0f;
  o.lr = 1.0f;
  auto opt = make_optimizer(o);
  Tensor w = Tensor::zeros({1}), g = Tensor::zeros({1});
  g[0] = 2.0f;
  std::vector<Param> params = {{"w", &w, &g}};
  opt->set_lr(0.25f);
  EXPECT_EQ(opt->lr(), 0.25f);
  opt->step(params);
  EXPECT_FLOAT_EQ(w[0], -0.5f);
}

// The update is split over threads for long tensors (for_slices, 64-element slices): SGD
// (momentum, nesterov, plain) and Adam give the same floats on 1, 2 and 3 threads, on a tensor of
// 100003 elements (a slice boundary off the vector width, a tail) and a short one (one thread).
TEST(Optimizer, ThreadsGiveTheSameFloats) {
  struct Variant {
    const char* name;
    double momentum;
    bool nesterov;
  };
  for (const Variant v : {Variant{"sgd", 0.9, true}, Variant{"sgd", 0.9, false},
                          Variant{"sgd", 0.0, false}, Variant{"adam", 0.0, false}}) {
    std::vector<std::vector<float>> results;
    for (int threads : {1, 2, 3}) {
      OptimizerOptions o;
      o.name = v.name;
      o.lr = 0.05;
      o.momentum = v.momentum;
      o.nesterov = v.nesterov;
      o.weight_decay = 1e-3;
      auto opt = make_optimizer(o);
      opt->set_threads(threads);
      Tensor w1 = test::random_tensor({100003}, 7), w2 = test::random_tensor({37}, 8);
      Tensor g1 = Tensor::zeros({100003}), g2 = Tensor::zeros({37});
      const std::vector<Param> params{{"w1", &w1, &g1}, {"w2", &w2, &g2}};
      for (int step = 0; step < 3; ++step) {
        Rng rng(200 + static_cast<uint64_t>(step));
        rng.fill_uniform(std::span<float>(g1.data(), 100003), -1.0f, 1.0f);
        rng.fill_uniform(std::span<float>(g2.data(), 37), -1.0f, 1.0f);
        opt->step(params);
      }
      std::vector<float> r(w1.data(), w1.data() + 100003);
      r.insert(r.end(), w2.data(), w2.data() + 37);
      results.push_back(std::move(r));
    }
    for (std::size_t t = 1; t < results.size(); ++t) {
      ASSERT_EQ(0, std::memcmp(results[0].data(), results[t].data(), results[0].size() * 4))
          << v.name << " momentum " << v.momentum << " nesterov " << v.nesterov << ": " << t + 1
          << " threads";
    }
  }
}

// Each SIMD body of SGD's update (those this CPU runs) against sgd_element, element by element,
// bit for bit: lengths around the vector widths (bodies, tails, neither), no momentum, momentum
// with a fresh buffer (keep 0) and a kept one, Nesterov, with and without weight decay.
TEST(Sgd, EverySimdBodyGivesSgdElementsBits) {
  using Body = void (*)(float*, const float*, float*, int64_t, const SgdCoefficients&);
  std::vector<std::pair<const char*, Body>> bodies = {{"sse", sgd_update_sse}};
  if (cpu_info().simd >= SimdLevel::kAvx2) bodies.emplace_back("avx2", sgd_update_avx2);
  const std::vector<SgdCoefficients> rules = {
      {0.05f, 0.0f, 0.0f, 0.0f, false},  {0.05f, 5e-4f, 0.9f, 0.0f, false},
      {0.05f, 5e-4f, 0.9f, 0.9f, false}, {0.1f, 5e-4f, 0.9f, 0.9f, true},
      {0.1f, 0.0f, 0.9f, 0.0f, true},
  };
  for (const auto& [name, body] : bodies) {
    for (std::size_t r = 0; r < rules.size(); ++r) {
      const SgdCoefficients& c = rules[r];
      const bool momentum = c.momentum != 0.0f;
      for (const int64_t n : {1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 100}) {
        Rng rng(static_cast<uint64_t>(1000 * r + n));
        std::vector<float> w(static_cast<std::size_t>(n)), g(w.size()), buf(w.size());
        rng.fill_uniform(w, -1.0f, 1.0f);
        rng.fill_uniform(g, -1.0f, 1.0f);
        rng.fill_uniform(buf, -1.0f, 1.0f);
        std::vector<float> w_want = w, buf_want = buf;
        for (int64_t j = 0; j < n; ++j) {
          sgd_element(w_want.data(), g.data(), momentum ? buf_want.data() : nullptr, j, c);
        }
        body(w.data(), g.data(), momentum ? buf.data() : nullptr, n, c);
        for (std::size_t j = 0; j < w.size(); ++j) {
          ASSERT_EQ(w[j], w_want[j]) << name << " rule " << r << " n " << n << " w[" << j << "]";
          ASSERT_EQ(buf[j], buf_want[j])
              << name << " rule " << r << " n " << n << " buf[" << j << "]";
        }
      }
    }
  }
}

}  // namespace
}  // namespace nnperf
