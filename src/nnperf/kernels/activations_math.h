// The activation math, written once as templates over a lane type V and compiled per SIMD level:
// activations.cc instantiates it with a one-float wrapper (portable path), activations_avx2.cc
// with an 8-float __m256 wrapper. Each Op struct is one activation (one table row).
// V provides: V(float) broadcast, + - * /, and found by ADL: fmadd, vmin, vmax (x86 semantics:
// vmax(a, b) = a > b ? a : b, so a NaN in b propagates), vabs, copysign_of(mag, sign), lt/gt
// (masks), select(mask, a, b), pow2 (integral n in [-126, 127]) and truncate12 (clears the 12 low
// mantissa bits, so truncate12(a)^2 is exact). Rounding is this file's round_to_int.
// Internal to kernels/: include only from activations*.cc and the tests.
#pragma once
#include <cstdint>

namespace nnperf::detail {

template <class... Ops>
struct OpList {};

// ---- exp / expm1 -------------------------------------------------------------------------
// Cody-Waite reduction x = n*ln2 + r, |r| <= ln2/2, then e^r = 1 + r + r^2 * P(r).
// ln2 split so that n*kLn2Hi is exact for |n| < 2^15 (kLn2Hi has 9 significant bits).
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f;
inline constexpr float kLn2Lo = -2.12194440054690583e-4f;
// P(r) ~ (e^r - 1 - r) / r^2 on [-ln2/2, ln2/2]: Chebyshev fit (mpmath.chebyfit, degree 4); the
// fit's absolute error on r^2*P is 7.8e-9 (0.07 ulp of 1).
inline constexpr float kExpP0 = 0.5f;
inline constexpr float kExpP1 = 0.166665770256f;
inline constexpr float kExpP2 = 0.0416665546621f;
inline constexpr float kExpP3 = 0.00836317307451f;
inline constexpr float kExpP4 = 0.00139261761199f;
inline constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23: (x + m) - m rounds to an integer

template <class V>
inline V round_to_int(V x) {
  return (x + V(kRoundMagic)) - V(kRoundMagic);
}

// r + r^2 * P(r) = e^r - 1 for |r| <= ln2/2 (no cancellation: accurate relative to e^r - 1).
template <class V>
inline V expm1_reduced(V r) {
  V p = fmadd(V(kExpP4), r, V(kExpP3));
  p = fmadd(p, r, V(kExpP2));
  p = fmadd(p, r, V(kExpP1));
  p = fmadd(p, r, V(kExpP0));
  return fmadd(r * r, p, r);
}

// e^(x + tail), tail a small correction (|tail| << 1, carries the low part of -a^2/2 for GELU).
// Range: x <= 88 (callers need x <= 20); below -87.33 (where e^x leaves the normal range) the
// result is flushed to 0: absolute error < 1.2e-38, no denormal results (which cost microcode
// assists on Intel CPUs), and x * exp(...) stays ~0 even for x = -3e38.
inline constexpr float kExpMin = -87.33654f;  // ln(2^-126)

template <class V>
inline V exp_with_tail(V x, V tail) {
  const V xc = vmin(V(88.0f), vmax(V(kExpMin), x));  // x as the second operand: NaN propagates
  const V n = round_to_int(xc * V(kLog2e));          // in [-126, 127]
  V r = fmadd(n, V(-kLn2Hi), xc);
  r = fmadd(n, V(-kLn2Lo), r) + tail;
  const V y = (expm1_reduced(r) + V(1.0f)) * pow2(n);
  return select(lt(x, V(kExpMin)), V(0.0f), y);
}

template <class V>
inline V exp_approx(V x) {
  const V xc = vmin(V(88.0f), vmax(V(kExpMin), x));
  const V n = round_to_int(xc * V(kLog2e));
  V r = fmadd(n, V(-kLn2Hi), xc);
  r = fmadd(n, V(-kLn2Lo), r);
  const V y = (expm1_reduced(r) + V(1.0f)) * pow2(n);
  return select(lt(x, V(kExpMin)), V(0.0f), y);
}

// e^x - 1, accurate relative to the result near 0. x is clamped to [-30, 88]: below -17.4 the
// float result is -1 anyway; callers never need the overflow range.
template <class V>
inline V expm1_approx(V x) {
  x = vmin(V(88.0f), vmax(V(-30.0f), x));
  const V n = round_to_int(x * V(kLog2e));
  V r = fmadd(n, V(-kLn2Hi), x);
  r = fmadd(n, V(-kLn2Lo), r);
  const V s = pow2(n);  // n in [-44, 127]: a normal float
  // 2^n * (1 + em) - 1 = 2^n * em + (2^n - 1); exact e^r - 1 when n == 0.
  return fmadd(s, expm1_reduced(r), s - V(1.0f));
}

// Phi(-a) = 0.5 * erfc(a / sqrt(2)) for a >= 0, relative error ~1e-7 down to the denormal
// range, together with e^(-a^2/2) (the derivative needs it). Written as
//   Phi(-a) = e^(-a^2/2) * G(a),  G(a) = Phi(-a) * e^(a^2/2) (a Mills ratio: smooth, ~1/a),
// with G a rational minimax-style fit of degree (4, 5) on [0, 14] (iteratively reweighted least
// squares with mpmath, relative error 6.8e-9). a^2 is split exactly (truncate12) so the large
// exponent -a^2/2 keeps full precision (a plain float a*a would cost up to ~50 ulp at a = 10).
inline constexpr float kMillsP[5] = {0.500000003427f, 0.439344516252f, 0.184043736299f,
                                     0.0409143042465f, 0.00416024304292f};
inline constexpr float kMillsQ[6] = {
    1.0f, 1.67657407148f, 1.20579469227f, 0.471611562072f, 0.102563210597f, 0.0104280666029f};
inline constexpr float kGeluMaxA = 14.0f;  // e^(-a^2/2) flushes to 0 from a = 13.2 on

template <class V>
struct NormalTail {
  V tail;     // Phi(-a)
  V density;  // e^(-a^2/2)
};

template <class V>
inline NormalTail<V> normal_tail(V a) {
  const V z = truncate12(a);
  const V hi = z * z;              // exact
  const V lo = (a - z) * (a + z);  // a^2 - z^2, small, relative error ~eps
  const V e = exp_with_tail(V(-0.5f) * hi, V(-0.5f) * lo);
  V p = fmadd(V(kMillsP[4]), a, V(kMillsP[3]));
  p = fmadd(p, a, V(kMillsP[2]));
  p = fmadd(p, a, V(kMillsP[1]));
  p = fmadd(p, a, V(kMillsP[0]));
  V q = fmadd(V(kMillsQ[5]), a, V(kMillsQ[4]));
  q = fmadd(q, a, V(kMillsQ[3]));
  q = fmadd(q, a, V(kMillsQ[2]));
  q = fmadd(q, a, V(kMillsQ[1]));
  q = fmadd(q, a, V(kMillsQ[0]));
  return {e * (p / q), e};
}

inline constexpr float kInvSqrt2Pi = 0.398942280401432678f;
inline constexpr float kLeakySlope = 0.01f;     // torch.nn.LeakyReLU default negative_slope
inline constexpr float kMishThreshold = 20.0f;  // torch.nn.functional.softplus default threshold

// ---- the activations, in usra-survey's order (MLP.py) ----------------------------------------
// One struct per activation: name, formula, FLOPs per element (the convention of
// activations.h), stated tolerance, forward(x) -> f(x) and backward(x, y, dy) -> f'(x) * dy with
// y = f(x) (read only when kUsesDst). The float64 reference and its derivative are defined in
// activations.cc.

// |y - ref| <= abs + rel * |ref| for the forward; grad_abs * |dy| + grad_rel * |ref| for the
// backward. Each row states the worst case measured by `activations_bench --accuracy 13` (every
// 13th float in [-100, 100] plus +-1e3..3e38, both paths; eps = 2^-23) and allows ~25% more.
// kTinyAbs covers results below 1e-35: e^x is flushed to 0 below -87.34 (so x * e^x near there is
// off by up to 1.03e-36) and denormal results carry no relative accuracy.
struct Tolerance {
  double abs, rel, grad_abs, grad_rel;
};
inline constexpr double kEps32 = 0x1.0p-23;
inline constexpr double kTinyAbs = 1e-35;

struct ReluOp {
  static constexpr const char* kName = "ReLU";
  static constexpr const char* kFormula = "max(0, x)";
  static constexpr double kFlops = 1;
  // Measured worst case: exact.
  static constexpr Tolerance kTol = {0.0, 0.0, 0.0, 0.0};
  static constexpr bool kUsesDst = false;
  static double reference(double x);
  static double reference_derivative(double x);
  template <class V>
  static V forward(V x) {
    return vmax(V(0.0f), x);
  }
  template <class V>
  static V backward(V x, V /*y*/, V dy) {
    return select(gt(x, V(0.0f)), dy, V(0.0f));
  }
};

struct GeluOp {
  static constexpr const char* kName = "GELU";
  static constexpr const char* kFormula =
      "x * Phi(x), Phi the standard normal CDF (exact, erf form)";
  static constexpr double kFlops = 5;
  // Measured worst case: fwd 3.78 eps; bwd 1.52e-7 abs (cancellation near the minimum at x =
  // -0.75), 2.46 eps rel.
  static constexpr Tolerance kTol = {kTinyAbs, 4.5 * kEps32, 2.0e-7, 3.0 * kEps32};
  static constexpr bool kUsesDst = false;
  static double reference(double x);
  static double reference_derivative(double x);
  // x * Phi(x): Phi(x) = Phi(-|x|) for x < 0 (no cancellation in the tail), else 1 - Phi(-|x|).
  // The negative side multiplies by the clamped |x|: the tail is 0 from x = -13.2 on (flushed
  // e^(-a^2/2)) and 14 * 0 stays 0 where x * 0 would be NaN for x = -inf.
  template <class V>
  static V forward(V x) {
    const V a = vmin(V(kGeluMaxA), vabs(x));
    const NormalTail<V> t = normal_tail(a);
    const auto neg = lt(x, V(0.0f));
    return select(neg, V(0.0f) - a * t.tail, x * (V(1.0f) - t.tail));
  }
  // Phi(x) + x * phi(x); x * phi(x) uses the clamped |x| for the same reason (phi(x) = 0 there).
  template <class V>
  static V backward(V x, V /*y*/, V dy) {
    const V a = vmin(V(kGeluMaxA), vabs(x));
    const NormalTail<V> t = normal_tail(a);
    const V phi_x = copysign_of(a, x) * (t.density * V(kInvSqrt2Pi));
    const V cdf = select(lt(x, V(0.0f)), t.tail, V(1.0f) - t.tail);
    return (cdf + phi_x) * dy;
  }
};

// sigmoid(x) = 1 / (1 + e^-x) for x >= 0 and e^x / (1 + e^x) for x < 0: one exp(-|x|), never
// overflowing, accurate relative to the result in both tails. Also returns 1 - sigmoid(x).
template <class V>
struct SigmoidPair {
  V s;
  V one_minus_s;
};

template <class V>
inline SigmoidPair<V> sigmoid_pair(V x) {
  const V e = exp_approx(V(0.0f) - vabs(x));
  const V r = V(1.0f) / (V(1.0f) + e);
  const V er = e * r;
  const auto neg = lt(x, V(0.0f));
  return {select(neg, er, r), select(neg, r, er)};
}

struct SigmoidOp {
  static constexpr const char* kName = "Sigmoid";
  static constexpr const char* kFormula = "1 / (1 + exp(-x))";
  static constexpr double kFlops = 4;
  // Measured worst case: fwd 1.67 eps; bwd 8.9e-8 abs.
  static constexpr Tolerance kTol = {kTinyAbs, 2.5 * kEps32, 1.2e-7, 1.0 * kEps32};
  static constexpr bool kUsesDst = true;
  static double reference(double x);
  static double reference_derivative(double x);
  template <class V>
  static V forward(V x) {
    return sigmoid_pair(x).s;
  }
  // y * (1 - y) from the forward output, as PyTorch does: 3 FLOPs instead of an exp. For x > 9
  // the absolute error stays < 1e-7 (1 - y loses relative precision only where y'(x) < 1e-4).
  template <class V>
  static V backward(V /*x*/, V y, V dy) {
    return y * (V(1.0f) - y) * dy;
  }
};

struct TanhOp {
  static constexpr const char* kName = "Tanh";
  static constexpr const char* kFormula = "tanh(x)";
  static constexpr double kFlops = 1;
  // Measured worst case: fwd 1.49 eps; bwd 1.78e-7 abs, 1.90 eps rel.
  static constexpr Tolerance kTol = {kTinyAbs, 2.0 * kEps32, 2.4e-7, 2.5 * kEps32};
  static constexpr bool kUsesDst = true;
  static double reference(double x);
  static double reference_derivative(double x);
  // tanh(a) = em / (em + 2), em = e^(2a) - 1, a = |x|: no cancellation for any a. tanh rounds to
  // 1 in float beyond a = 9.01, so a is clamped at 10 (no inf / inf).
  template <class V>
  static V forward(V x) {
    const V a = vmin(V(10.0f), vabs(x));
    const V em = expm1_approx(a + a);
    return copysign_of(em / (em + V(2.0f)), x);
  }
  // (1 - y)(1 + y): 1 - y is exact for y in [0.5, 1], better than 1 - y*y without an FMA.
  template <class V>
  static V backward(V /*x*/, V y, V dy) {
    return (V(1.0f) - y) * (V(1.0f) + y) * dy;
  }
};

struct EluOp {
  static constexpr const char* kName = "ELU";
  static constexpr const char* kFormula = "x > 0 ? x : exp(x) - 1 (alpha = 1)";
  static constexpr double kFlops = 3;
  // Measured worst case: fwd 0.81 eps; bwd 5.4e-8 abs, 0.75 eps rel.
  static constexpr Tolerance kTol = {kTinyAbs, 1.25 * kEps32, 8.0e-8, 1.0 * kEps32};
  static constexpr bool kUsesDst = true;
  static double reference(double x);
  static double reference_derivative(double x);
  template <class V>
  static V forward(V x) {
    return select(gt(x, V(0.0f)), x, expm1_approx(x));
  }
  // f'(x) = e^x = y + 1 for x <= 0 (alpha = 1).
  template <class V>
  static V backward(V x, V y, V dy) {
    return select(gt(x, V(0.0f)), dy, (y + V(1.0f)) * dy);
  }
};

struct LeakyReluOp {
  static constexpr const char* kName = "LeakyReLU";
  static constexpr const char* kFormula = "x > 0 ? x : 0.01 x";
  static constexpr double kFlops = 2;
  // Measured worst case: fwd 0.68 eps (0.01f is not 0.01); bwd 0.19 eps at d_dst = 1, plus 0.5 eps
  // for the product with d_dst.
  static constexpr Tolerance kTol = {kTinyAbs, 1.0 * kEps32, 0.0, 1.0 * kEps32};
  static constexpr bool kUsesDst = false;
  static double reference(double x);
  static double reference_derivative(double x);
  template <class V>
  static V forward(V x) {
    return select(gt(x, V(0.0f)), x, x * V(kLeakySlope));
  }
  template <class V>
  static V backward(V x, V /*y*/, V dy) {
    return select(gt(x, V(0.0f)), dy, dy * V(kLeakySlope));
  }
};

struct SiluOp {
  static constexpr const char* kName = "SiLU";
  static constexpr const char* kFormula = "x * sigmoid(x)";
  static constexpr double kFlops = 5;
  // Measured worst case: fwd 2.04 eps; bwd 2.35e-7 abs, 1.87 eps rel.
  static constexpr Tolerance kTol = {kTinyAbs, 2.5 * kEps32, 3.0e-7, 2.5 * kEps32};
  static constexpr bool kUsesDst = false;
  static double reference(double x);
  static double reference_derivative(double x);
  template <class V>
  static V forward(V x) {
    return x * sigmoid_pair(x).s;
  }
  // s * (1 + x * (1 - s)), with 1 - s computed directly (no cancellation for x > 0).
  template <class V>
  static V backward(V x, V /*y*/, V dy) {
    const SigmoidPair<V> p = sigmoid_pair(x);
    return p.s * fmadd(x, p.one_minus_s, V(1.0f)) * dy;
  }
};

struct MishOp {
  static constexpr const char* kName = "Mish";
  static constexpr const char* kFormula = "x * tanh(softplus(x)), softplus threshold 20";
  static constexpr double kFlops = 4;
  // Measured worst case: fwd 2.52 eps; bwd 2.06e-7 abs, 1.98 eps rel.
  static constexpr Tolerance kTol = {kTinyAbs, 3.0 * kEps32, 3.0e-7, 2.5 * kEps32};
  static constexpr bool kUsesDst = false;
  static double reference(double x);
  static double reference_derivative(double x);
  // tanh(softplus(x)) = tanh(log(1 + e)) = n / (n + 2) with e = e^x, n = e * (e + 2): no log and
  // no tanh needed. For x > 20 PyTorch's softplus returns x and tanh(x) = 1 in float; clamping
  // x at 20 inside e gives the same 1 (n ~ 2e17, no overflow) and keeps NaN propagating.
  template <class V>
  static V forward(V x) {
    const V e = exp_approx(vmin(V(kMishThreshold), x));
    const V n = e * (e + V(2.0f));
    return x * (n / (n + V(2.0f)));
  }
  // f' = t + x * sigmoid(x) * (1 - t^2), t = n / (n + 2), 1 - t^2 = 4 (n + 1) / (n + 2)^2.
  // Past the threshold the second term is ~x * 4/n: x is clamped to 20 there (true f' = 1).
  template <class V>
  static V backward(V x, V /*y*/, V dy) {
    const V xc = vmin(V(kMishThreshold), x);
    const V e = exp_approx(xc);
    const V n = e * (e + V(2.0f));
    const V d = V(1.0f) / (n + V(2.0f));
    const V t = n * d;
    const V sig = e / (V(1.0f) + e);
    const V one_minus_t2 = V(4.0f) * (n + V(1.0f)) * d * d;
    return fmadd(xc * sig, one_minus_t2, t) * dy;
  }
};

// The registration: usra-survey's order (ReLU, GELU, Sigmoid, Tanh, ELU, LeakyReLU, SiLU, Mish).
// The public table and every SIMD path's entry points are generated from this list.
using ActivationOps = OpList<ReluOp, GeluOp, SigmoidOp, TanhOp, EluOp, LeakyReluOp, SiluOp, MishOp>;

}  // namespace nnperf::detail
