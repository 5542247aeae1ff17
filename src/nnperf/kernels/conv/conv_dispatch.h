// Algorithm selection for every pass of a convolution, beside the registries (conv.h,
// conv_backward.h): a named algorithm (strict: refused with the reason; otherwise the best guess
// with the reason kept), "guess" (the supported row with the lowest modelled cost) or "find"
// (every supported row timed once per problem, pass and thread count, the winner cached
// process-wide, like cudnnFind / torch.backends.cudnn.benchmark). Layers plan, call choose_*,
// then run what they were given. A forward algorithm name requested for a training layer applies
// to the forward pass; a backward pass takes it when its own registry has that name, else its
// best guess (not a fallback: the name was never one of that pass's).
#pragma once
#include <limits>
#include <span>
#include <string>
#include <string_view>

#include "nnperf/kernels/conv/conv.h"
#include "nnperf/kernels/conv/conv_backward.h"

namespace nnperf {

struct ConvSelection {
  std::string wanted = "guess";  // a name, "guess" or "find" (as registry_key matches names)
  bool strict = false;
  bool exhaustive = false;  // find: time every supported row (else skip rows modelled > 8x best)
  // Training: the weights change every step, so a forward row's weight transform (pack_weights)
  // runs every step too and counts in its cost and in its find time.
  bool training = false;
  // Milliseconds of one run (profile/conv_timer.h), the weight transform included when
  // `with_weight_prep`; null makes "find" an error.
  double (*time_forward)(const ConvAlgorithm& algo, const ConvProblem& p, int threads,
                         double loser_above_ms, bool with_weight_prep) = nullptr;
  double (*time_backward)(const ConvBackwardAlgorithm& algo, const ConvProblem& p, int threads,
                          double loser_above_ms) = nullptr;
};

struct ConvChoice {
  std::string requested;        // "guess", "find" or the row's name
  std::string fallback_reason;  // why a named row could not serve (non-strict), else ""
  double find_ms = -1.0;        // the winner's time when chosen by "find"
};

// A forward row's modelled cost under `s`: cost(), plus its weight transform when training.
double conv_forward_cost(const ConvAlgorithm& a, const ConvProblem& p, int threads,
                         const ConvSelection& s);

// `who` names the layer in errors. Throws Error when nothing serves p, when strict and the named
// row cannot, or when "find" has no timer; UsageError for an unknown name.
const ConvAlgorithm& choose_conv_forward(const ConvProblem& p, int threads, const ConvSelection& s,
                                         const std::string& who, ConvChoice& out);
const ConvBackwardAlgorithm& choose_conv_backward(ConvPass pass, const ConvProblem& p, int threads,
                                                  const ConvSelection& s, const std::string& who,
                                                  ConvChoice& out);

// The two choices every convolution-algorithm flag takes besides a table's names, CPU or cuDNN:
// "guess" and "find", in that spelling. find_conv_choice gives the one `name` is under the name
// rule (core/name_registry.h: "FIND", "Guess"), else null.
std::span<const char* const> conv_choices();
const char* find_conv_choice(std::string_view name);
// Whether `name` is find under the name rule.
bool is_conv_find(std::string_view name);
// `name` as the CPU tables spell it: guess, find or a forward row's name (conv_algorithms());
// UsageError naming `flag` and the choices otherwise.
std::string canonical_conv_algorithm(std::string_view flag, std::string_view name);

// The process-wide cache of "find" winners, keyed by (pass, problem with its exhaustive and
// training marks, threads).
void clear_conv_find_cache();
int conv_find_cache_size();

}  // namespace nnperf
