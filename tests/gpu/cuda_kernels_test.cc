// The GPU elementwise kernels (kernels/cuda_kernels.h) against the float64 references and stated
// tolerances of the CPU rows: the 8 activations forward and backward, bias and its gradient,
// softmax cross-entropy with label smoothing, the SGD and Adam updates. Odd sizes throughout. On a
// machine without a usable CUDA device the device cases report skipped with the reason, and the
// entries are checked to refuse with it.
#include "nnperf/kernels/cuda_kernels.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "nnperf/core/error.h"
#include "nnperf/gpu/cuda.h"
#include "test_util.h"

namespace nnperf {
namespace {

#define SKIP_WITHOUT_DEVICE() \
  if (!cuda::available()) GTEST_SKIP() << cuda::unavailable_reason()

using cuda::to_device;
using cuda::to_host;

TEST(CudaKernels, WithoutADeviceEachEntryRefusesWithTheReason) {
  if (cuda::available()) GTEST_SKIP() << "a CUDA device is usable here";
  float x = 0.0f;
  try {
    cuda_kernels::activation_forward(activation_kernels()[0], &x, &x, 1);
    FAIL() << "ran without a device";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), cuda::unavailable_reason());
  }
  EXPECT_THROW(cuda_kernels::update_table({}), Error);
}

class CudaActivation : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaActivation, ForwardAndBackwardMatchTheReference) {
  SKIP_WITHOUT_DEVICE();
  const ActivationKernel& a = find_activation(GetParam());
  // Aligned arrays run four elements at a time with a tail of n % 4; one float off, one by one.
  for (const auto& [n, off] : std::vector<std::pair<int64_t, std::size_t>>{
           {1, 0}, {7, 0}, {1000, 0}, {100003, 0}, {7, 1}, {1000, 1}}) {
    SCOPED_TRACE(fmt::format("n = {}, offset {}", n, off));
    std::vector<float> x =
        test::random_vector(n + static_cast<int64_t>(off), static_cast<uint64_t>(n), -8.0f, 8.0f);
    // The edges: zero, tiny, the Mish/softplus threshold, large magnitudes.
    const float edges[] = {0.0f, 1e-30f, -1e-30f, 20.0f, 20.5f, -30.0f, 30.0f, 88.0f, -88.0f};
    for (std::size_t i = 0; i < std::size(edges) && i + off < x.size(); ++i) x[i + off] = edges[i];
    const std::vector<float> g =
        test::random_vector(n + static_cast<int64_t>(off), static_cast<uint64_t>(n) + 1);
    cuda::Buffer dx = to_device(x), dy(x.size()), dg = to_device(g), dgx(x.size());
    cuda_kernels::activation_forward(a, dx.data() + off, dy.data() + off, n);
    cuda_kernels::activation_backward(a, dx.data() + off, dy.data() + off, dg.data() + off,
                                      dgx.data() + off, n);
    const std::vector<float> y = to_host(dy), gx = to_host(dgx);
    for (int64_t i = 0; i < n; ++i) {
      const auto k = static_cast<std::size_t>(i) + off;
      const double ref = a.reference(x[k]);
      ASSERT_LE(std::fabs(y[k] - ref), a.abs_tol + a.rel_tol * std::fabs(ref))
          << a.name << " forward at x = " << x[k] << ": " << y[k] << " vs " << ref;
      const double gref = a.reference_derivative(x[k]) * g[k];
      ASSERT_LE(std::fabs(gx[k] - gref),
                a.grad_abs_tol * std::fabs(g[k]) + a.grad_rel_tol * std::fabs(gref))
          << a.name << " backward at x = " << x[k] << ": " << gx[k] << " vs " << gref;
    }
  }
}

std::vector<std::string> activation_names_list() {
  std::vector<std::string> out;
  for (const ActivationKernel& a : activation_kernels()) out.emplace_back(a.name);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Rows, CudaActivation, ::testing::ValuesIn(activation_names_list()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(CudaKernels, BiasAndItsGradient) {
  SKIP_WITHOUT_DEVICE();
  const int64_t mb = 131, n = 37, ld = 41;
  const std::vector<float> y0 = test::random_vector(mb * ld, 1), bias = test::random_vector(n, 2);
  cuda::Buffer dy = to_device(y0), db = to_device(bias), dsum(static_cast<std::size_t>(n));
  cuda_kernels::add_bias_rows(dy.data(), db.data(), mb, n, ld);
  cuda_kernels::sum_rows(dy.data(), dsum.data(), mb, n, ld);
  const std::vector<float> y = to_host(dy), s = to_host(dsum);
  for (int64_t j = 0; j < n; ++j) {
    double ref_sum = 0.0, abs_sum = 0.0;
    for (int64_t i = 0; i < mb; ++i) {
      const auto k = static_cast<std::size_t>(i * ld + j);
      const double ref = static_cast<double>(y0[k]) + bias[static_cast<std::size_t>(j)];
      ASSERT_LE(std::fabs(y[k] - ref), test::kEps * std::fabs(ref)) << i << "," << j;
      ref_sum += y[k];
      abs_sum += std::fabs(y[k]);
    }
    EXPECT_LE(std::fabs(s[static_cast<std::size_t>(j)] - ref_sum), test::kEps * abs_sum) << j;
  }
  // Columns past n (the row stride's padding) are untouched.
  EXPECT_EQ(y[static_cast<std::size_t>(n)], y0[static_cast<std::size_t>(n)]);
}

TEST(CudaKernels, SoftmaxCrossEntropyWithLabelSmoothing) {
  SKIP_WITHOUT_DEVICE();
  for (float s : {0.0f, 0.1f}) {
    const int64_t mb = 97, n = 10;
    const std::vector<float> logits = test::random_vector(mb * n, 3, -6.0f, 6.0f);
    std::vector<int32_t> labels(static_cast<std::size_t>(mb));
    for (int64_t i = 0; i < mb; ++i) labels[static_cast<std::size_t>(i)] = static_cast<int32_t>(i * 7 % n);
    cuda::Buffer dl = to_device(logits), dd(logits.size());
    // The labels travel as floats' bit patterns in a float buffer.
    cuda::Buffer dlab(labels.size());
    std::vector<float> lab_bits(labels.size());
    std::memcpy(lab_bits.data(), labels.data(), labels.size() * sizeof(int32_t));
    dlab.upload(lab_bits);
    cuda::Buffer slot(cuda_kernels::kLossSlotFloats);
    cuda_kernels::queue_softmax_cross_entropy(dl.data(),
                                              reinterpret_cast<const int32_t*>(dlab.data()), mb, n,
                                              dd.data(), 1.0f / mb, s, slot.data());
    const LossResult got = cuda_kernels::read_loss(slot.data());
    const std::vector<float> d = to_host(dd);
    double loss = 0.0;
    int64_t correct = 0;
    for (int64_t i = 0; i < mb; ++i) {
      const float* x = logits.data() + i * n;
      double mx = x[0];
      int64_t arg = 0;
      for (int64_t c = 1; c < n; ++c) {
        if (x[c] > mx) { mx = x[c]; arg = c; }
      }
      double sum = 0.0;
      for (int64_t c = 0; c < n; ++c) sum += std::exp(x[c] - mx);
      const int32_t label = labels[static_cast<std::size_t>(i)];
      correct += arg == label;
      for (int64_t c = 0; c < n; ++c) {
        const double logp = x[c] - mx - std::log(sum);
        const double t = (c == label ? 1.0 - s : 0.0) + s / static_cast<double>(n);
        loss -= t * logp;
        const double gref = (std::exp(logp) - t) / static_cast<double>(mb);
        ASSERT_LE(std::fabs(d[static_cast<std::size_t>(i * n + c)] - gref), 4 * test::kEps / mb)
            << i << "," << c;
      }
    }
    EXPECT_NEAR(got.loss_sum, loss, 1e-9 * std::fabs(loss) + 1e-12) << "smoothing " << s;
    EXPECT_EQ(got.correct, correct);
    // Captured into a CUDA graph and launched three times: each launch zeroes the slot first, so
    // every read gives one batch's loss, not a running sum.
    cuda::Buffer dd2(logits.size());
    cuda::CapturedWork step;
    step.capture([&] {
      cuda_kernels::queue_softmax_cross_entropy(dl.data(),
                                                reinterpret_cast<const int32_t*>(dlab.data()), mb,
                                                n, dd2.data(), 1.0f / mb, s, slot.data());
    });
    for (int launch = 0; launch < 3; ++launch) {
      step.launch();
      const LossResult again = cuda_kernels::read_loss(slot.data());
      EXPECT_NEAR(again.loss_sum, loss, 1e-9 * std::fabs(loss) + 1e-12) << launch;
      EXPECT_EQ(again.correct, correct) << launch;
    }
    EXPECT_EQ(to_host(dd2), d);
  }
}

// Several tensors in one launch (sizes around the chunk: one element, a partial chunk, one just
// over a chunk, an empty one), each element against torch.optim's rule in float64.
TEST(CudaKernels, OneLaunchUpdatesFollowTorchOptim) {
  SKIP_WITHOUT_DEVICE();
  const std::vector<int64_t> sizes = {1009, 1, kUpdateChunk + 3, 0, 37};
  struct Tensors {
    std::vector<std::vector<float>> w0, g, s10, s20;
    std::vector<cuda::Buffer> w, dg, s1, s2;
  } t;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const int64_t n = sizes[i];
    t.w0.push_back(test::random_vector(n, 4 + i));
    t.g.push_back(test::random_vector(n, 20 + i));
    t.s10.push_back(test::random_vector(n, 40 + i));
    t.s20.push_back(test::random_vector(n, 60 + i, 0.0f, 1.0f));
  }
  // Fresh device copies and the table over them (s1 / s2 left out as asked).
  const auto upload = [&](bool with_s1, bool with_s2) {
    t.w.clear();
    t.dg.clear();
    t.s1.clear();
    t.s2.clear();
    std::vector<UpdateTensor> rows;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      t.w.push_back(to_device(t.w0[i]));
      t.dg.push_back(to_device(t.g[i]));
      t.s1.push_back(to_device(t.s10[i]));
      t.s2.push_back(to_device(t.s20[i]));
      rows.push_back({t.w.back().data(), t.dg.back().data(), with_s1 ? t.s1.back().data() : nullptr,
                      with_s2 ? t.s2.back().data() : nullptr, sizes[i]});
    }
    return cuda_kernels::update_table(rows);
  };
  const float lr = 0.1f, wd = 5e-4f, mu = 0.9f;
  for (int mode = 0; mode < 3; ++mode) {  // plain, momentum, nesterov
    const bool momentum = mode > 0, nesterov = mode == 2;
    cuda_kernels::UpdateTable table = upload(momentum, false);
    EXPECT_EQ(table.tensors, sizes.size());
    cuda_kernels::set_coefficients(table,
                                   SgdCoefficients{lr, wd, momentum ? mu : 0.0f, mu, nesterov});
    cuda_kernels::multi_sgd_update(table);
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const std::vector<float> w = to_host(t.w[i]), buf = to_host(t.s1[i]);
      for (std::size_t j = 0; j < w.size(); ++j) {
        const double w0 = t.w0[i][j], gj = static_cast<double>(t.g[i][j]) + wd * w0;
        const double bj = momentum ? mu * static_cast<double>(t.s10[i][j]) + gj : t.s10[i][j];
        const double wj = w0 - lr * (!momentum ? gj : nesterov ? gj + mu * bj : bj);
        ASSERT_NEAR(buf[j], bj, 4 * test::kEps * (std::fabs(bj) + 1)) << mode << " " << i;
        ASSERT_NEAR(w[j], wj, 8 * test::kEps * (std::fabs(wj) + 1)) << mode << " " << i;
      }
    }
  }
  // Refused before anything runs: momentum without buffers, Adam without its second moments,
  // a launch without coefficients or with the other rule's.
  cuda_kernels::UpdateTable bare = upload(false, false);
  EXPECT_THROW(cuda_kernels::multi_sgd_update(bare), Error);
  cuda_kernels::set_coefficients(bare, SgdCoefficients{lr, wd, mu, mu, false});
  EXPECT_THROW(cuda_kernels::multi_sgd_update(bare), Error);
  EXPECT_THROW(cuda_kernels::multi_adam_update(bare), Error);
  cuda_kernels::UpdateTable one_moment = upload(true, false);
  cuda_kernels::set_coefficients(one_moment, AdamCoefficients{});
  EXPECT_THROW(cuda_kernels::multi_adam_update(one_moment), Error);
  EXPECT_THROW(cuda_kernels::multi_sgd_update(one_moment), Error);
  EXPECT_THROW(cuda_kernels::set_coefficients(one_moment, SgdCoefficients{}), Error);

  const AdamCoefficients c{0.9f, 0.1f, 0.999f, 0.001f, 1e-4f, 0.01f, 1.2f, 1e-8f};
  cuda_kernels::UpdateTable both = upload(true, true);
  cuda_kernels::set_coefficients(both, c);
  cuda_kernels::multi_adam_update(both);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const std::vector<float> w = to_host(t.w[i]), m = to_host(t.s1[i]), v = to_host(t.s2[i]);
    for (std::size_t j = 0; j < w.size(); ++j) {
      const double w0 = t.w0[i][j];
      const double gj = static_cast<double>(t.g[i][j]) + static_cast<double>(c.weight_decay) * w0;
      const double mj = c.beta1 * static_cast<double>(t.s10[i][j]) + c.one_minus_beta1 * gj;
      const double vj = c.beta2 * static_cast<double>(t.s20[i][j]) + c.one_minus_beta2 * gj * gj;
      const double wj = w0 - c.step_size * mj / (std::sqrt(vj) * c.inv_sqrt_bc2 + c.eps);
      ASSERT_NEAR(m[j], mj, 4 * test::kEps * (std::fabs(mj) + 1)) << i;
      ASSERT_NEAR(v[j], vj, 4 * test::kEps * (std::fabs(vj) + 1)) << i;
      ASSERT_NEAR(w[j], wj, 16 * test::kEps * (std::fabs(wj) + 1)) << i;
    }
  }
}

// The update a captured training step holds: its coefficients read from the table's device slot,
// set between launches of one graph. Two steps with different coefficients each equal, bit for
// bit, the same launch queued eagerly on a copy of the same tensors (SGD's first step with keep 0,
// the second with keep = momentum; Adam's two steps with their own bias corrections).
TEST(CudaKernels, CapturedUpdatesReadEachStepsCoefficientsFromTheDevice) {
  SKIP_WITHOUT_DEVICE();
  const std::vector<int64_t> sizes = {kUpdateChunk + 5, 3, 0, 700};
  struct Copy {
    std::vector<cuda::Buffer> w, g, s1, s2;
    cuda_kernels::UpdateTable table;
  };
  const auto make = [&] {
    Copy c;
    std::vector<UpdateTensor> rows;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      c.w.push_back(to_device(test::random_vector(sizes[i], 100 + i)));
      c.g.push_back(to_device(test::random_vector(sizes[i], 120 + i)));
      // State that is not zero, so that SGD's keep (0, then momentum) changes the result.
      c.s1.push_back(to_device(test::random_vector(sizes[i], 140 + i)));
      c.s2.push_back(to_device(test::random_vector(sizes[i], 160 + i, 0.0f, 1.0f)));
      rows.push_back(
          {c.w.back().data(), c.g.back().data(), c.s1.back().data(), c.s2.back().data(), sizes[i]});
    }
    c.table = cuda_kernels::update_table(rows);
    return c;
  };
  const auto expect_equal = [&](const Copy& a, const Copy& b, const std::string& what) {
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      EXPECT_EQ(to_host(a.w[i]), to_host(b.w[i])) << what << " tensor " << i;
      EXPECT_EQ(to_host(a.s1[i]), to_host(b.s1[i])) << what << " tensor " << i;
      EXPECT_EQ(to_host(a.s2[i]), to_host(b.s2[i])) << what << " tensor " << i;
    }
  };
  // Two steps of one rule: the graphed copy's update captured once (after its first coefficients
  // were set, as the trainer does), the eager copy's queued at each step; equal after each step.
  const auto two_steps = [&](const std::string& rule, const auto& steps, const auto& update) {
    Copy graphed = make(), eager = make();
    cuda_kernels::set_coefficients(graphed.table, steps[0]);
    cuda::CapturedWork step;
    step.capture([&] { update(graphed.table); });
    for (std::size_t k = 0; k < steps.size(); ++k) {
      cuda_kernels::set_coefficients(graphed.table, steps[k]);
      step.launch();
      cuda_kernels::set_coefficients(eager.table, steps[k]);
      update(eager.table);
      cuda::synchronize();
      expect_equal(graphed, eager, fmt::format("{} step {}", rule, k + 1));
    }
  };
  two_steps("sgd",
            std::vector<SgdCoefficients>{{0.1f, 5e-4f, 0.9f, 0.0f, true},
                                         {0.05f, 5e-4f, 0.9f, 0.9f, true}},
            [](const cuda_kernels::UpdateTable& t) { cuda_kernels::multi_sgd_update(t); });
  two_steps(
      "adam",
      std::vector<AdamCoefficients>{{0.9f, 0.1f, 0.999f, 0.001f, 1e-4f, 0.01f, 31.6f, 1e-8f},
                                    {0.9f, 0.1f, 0.999f, 0.001f, 1e-4f, 0.0053f, 22.4f, 1e-8f}},
      [](const cuda_kernels::UpdateTable& t) { cuda_kernels::multi_adam_update(t); });
  // Setting them inside a capture is refused (a synchronous copy would break the capture), and
  // the stream is usable after.
  Copy inside = make();
  cuda::CapturedWork refused;
  EXPECT_THROW(refused.capture([&] {
    cuda_kernels::set_coefficients(inside.table, SgdCoefficients{0.1f, 0.0f, 0.0f, 0.0f, false});
  }),
               Error);
  EXPECT_FALSE(refused.captured());
  cuda_kernels::set_coefficients(inside.table, SgdCoefficients{0.1f, 0.0f, 0.0f, 0.0f, false});
  cuda_kernels::multi_sgd_update(inside.table);
  cuda::synchronize();
}

}  // namespace
}  // namespace nnperf
