// Deterministic random numbers: the same seed gives the same stream on every platform
// (std:: distributions are implementation-defined, so we derive floats ourselves).
#pragma once
#include <cstdint>
#include <span>

namespace nnperf {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0x9E3779B97F4A7C15ull) { reseed(seed); }
  void reseed(uint64_t seed);
  uint64_t next_u64();          // xoshiro256**
  double uniform();             // [0, 1)
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  double normal();              // standard normal (Box-Muller, cached pair)
  uint64_t below(uint64_t n);   // uniform integer in [0, n)
  void fill_uniform(std::span<float> dst, float lo, float hi);
  void fill_normal(std::span<float> dst, float mean, float stddev);

 private:
  uint64_t s_[4];
  double cached_normal_ = 0.0;
  bool has_cached_ = false;
};

}  // namespace nnperf
