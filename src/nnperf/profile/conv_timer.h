// Timing of one convolution algorithm on one problem, for Conv2d's "find" selection
// (PlanContext::time_conv = &time_conv_ms): nn/ sits below profile/ and reads no clocks, so the
// timer is handed down as a function pointer.
#pragma once
#include <limits>

#include "nnperf/kernels/conv/conv.h"
#include "nnperf/kernels/conv/conv_backward.h"

namespace nnperf {

// Median milliseconds of one run of `algo` on `p` with `threads`, on seeded random data in
// [-1, 1], with workspace and packed weights prepared beforehand (not timed) and one untimed
// warm-up run. Up to 5 timed runs: it stops after 3 once 0.3 s were spent, and takes a single
// one when the warm-up took over 1 s. A warm-up slower than `loser_above_ms` (a candidate that
// cannot win a "find") is returned at once as the time. with_weight_prep: each run transforms
// the weights first (pack_weights), as a training step must. Throws Error when `algo` cannot
// serve `p`.
double time_conv_ms(const ConvAlgorithm& algo, const ConvProblem& p, int threads,
                    double loser_above_ms = std::numeric_limits<double>::infinity(),
                    bool with_weight_prep = false);

// The same for one backward row (its pass's inputs: src or weights, and dY).
double time_conv_backward_ms(const ConvBackwardAlgorithm& algo, const ConvProblem& p, int threads,
                             double loser_above_ms = std::numeric_limits<double>::infinity());

}  // namespace nnperf
