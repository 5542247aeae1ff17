// The multi-layer perceptron of usra-survey's MLP.py and srivas63_CMSE401:
// [Flatten] -> Linear -> act -> ... -> Linear.
// Node names: "flatten", "fc1", "act1", "fc2", "act2", ..., "fc<L+1>" (the logits).
#pragma once
#include <cstdint>
#include <vector>

#include "nnperf/kernels/activations.h"
#include "nnperf/nn/graph.h"
#include "nnperf/nn/linear.h"

namespace nnperf {

// in_features -> hidden[0] -> ... -> hidden.back() -> classes, `act` after every hidden Linear.
// With flatten, the graph accepts [mb, ...] inputs of in_features elements per sample (images
// [mb, 1, 28, 28]); without, exactly [mb, in_features].
Graph build_mlp(int64_t in_features, const std::vector<int64_t>& hidden, int64_t classes,
                const ActivationKernel& act, bool flatten = true,
                LinearInit init = LinearInit::kTorchDefault);

}  // namespace nnperf
