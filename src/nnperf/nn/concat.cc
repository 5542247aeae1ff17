// Concat: per image, one memcpy per input into its channel range (each range is contiguous in
// NCHW), and the same copies in reverse for the gradient.
#include "nnperf/nn/concat.h"

#include <fmt/format.h>

#include <cstring>

#include "nnperf/core/error.h"

namespace nnperf {

std::string Concat::describe() const {
  return channels_.empty() ? "Concat" : fmt::format("Concat({} inputs)", channels_.size());
}

Shape Concat::plan(std::span<const Shape> src, const PlanContext& /*ctx*/) {
  if (src.empty()) throw Error("Concat: expected 1 or more inputs, got 0");
  const Shape& first = src[0];
  if (first.rank() < 2) {
    throw Error(fmt::format("Concat: inputs must be [mb, c, ...], input 0 is {}", first.str()));
  }
  channels_.clear();
  int64_t total = 0;
  for (std::size_t i = 0; i < src.size(); ++i) {
    const Shape& s = src[i];
    bool same = s.rank() == first.rank();
    for (int d = 0; same && d < s.rank(); ++d) same = d == 1 || s[d] == first[d];
    if (!same) {
      throw Error(fmt::format(
          "Concat: every input must match input 0 {} except in dim 1 (channels); input {} is {}",
          first.str(), i, s.str()));
    }
    channels_.push_back(s[1]);
    total += s[1];
  }
  mb_ = first[0];
  inner_ = 1;
  for (int d = 2; d < first.rank(); ++d) inner_ *= first[d];
  out_channels_ = total;
  Shape out = first;
  out[1] = total;
  return out;
}

void Concat::forward(std::span<const Tensor* const> src, Tensor& dst) {
  float* y = dst.data();
  for (int64_t n = 0; n < mb_; ++n) {
    int64_t offset = 0;
    for (std::size_t i = 0; i < channels_.size(); ++i) {
      const int64_t count = channels_[i] * inner_;
      if (count > 0) {
        std::memcpy(y + (n * out_channels_ + offset) * inner_, src[i]->data() + n * count,
                    static_cast<std::size_t>(count) * sizeof(float));
      }
      offset += channels_[i];
    }
  }
}

void Concat::backward(std::span<const Tensor* const> /*src*/, const Tensor& /*dst*/,
                      const Tensor& d_dst, std::span<Tensor* const> d_src) {
  const float* dy = d_dst.data();
  for (int64_t n = 0; n < mb_; ++n) {
    int64_t offset = 0;
    for (std::size_t i = 0; i < channels_.size(); ++i) {
      const int64_t count = channels_[i] * inner_;
      if (d_src[i] != nullptr && count > 0) {
        std::memcpy(d_src[i]->data() + n * count, dy + (n * out_channels_ + offset) * inner_,
                    static_cast<std::size_t>(count) * sizeof(float));
      }
      offset += channels_[i];
    }
  }
}

}  // namespace nnperf
