#include "nnperf/data/loader.h"

#include <fmt/format.h>

#include <algorithm>

#include "nnperf/core/error.h"
#include "nnperf/core/clock.h"

namespace nnperf {

BatchLoader::BatchLoader(const Dataset& data, LoaderOptions options)
    : data_(data), o_(std::move(options)) {
  const Shape& s = data_.images.shape();
  if (s.rank() != 4 || s[0] != data_.size()) {
    fail("{}: the loader needs N x C x H x W images, got {}", data_.name, s.str());
  }
  if (o_.batch_size < 1) fail("--batch-size {}: expected at least 1", o_.batch_size);
  if (o_.workers < 0 || o_.workers > 256) fail("--workers {}: expected 0..256", o_.workers);
  if (o_.prefetch_factor < 1 || o_.prefetch_factor > 64) {
    fail("--prefetch-factor {}: expected 1..64", o_.prefetch_factor);
  }
  if (o_.augment.pad < 0 || (o_.augment.enabled && o_.augment.pad > s[2])) {
    fail(
        "{}: its {}x{} images are smaller than the augmentation's random-crop padding of {} "
        "pixels; train them with --no-augment",
        data_.name, s[2], s[3], o_.augment.pad);
  }
  if (static_cast<int64_t>(o_.norm.mean.size()) != s[1] ||
      static_cast<int64_t>(o_.norm.std.size()) != s[1]) {
    fail("{}: normalisation has {} channels, the images {}", data_.name, o_.norm.mean.size(), s[1]);
  }
  for (std::size_t c = 0; c < o_.norm.mean.size(); ++c) {
    scale_.push_back(static_cast<float>(1.0 / o_.norm.std[c]));
    shift_.push_back(static_cast<float>(-o_.norm.mean[c] / o_.norm.std[c]));
  }
  batches_ = (data_.size() + o_.batch_size - 1) / o_.batch_size;
  if (o_.workers > 0) {
    slots_.resize(static_cast<std::size_t>(o_.workers * o_.prefetch_factor));
    for (int i = 0; i < o_.workers; ++i) threads_.emplace_back([this] { worker_loop(); });
  }
}

BatchLoader::~BatchLoader() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

int64_t BatchLoader::batches_per_epoch() const { return batches_; }

void BatchLoader::make_batch(int64_t batch, Tensor& x, std::vector<int32_t>& labels) const {
  const Shape& s = data_.images.shape();
  const int64_t first = batch * o_.batch_size;
  const int64_t mb = std::min(o_.batch_size, data_.size() - first);
  if (x.shape() != Shape{mb, s[1], s[2], s[3]}) x.resize(Shape{mb, s[1], s[2], s[3]});
  labels.resize(static_cast<std::size_t>(mb));
  const int64_t per = s[1] * s[2] * s[3];
  for (int64_t i = 0; i < mb; ++i) {
    const int64_t sample = order_[static_cast<std::size_t>(first + i)];
    const SampleDraw d = draw_sample(o_.augment, o_.seed, epoch_, first + i);
    transform_sample(data_.images.data() + sample * per, s[1], s[2], s[3], d, o_.augment.pad,
                     scale_.data(), shift_.data(), x.data() + i * per);
    labels[static_cast<std::size_t>(i)] = data_.labels[static_cast<std::size_t>(sample)];
  }
}

void BatchLoader::start_epoch(int64_t epoch) {
  {
    // No worker may take a batch or still read order_ while it changes: new takes are paused
    // first, then the fills under way are waited for.
    std::unique_lock lock(mu_);
    paused_ = true;
    ready_cv_.wait(lock, [&] { return in_flight_ == 0; });
    epoch_ = epoch;
    order_ = shuffled_order(data_.size(), o_.seed, epoch, o_.shuffle);
    consumed_ = 0;
    next_batch_ = 0;
    wait_ns_ = 0;
    for (Slot& s : slots_) {
      s.batch = -1;
      s.ready = false;
    }
    paused_ = false;
  }
  work_cv_.notify_all();
}

void BatchLoader::worker_loop() {
  const auto capacity = static_cast<int64_t>(slots_.size());
  std::unique_lock lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] {
      return stop_ || (!paused_ && epoch_ >= 0 && next_batch_ < batches_ &&
                       next_batch_ < consumed_ + capacity);
    });
    if (stop_) return;
    const int64_t b = next_batch_++;
    Slot& slot = slots_[static_cast<std::size_t>(b % capacity)];
    slot.batch = b;
    slot.ready = false;
    ++in_flight_;
    lock.unlock();
    make_batch(b, slot.x, slot.labels);  // the slot is this worker's until it is marked ready
    lock.lock();
    --in_flight_;
    slot.ready = true;
    ready_cv_.notify_all();
  }
}

bool BatchLoader::next(Tensor& x, std::vector<int32_t>& labels) {
  if (epoch_ < 0) start_epoch(0);
  if (consumed_ >= batches_) return false;
  const int64_t t0 = now_ns();
  if (threads_.empty()) {
    make_batch(consumed_++, x, labels);
    wait_ns_ += now_ns() - t0;
    return true;
  }
  const auto capacity = static_cast<int64_t>(slots_.size());
  {
    std::unique_lock lock(mu_);
    Slot& slot = slots_[static_cast<std::size_t>(consumed_ % capacity)];
    ready_cv_.wait(lock, [&] { return slot.ready && slot.batch == consumed_; });
    std::swap(x, slot.x);  // the slot keeps the caller's old buffer for a later batch
    std::swap(labels, slot.labels);
    slot.batch = -1;
    slot.ready = false;
    ++consumed_;
  }
  work_cv_.notify_all();
  wait_ns_ += now_ns() - t0;
  return true;
}

}  // namespace nnperf
