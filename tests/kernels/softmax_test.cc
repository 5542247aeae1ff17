// Softmax cross-entropy: loss, gradient and correct count against a float64 reference (with and
// without label smoothing), the gradient against finite differences of the float64 loss, extreme
// logits staying finite, aliasing; softmax_rows against the reference.
#include "nnperf/kernels/softmax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "test_util.h"

namespace nnperf {
namespace {

// -sum_c target_c * log softmax(x)_c for one row, in double (PyTorch's label smoothing).
double row_loss_ref(const float* x, int32_t label, int64_t n, double s) {
  double max = x[0];
  for (int64_t c = 1; c < n; ++c) max = std::max(max, static_cast<double>(x[c]));
  double sum = 0;
  for (int64_t c = 0; c < n; ++c) sum += std::exp(x[c] - max);
  const double lse = max + std::log(sum);
  double loss = 0;
  for (int64_t c = 0; c < n; ++c) {
    const double target = s / n + (c == label ? 1.0 - s : 0.0);
    loss -= target * (x[c] - lse);
  }
  return loss;
}

std::vector<int32_t> random_labels(int64_t mb, int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> labels(static_cast<size_t>(mb));
  for (auto& l : labels) l = static_cast<int32_t>(rng.below(static_cast<uint64_t>(n)));
  return labels;
}

struct Case {
  int64_t mb, n;
  float smoothing;
};

class SoftmaxCrossEntropy : public ::testing::TestWithParam<Case> {};

TEST_P(SoftmaxCrossEntropy, MatchesFloat64Reference) {
  const auto [mb, n, s] = GetParam();
  const std::vector<float> logits = test::random_vector(mb * n, 100 + n, -5.0f, 5.0f);
  const std::vector<int32_t> labels = random_labels(mb, n, 200 + n);
  std::vector<float> grad(logits.size());
  const float scale = 1.0f / static_cast<float>(mb);
  const LossResult r =
      softmax_cross_entropy(logits.data(), labels.data(), mb, n, grad.data(), scale, s);
  double loss_ref = 0;
  int64_t correct_ref = 0;
  for (int64_t i = 0; i < mb; ++i) {
    const float* x = logits.data() + i * n;
    loss_ref += row_loss_ref(x, labels[i], n, s);
    int64_t arg = 0;
    for (int64_t c = 1; c < n; ++c) arg = x[c] > x[arg] ? c : arg;
    correct_ref += arg == labels[i];
    // Gradient reference: (softmax - target) * scale.
    double max = x[0], sum = 0;
    for (int64_t c = 1; c < n; ++c) max = std::max(max, static_cast<double>(x[c]));
    for (int64_t c = 0; c < n; ++c) sum += std::exp(x[c] - max);
    for (int64_t c = 0; c < n; ++c) {
      const double target = s / n + (c == labels[i] ? 1.0 - s : 0.0);
      const double g = (std::exp(x[c] - max) / sum - target) * scale;
      ASSERT_NEAR(grad[i * n + c], g, 4 * test::kEps * (std::fabs(g) + scale))
          << "row " << i << " class " << c;
    }
  }
  // The loss is accumulated in double from float exponentials: error ~ a few eps per row.
  EXPECT_NEAR(r.loss_sum, loss_ref, 8 * test::kEps * (std::fabs(loss_ref) + mb));
  EXPECT_EQ(r.correct, correct_ref);
  EXPECT_GT(loss_ref, 0.0);
}

TEST_P(SoftmaxCrossEntropy, GradientMatchesFiniteDifferences) {
  // Plain variables, not a structured binding: the lambda below captures them (clang 14 cannot
  // capture a binding).
  const int64_t mb = GetParam().mb, n = GetParam().n;
  const float s = GetParam().smoothing;
  const std::vector<float> logits = test::random_vector(mb * n, 300 + n, -3.0f, 3.0f);
  const std::vector<int32_t> labels = random_labels(mb, n, 400 + n);
  std::vector<float> grad(logits.size());
  softmax_cross_entropy(logits.data(), labels.data(), mb, n, grad.data(), 1.0f, s);
  // Finite differences of the float64 loss, on a few entries (the function is smooth).
  for (int64_t idx : {int64_t{0}, mb * n / 2, mb * n - 1}) {
    const int64_t row = idx / n;
    std::vector<float> x(logits.begin() + row * n, logits.begin() + (row + 1) * n);
    const int64_t c = idx % n;
    // Perturb in double: evaluate the float64 loss on a double copy.
    auto loss_at = [&](double delta) {
      std::vector<double> xd(x.begin(), x.end());
      xd[c] += delta;
      double max = xd[0], sum = 0, loss = 0;
      for (double v : xd) max = std::max(max, v);
      for (double v : xd) sum += std::exp(v - max);
      const double lse = max + std::log(sum);
      for (int64_t k = 0; k < n; ++k) {
        loss -= (s / n + (k == labels[row] ? 1.0 - s : 0.0)) * (xd[k] - lse);
      }
      return loss;
    };
    const double h = 1e-5;
    const double fd = (loss_at(h) - loss_at(-h)) / (2 * h);
    EXPECT_NEAR(grad[idx], fd, 1e-6) << "entry " << idx;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, SoftmaxCrossEntropy,
                         ::testing::Values(Case{1, 2, 0.0f}, Case{7, 10, 0.0f}, Case{64, 10, 0.0f},
                                           Case{5, 1000, 0.0f}, Case{13, 17, 0.1f},
                                           Case{3, 1000, 0.2f}));

TEST(SoftmaxCrossEntropyEdge, ExtremeLogitsStayFinite) {
  // +-1000 would overflow exp without the max shift; the right class far below the others gives
  // a loss of ~2000, not inf.
  const int64_t n = 4;
  const float logits[] = {1000.0f,  -1000.0f, 0.0f, 999.0f,  // row 0, label 0 (correct)
                          -1000.0f, 1000.0f,  0.0f, -5.0f};  // row 1, label 0 (wrong by 2000)
  const int32_t labels[] = {0, 0};
  float grad[8];
  for (float s : {0.0f, 0.1f}) {
    const LossResult r = softmax_cross_entropy(logits, labels, 2, n, grad, 0.5f, s);
    EXPECT_TRUE(std::isfinite(r.loss_sum));
    for (float g : grad) EXPECT_TRUE(std::isfinite(g));
    EXPECT_EQ(r.correct, 1);
    const double ref = row_loss_ref(logits, 0, n, s) + row_loss_ref(logits + n, 0, n, s);
    EXPECT_NEAR(r.loss_sum, ref, 1e-9 * ref);
    if (s == 0.0f) {
      EXPECT_NEAR(r.loss_sum, std::log1p(std::exp(-1.0)) + 2000.0, 1e-3);
      EXPECT_NEAR(grad[4], -0.5f, 1e-6);  // softmax = 0 at the label: (0 - 1) * 0.5
      EXPECT_NEAR(grad[5], 0.5f, 1e-6);
    }
  }
}

TEST(SoftmaxCrossEntropyEdge, LabelSmoothingOfUniformLogitsIsLogN) {
  // Uniform logits: softmax = 1/n, so every target distribution gives loss log n per row.
  const int64_t n = 10;
  std::vector<float> logits(3 * n, 0.25f);
  const int32_t labels[] = {1, 5, 9};
  const LossResult r = softmax_cross_entropy(logits.data(), labels, 3, n, nullptr, 1.0f, 0.3f);
  EXPECT_NEAR(r.loss_sum, 3 * std::log(10.0), 1e-6);
}

TEST(SoftmaxCrossEntropyEdge, GradientMayOverwriteLogitsAndNullSkipsIt) {
  const int64_t mb = 6, n = 7;
  std::vector<float> logits = test::random_vector(mb * n, 5, -4.0f, 4.0f);
  const std::vector<int32_t> labels = random_labels(mb, n, 6);
  std::vector<float> grad(logits.size());
  const LossResult a =
      softmax_cross_entropy(logits.data(), labels.data(), mb, n, grad.data(), 1.0f / mb, 0.1f);
  const LossResult b = softmax_cross_entropy(logits.data(), labels.data(), mb, n, nullptr, 1.0f);
  EXPECT_EQ(a.correct, b.correct);
  const LossResult c =
      softmax_cross_entropy(logits.data(), labels.data(), mb, n, logits.data(), 1.0f / mb, 0.1f);
  EXPECT_DOUBLE_EQ(a.loss_sum, c.loss_sum);
  for (size_t i = 0; i < grad.size(); ++i) EXPECT_EQ(logits[i], grad[i]) << i;
}

TEST(SoftmaxRows, MatchesReferenceAndSumsToOne) {
  for (auto [mb, n] : {std::pair<int64_t, int64_t>{1, 1}, {5, 10}, {3, 1001}}) {
    std::vector<float> x = test::random_vector(mb * n, 9 + n, -20.0f, 20.0f);
    x[0] = 1000.0f;  // an extreme logit must not overflow
    std::vector<float> y(x.size());
    softmax_rows(x.data(), y.data(), mb, n);
    for (int64_t r = 0; r < mb; ++r) {
      double max = x[r * n], sum = 0, total = 0;
      for (int64_t c = 0; c < n; ++c) max = std::max(max, static_cast<double>(x[r * n + c]));
      for (int64_t c = 0; c < n; ++c) sum += std::exp(x[r * n + c] - max);
      for (int64_t c = 0; c < n; ++c) {
        const double shifted = x[r * n + c] - max;
        const double ref = std::exp(shifted) / sum;
        // x - max rounded to float costs |x - max| * eps relative after exp.
        ASSERT_NEAR(y[r * n + c], ref, (4 + std::fabs(shifted)) * test::kEps * ref + 1e-37)
            << r << "," << c;
        total += y[r * n + c];
      }
      EXPECT_NEAR(total, 1.0, 1e-5);
    }
  }
}

}  // namespace
}  // namespace nnperf
