// Summary statistics of repeated measurements. std is the population standard deviation (as the
// ai3-8CuDNN profiler wrote it); median and p95 by linear interpolation between order statistics.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace nnperf {

struct Summary {
  int64_t count = 0;
  double mean = 0, std = 0, min = 0, max = 0, median = 0, p95 = 0;
};

Summary summarize(std::span<const double> values);
double quantile(std::vector<double> values, double q);  // q in [0,1]
double median(std::vector<double> values);

}  // namespace nnperf
