// The per-SIMD-level entry points behind the activation table, for tests and benchmarks that
// compare paths. Production code uses activation_kernels(), which dispatches on active_simd().
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "nnperf/core/cpu.h"
#include "nnperf/kernels/activations_math.h"

namespace nnperf::detail {

template <class... Ops>
constexpr std::size_t op_count(OpList<Ops...>) {
  return sizeof...(Ops);
}
inline constexpr std::size_t kNumActivations = op_count(ActivationOps{});

struct ActivationPath {
  const char* name;  // the table's name ("GELU")
  void (*forward)(const float* src, float* dst, int64_t n);
  void (*backward)(const float* src, const float* dst, const float* d_dst, float* d_src, int64_t n);
};

// The kernels of one level, in activation_kernels() order. Empty when the level is not compiled
// in or this CPU cannot run it (calling an AVX2 path on a CPU without AVX2 would fault).
std::span<const ActivationPath> activation_paths(SimdLevel level);
// The same entry for one activation (case-sensitive table name); null when unavailable.
const ActivationPath* find_activation_path(SimdLevel level, std::string_view name);

// The AVX2 entry points, defined in activations_avx2.cc as constant data: that file exports no
// function, so no code compiled with -mavx2 can be shared with (and picked by the linker for)
// the portable path, even in a -O0 build where templates are not inlined. Use activation_paths,
// which checks the CPU first.
extern const std::array<ActivationPath, kNumActivations> kActivationPathsAvx2;

}  // namespace nnperf::detail
