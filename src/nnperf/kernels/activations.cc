// The activation table: float64 references, the portable path (activations_math.h on one float
// at a time, compiled for baseline x86-64; GCC may auto-vectorise some loops with SSE2), run-time
// dispatch to the AVX2 path (activations_avx2.cc) and name lookup. Rows are generated from
// detail::ActivationOps, so an activation is registered in exactly one place.
#include "nnperf/kernels/activations.h"

#include <fmt/format.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "nnperf/core/cpu.h"
#include "nnperf/core/error.h"
#include "nnperf/core/name_registry.h"
#include "nnperf/kernels/activations_internal.h"
#include "nnperf/kernels/activations_math.h"

namespace nnperf {
namespace detail {

// ---- float64 references -------------------------------------------------------------------
// Written to be accurate in double over the whole range (erfc rather than 1 + erf in the GELU
// tail, the two-sided sigmoid, 1/cosh^2 rather than 1 - tanh^2), so they can judge float kernels
// that are more careful than the textbook formulas.
namespace {
constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kInvSqrt2PiD = 0.39894228040143267794;

double sigmoid_ref(double x) {
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  const double e = std::exp(x);
  return e / (1.0 + e);
}
double sigmoid_derivative_ref(double x) {
  const double e = std::exp(-std::fabs(x));
  return e / ((1.0 + e) * (1.0 + e));
}
double sech2(double x) {
  const double c = std::cosh(x);
  return 1.0 / (c * c);
}
}  // namespace

double ReluOp::reference(double x) { return x > 0 ? x : 0.0; }
double ReluOp::reference_derivative(double x) { return x > 0 ? 1.0 : 0.0; }
double GeluOp::reference(double x) { return 0.5 * x * std::erfc(-x * kSqrtHalf); }
double GeluOp::reference_derivative(double x) {
  return 0.5 * std::erfc(-x * kSqrtHalf) + x * std::exp(-0.5 * x * x) * kInvSqrt2PiD;
}
double SigmoidOp::reference(double x) { return sigmoid_ref(x); }
double SigmoidOp::reference_derivative(double x) { return sigmoid_derivative_ref(x); }
double TanhOp::reference(double x) { return std::tanh(x); }
double TanhOp::reference_derivative(double x) { return sech2(x); }
double EluOp::reference(double x) { return x > 0 ? x : std::expm1(x); }
double EluOp::reference_derivative(double x) { return x > 0 ? 1.0 : std::exp(x); }
double LeakyReluOp::reference(double x) { return x > 0 ? x : 0.01 * x; }
double LeakyReluOp::reference_derivative(double x) { return x > 0 ? 1.0 : 0.01; }
double SiluOp::reference(double x) { return x * sigmoid_ref(x); }
double SiluOp::reference_derivative(double x) {
  const double s = sigmoid_ref(x);
  return s * (1.0 + x * sigmoid_ref(-x));
}
// PyTorch: softplus(x) = x for x > 20, log1p(exp(x)) otherwise.
double MishOp::reference(double x) {
  const double sp = x > 20 ? x : std::log1p(std::exp(x));
  return x * std::tanh(sp);
}
double MishOp::reference_derivative(double x) {
  const double sp = x > 20 ? x : std::log1p(std::exp(x));
  const double dsp = x > 20 ? 1.0 : sigmoid_ref(x);
  return std::tanh(sp) + x * dsp * sech2(sp);
}

// ---- portable path --------------------------------------------------------------------------
namespace {

struct Lane1 {
  float v;
  Lane1() = default;
  Lane1(float c) : v(c) {}  // NOLINT: implicit, as the math needs
};

inline uint32_t bits(float x) { return std::bit_cast<uint32_t>(x); }

inline Lane1 operator+(Lane1 a, Lane1 b) { return a.v + b.v; }
inline Lane1 operator-(Lane1 a, Lane1 b) { return a.v - b.v; }
inline Lane1 operator*(Lane1 a, Lane1 b) { return a.v * b.v; }
inline Lane1 operator/(Lane1 a, Lane1 b) { return a.v / b.v; }
// No FMA instruction in the baseline ISA (std::fma would be a slow library call): two roundings.
inline Lane1 fmadd(Lane1 a, Lane1 b, Lane1 c) { return a.v * b.v + c.v; }
inline Lane1 vabs(Lane1 a) { return std::bit_cast<float>(bits(a.v) & 0x7FFFFFFFu); }
inline Lane1 copysign_of(Lane1 mag, Lane1 sign) {
  return std::bit_cast<float>((bits(mag.v) & 0x7FFFFFFFu) | (bits(sign.v) & 0x80000000u));
}
// Masks are all-ones / all-zeros words and select is a bit blend, as in the SIMD paths: with
// `m ? a : b` GCC emits branches that mispredict on random signs (3x slower) and cannot
// vectorise the loop.
inline uint32_t lt(Lane1 a, Lane1 b) { return 0u - static_cast<uint32_t>(a.v < b.v); }
inline uint32_t gt(Lane1 a, Lane1 b) { return 0u - static_cast<uint32_t>(a.v > b.v); }
inline Lane1 select(uint32_t m, Lane1 a, Lane1 b) {
  return std::bit_cast<float>((bits(a.v) & m) | (bits(b.v) & ~m));
}
inline Lane1 vmax(Lane1 a, Lane1 b) { return select(gt(a, b), a, b); }
inline Lane1 vmin(Lane1 a, Lane1 b) { return select(lt(a, b), a, b); }
inline Lane1 pow2(Lane1 n) {
  // n is integral in [-126, 127], or NaN (then the caller's result is NaN anyway; casting NaN to
  // int would be undefined behaviour, hence the select first).
  const float safe = select(0u - static_cast<uint32_t>(n.v == n.v), n, 0.0f).v;
  return std::bit_cast<float>(static_cast<uint32_t>(static_cast<int32_t>(safe) + 127) << 23);
}
inline Lane1 truncate12(Lane1 a) { return std::bit_cast<float>(bits(a.v) & ~uint32_t{0xFFF}); }

template <class Op>
void forward_portable(const float* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = Op::forward(Lane1(src[i])).v;
}

template <class Op>
void backward_portable(const float* src, const float* dst, const float* d_dst, float* d_src,
                       int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const Lane1 y = Op::kUsesDst ? Lane1(dst[i]) : Lane1(0.0f);
    d_src[i] = Op::backward(Lane1(src[i]), y, Lane1(d_dst[i])).v;
  }
}

template <class... Ops>
constexpr std::array<ActivationPath, sizeof...(Ops)> make_portable_paths(OpList<Ops...>) {
  return {{{Ops::kName, &forward_portable<Ops>, &backward_portable<Ops>}...}};
}
constexpr auto kPortablePaths = make_portable_paths(ActivationOps{});

}  // namespace

std::span<const ActivationPath> activation_paths(SimdLevel level) {
  switch (level) {
    case SimdLevel::kScalar:
      return kPortablePaths;
    case SimdLevel::kAvx2:
      if (cpu_info().simd >= SimdLevel::kAvx2) return kActivationPathsAvx2;
      return {};
    case SimdLevel::kAvx512:
      return {};  // no AVX-512 variant yet: the AVX2 path serves
  }
  return {};
}

const ActivationPath* find_activation_path(SimdLevel level, std::string_view name) {
  for (const ActivationPath& p : activation_paths(level)) {
    if (name == p.name) return &p;
  }
  return nullptr;
}

// ---- the public table: rows dispatch to the best path for active_simd() ---------------------
namespace {

const ActivationPath* selected_paths() {
  static const ActivationPath* const paths =
      active_simd() >= SimdLevel::kAvx2 ? kActivationPathsAvx2.data() : kPortablePaths.data();
  return paths;
}

template <std::size_t I>
void forward_dispatch(const float* src, float* dst, int64_t n) {
  selected_paths()[I].forward(src, dst, n);
}

template <std::size_t I>
void backward_dispatch(const float* src, const float* dst, const float* d_dst, float* d_src,
                       int64_t n) {
  selected_paths()[I].backward(src, dst, d_dst, d_src, n);
}

template <std::size_t I, class Op>
constexpr ActivationKernel make_row() {
  return {Op::kName,
          Op::kFormula,
          &forward_dispatch<I>,
          &backward_dispatch<I>,
          &Op::reference,
          &Op::reference_derivative,
          Op::kFlops,
          Op::kTol.abs,
          Op::kTol.rel,
          Op::kTol.grad_abs,
          Op::kTol.grad_rel};
}

template <class... Ops, std::size_t... I>
constexpr std::array<ActivationKernel, sizeof...(Ops)> make_table(OpList<Ops...>,
                                                                  std::index_sequence<I...>) {
  return {{make_row<I, Ops>()...}};
}

template <class... Ops>
constexpr std::array<ActivationKernel, sizeof...(Ops)> make_table(OpList<Ops...> ops) {
  return make_table(ops, std::index_sequence_for<Ops...>{});
}

constexpr auto kTable = make_table(ActivationOps{});

constexpr RegistryAlias kAliases[] = {{"swish", "SiLU"}};
constexpr Registry<ActivationKernel> kRegistry{kTable, kAliases};

}  // namespace
}  // namespace detail

std::span<const ActivationKernel> activation_kernels() { return detail::kTable; }

std::string activation_names() { return detail::kRegistry.names(); }

const ActivationKernel& find_activation(std::string_view name) {
  if (const ActivationKernel* k = detail::kRegistry.find(name)) return *k;
  throw UsageError(fmt::format(
      "unknown activation '{}': expected one of {} (any case, with or without _ and -; also swish)",
      name, activation_names()));
}

}  // namespace nnperf
