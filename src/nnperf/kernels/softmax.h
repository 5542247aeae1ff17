// Softmax + cross-entropy over rows of logits. Letters: mb (rows), n (classes).
// Numerically stable: max-subtraction and log-sum-exp, never log(0).
#pragma once
#include <cstdint>

namespace nnperf {

struct LossResult {
  double loss_sum = 0.0;  // sum over the mb rows of -log softmax(logits)[label]
  int64_t correct = 0;    // rows whose argmax equals the label
};

// When d_logits is non-null it receives (softmax(logits) - onehot(label)) * grad_scale
// (grad_scale = 1/mb for a mean loss). label_smoothing in [0,1): target = (1-s)*onehot + s/n.
LossResult softmax_cross_entropy(const float* logits, const int32_t* labels, int64_t mb, int64_t n,
                                 float* d_logits, float grad_scale, float label_smoothing = 0.0f);

// Row-wise softmax (for inference outputs).
void softmax_rows(const float* src, float* dst, int64_t mb, int64_t n);

}  // namespace nnperf
