// Workspace: one aligned scratch buffer that grows only at plan time. Kernels receive raw
// pointers into it and never allocate in their loops.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

#include "nnperf/core/memory.h"

namespace nnperf {

class Workspace {
 public:
  void reserve(std::size_t bytes) {
    if (bytes <= size_) return;
    bytes = (bytes + 63) / 64 * 64;
    check_allocation(static_cast<int64_t>(bytes), "a workspace");
    void* p = std::aligned_alloc(64, bytes);
    if (p == nullptr) throw std::bad_alloc();
    data_.reset(p);
    size_ = bytes;
  }
  void* data() const { return data_.get(); }
  std::size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> data_;
  std::size_t size_ = 0;
};

}  // namespace nnperf
