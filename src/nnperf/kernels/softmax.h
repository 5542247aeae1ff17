// Softmax + cross-entropy over rows of logits. Letters: mb (rows), n (classes).
// Numerically stable: max-subtraction and log-sum-exp, never log(0).
#pragma once
#include <cstdint>

namespace nnperf {

struct LossResult {
  // Sum over the mb rows of the cross-entropy -sum_c target_c * log softmax(logits)_c; without
  // label smoothing that is -log softmax(logits)[label] (torch.nn.CrossEntropyLoss, reduction sum).
  double loss_sum = 0.0;
  int64_t correct = 0;  // rows whose argmax (first maximum) equals the label
};

// When d_logits is non-null it receives (softmax(logits) - target) * grad_scale
// (grad_scale = 1/mb for a mean loss). label_smoothing in [0,1): target = (1-s)*onehot + s/n.
// Precondition (checked by callers, kernels never throw): every label is in [0, n).
// d_logits may alias logits.
LossResult softmax_cross_entropy(const float* logits, const int32_t* labels, int64_t mb, int64_t n,
                                 float* d_logits, float grad_scale, float label_smoothing = 0.0f);

// Row-wise softmax (for inference outputs).
void softmax_rows(const float* src, float* dst, int64_t mb, int64_t n);

}  // namespace nnperf
