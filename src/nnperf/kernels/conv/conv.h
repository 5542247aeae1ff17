// 2-D convolution: the problem descriptor (benchdnn grammar) and the algorithm registry.
// Layouts: src  mb x ic x ih x iw (NCHW)
//          wei  oc x (ic/g) x kh x kw (OIHW, groups stacked along oc)
//          bias oc (optional)
//          dst  mb x oc x oh x ow
// oh = (ih + 2*ph - dh*(kh-1) - 1) / sh + 1 (likewise ow). Dilation is 1-based here: d1 = dense
// (benchdnn's own dh is 0-based; the issue fixes d1 as the default).
// FLOPs = 2 * mb * oc * oh * ow * (ic/g) * kh * kw (one multiply-add = 2 FLOPs).
// A new algorithm is one file in this folder plus one row in conv_registry.cc.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace nnperf {

class Workspace;  // core/workspace.h

struct ConvProblem {
  int64_t g = 1, mb = 1, ic = 0, ih = 0, iw = 0, oc = 0, kh = 0, kw = 0;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;

  int64_t oh() const { return (ih + 2 * ph - dh * (kh - 1) - 1) / sh + 1; }
  int64_t ow() const { return (iw + 2 * pw - dw * (kw - 1) - 1) / sw + 1; }
  int64_t icg() const { return ic / g; }  // input channels per group
  int64_t ocg() const { return oc / g; }  // output channels per group
  double flops() const;                   // 2 * MACs
  double macs() const;
  int64_t src_numel() const { return mb * ic * ih * iw; }
  int64_t wei_numel() const { return oc * icg() * kh * kw; }
  int64_t dst_numel() const { return mb * oc * oh() * ow(); }
  // benchdnn-style canonical string: "g1mb1ic64ih56iw56oc64kh3kw3sh1sw1ph1pw1dh1dw1", with the
  // defaults (g1, mb1, s1, p0, d1) and width terms equal to height terms left out:
  // "mb1ic64ih56oc64kh3ph1".
  std::string str() const;
  // Empty when the problem is well formed, else the reason (for messages).
  std::string invalid_reason() const;
};

// The largest value of any term (2^24 = 16777216): no real layer comes near it, and with every
// term below it no sum or product of two terms can overflow int64.
inline constexpr int64_t kConvMaxTerm = int64_t{1} << 24;

// Parses the benchdnn grammar: terms g, mb, ic, ih, iw, oc, kh, kw, sh, sw, ph, pw, dh, dw (plus
// oh, ow, checked against the output size they give), each a name followed by a non-negative
// integer, in any order; an optional leading name ending in '_' or ':' is ignored
// ("conv1:mb1ic3..."). Absent width terms equal the height terms; defaults g1 mb1
// s1 p0 d1. Each term is at most kConvMaxTerm, each tensor at most 1e12 elements. Throws
// UsageError (and nothing else) naming the descriptor and the problem for any text: empty, a
// repeated or unknown term, a missing number, a number too large (however many digits), trailing
// garbage, zero where at least 1 is needed, an inconsistent shape.
ConvProblem parse_conv_problem(std::string_view text);

// Bytes of the float32 input, weights and output of `p` (what any algorithm needs at least),
// overflow-checked: INT64_MAX when the figure does not fit int64 or `p` is malformed (a group or
// stride below 1, a negative size), so `check_memory(conv_problem_min_bytes(p), ...)` refuses it.
int64_t conv_problem_min_bytes(const ConvProblem& p);

struct ConvArgs {
  const ConvProblem* p = nullptr;
  const float* src = nullptr;
  const float* wei = nullptr;     // OIHW as above
  const float* packed = nullptr;  // the algorithm's pack_weights output, when it has one
  const float* bias = nullptr;    // may be null
  float* dst = nullptr;
  void* workspace = nullptr;  // >= workspace_bytes(p, threads), 64-byte aligned
  int threads = 1;
};

struct ConvAlgorithm {
  const char* name;         // "winograd"
  const char* description;  // one line for --list-algorithms
  // "" when the algorithm can serve the problem, else why not ("winograd: stride 2 not supported").
  std::string (*why_not)(const ConvProblem& p);
  std::size_t (*workspace_bytes)(const ConvProblem& p, int threads);
  // Weight transform done once at plan time (Winograd/FFT domains, packed panels). Null when the
  // algorithm uses the OIHW weights directly. `threads`: how many it may use (pack_parallel).
  std::size_t (*packed_weights_floats)(const ConvProblem& p);
  void (*pack_weights)(const ConvProblem& p, const float* wei, float* packed, int threads);
  void (*run)(const ConvArgs& args);
  // c_algo in |y - ref| <= c_algo * K * eps * sum|a*b| + eps * |ref|, K = icg*kh*kw.
  // 1 for exact-arithmetic methods; Winograd and FFT state their measured worst case.
  double tolerance_factor;
  // Rough cost in seconds on the machine model (core/machine_model.h), for `guess` and the order
  // in which `find` times candidates (lower is better).
  double (*cost)(const ConvProblem& p, int threads);
  // Nanoseconds of pack_weights per packed float on the core the costs were fitted on
  // (conv_internal.h's conv_fit); 0 without a weight transform. Training pays it every step.
  double pack_fitted_ns_per_float;
  // pack_weights splits its work between the threads it is given (else it runs on one).
  bool pack_parallel;
};

std::span<const ConvAlgorithm> conv_algorithms();
// By registry_key (core/name_registry.h: "Implicit-GEMM", "implicit gemm"); throws UsageError
// listing the valid names when unknown.
const ConvAlgorithm& find_conv(std::string_view name);
std::string conv_algorithm_names();

// Modelled seconds of one pack_weights of `algo` on `p` on `threads` threads of this machine (0
// when it has none): what a training step, whose weights change every step, pays on top of cost().
double conv_pack_cost(const ConvAlgorithm& algo, const ConvProblem& p, int threads);

// Prepares one run of `algo` on `p` (which it must serve): sizes `workspace`, transforms the
// weights into `packed` when the algorithm has a weight transform, and returns the arguments; the
// caller then calls algo.run(args) as often as it likes.
ConvArgs conv_prepare(const ConvAlgorithm& algo, const ConvProblem& p, const float* src,
                      const float* wei, const float* bias, float* dst, int threads,
                      Workspace& workspace, Workspace& packed);

// Runs one algorithm with freshly sized workspace and packed weights (tests, verify, bench).
void conv_run(const ConvAlgorithm& algo, const ConvProblem& p, const float* src, const float* wei,
              const float* bias, float* dst, int threads);

// Plain float64 reference; abs_sum (when non-null) receives per output sum |src*wei| (+|bias|).
void conv2d_reference(const ConvProblem& p, const float* src, const float* wei, const float* bias,
                      double* dst, double* abs_sum);

}  // namespace nnperf
