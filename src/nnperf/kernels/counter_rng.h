// A counter-based uniform draw for the GPU's dropout masks: draw i of seed is splitmix64's i-th
// output for that seed (state seed + (i + 1) * 0x9E3779B97F4A7C15 through its finaliser), its top
// 24 bits as a float in [0, 1). Every element draws independently of the others, so a kernel
// computes each mask entry in its own thread; the same function compiles for the host (nvcc or
// the C++ compiler), so tests recompute the GPU's masks exactly.
#pragma once
#include <cstdint>

#include "nnperf/kernels/host_device.h"

namespace nnperf {

NNPERF_HOST_DEVICE inline float counter_uniform(uint64_t seed, uint64_t i) {
  uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
}

// Inverted dropout's mask entry: 1 / keep with probability keep (draw < keep), else 0.
NNPERF_HOST_DEVICE inline float dropout_mask_entry(uint64_t seed, uint64_t i, float keep) {
  return counter_uniform(seed, i) < keep ? 1.0f / keep : 0.0f;
}

}  // namespace nnperf
