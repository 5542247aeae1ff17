// Builders for torchvision's ImageNet classifiers, layer for layer: same modules, channel counts,
// strides, paddings, biases and parameter counts (BN running statistics are buffers), node names
// from torchvision's module paths ("features.0", "layer1.0.conv1", "inception3a.branch2.1.conv")
// and torch.fx-style names for functional ops ("layer1.0.relu_1", "layer1.0.add", "flatten").
// Eval-mode structure: no GoogLeNet aux heads, transform_input=False. Any input size at least
// the model's minimum works (the adaptive pools fix the classifier's input).
#pragma once
#include "nnperf/models/cnn_blocks.h"
#include "nnperf/nn/graph.h"

namespace nnperf {

Graph build_alexnet(const CnnOptions& o);
Graph build_vgg16(const CnnOptions& o);
// depth 18 / 34 (BasicBlock) or 50 / 101 / 152 (Bottleneck, stride on the 3x3 conv: "v1.5").
Graph build_resnet(int depth, const CnnOptions& o);
Graph build_googlenet(const CnnOptions& o);
Graph build_densenet121(const CnnOptions& o);
Graph build_mobilenet_v2(const CnnOptions& o);

}  // namespace nnperf
