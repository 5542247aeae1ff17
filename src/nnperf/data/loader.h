// BatchLoader: training batches made ahead of the training step. Each batch is gathered from a
// Dataset in the epoch's order (shuffled_order: a function of (seed, epoch)), every sample
// cropped/flipped and normalised (data/transform.h), by `workers` threads that keep up to
// workers x prefetch_factor batches ready (torch DataLoader's num_workers / prefetch_factor); with
// 0 workers the step's own thread makes each batch when it is asked for. Batches come out in
// order and are identical for any number of workers. The time next() spends waiting (or, with 0
// workers, making the batch) is counted, so a run can say how long the step waited for data.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "nnperf/core/tensor.h"
#include "nnperf/data/dataset.h"
#include "nnperf/data/transform.h"

namespace nnperf {

struct LoaderOptions {
  int64_t batch_size = 128;
  bool shuffle = true;
  uint64_t seed = 42;  // shuffling and augmentation
  AugmentOptions augment;
  ChannelNorm norm;  // one entry per channel of the data
  int workers = 0;
  int prefetch_factor = 2;  // batches made ahead per worker
};

class BatchLoader {
 public:
  // The Dataset must be N x C x H x W and outlive the loader. Throws nnperf::Error on a bad
  // option (naming it) or a norm of the wrong channel count.
  BatchLoader(const Dataset& data, LoaderOptions options);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // Starts epoch `epoch` (0-based) from its first batch; workers start making batches at once.
  void start_epoch(int64_t epoch);
  // The next batch of the epoch into x (mb x C x H x W) and labels; false at the epoch's end.
  bool next(Tensor& x, std::vector<int32_t>& labels);
  int64_t batches_per_epoch() const;
  // Nanoseconds next() spent waiting for (or making) batches since start_epoch.
  int64_t wait_ns() const { return wait_ns_; }

 private:
  struct Slot {
    Tensor x;
    std::vector<int32_t> labels;
    int64_t batch = -1;  // the batch it holds, -1 when free
    bool ready = false;
  };
  void make_batch(int64_t batch, Tensor& x, std::vector<int32_t>& labels) const;
  void worker_loop();

  const Dataset& data_;
  LoaderOptions o_;
  std::vector<float> scale_, shift_;
  std::vector<int64_t> order_;
  int64_t epoch_ = -1;
  int64_t batches_ = 0;
  int64_t consumed_ = 0;  // batches handed out this epoch
  int64_t wait_ns_ = 0;

  // Workers only.
  std::vector<Slot> slots_;
  int64_t next_batch_ = 0;  // the next batch a worker takes
  int in_flight_ = 0;
  bool stop_ = false;
  bool paused_ = false;  // start_epoch is changing the order: workers take nothing
  std::mutex mu_;
  std::condition_variable work_cv_, ready_cv_;
  std::vector<std::thread> threads_;
};

}  // namespace nnperf
