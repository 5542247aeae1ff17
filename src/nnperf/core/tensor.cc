// Tensor storage: aligned allocation with std::aligned_alloc, rounded up to the alignment; large
// zeros() tensors are anonymous mappings (zero pages until written).
#include "nnperf/core/tensor.h"

#include <sys/mman.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "nnperf/core/error.h"
#include "nnperf/core/memory.h"

namespace nnperf {

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int64_t d : dims_) {
    const auto m = checked_mul(n, d);
    if (!m) fail("shape {}: more than 2^63 elements", str());
    n = *m;
  }
  return n;
}

std::string Shape::str() const { return fmt::format("[{}]", fmt::join(dims_, ", ")); }

void Tensor::Free::operator()(float* p) const {
  if (mapped_bytes > 0) {
    ::munmap(p, mapped_bytes);
  } else {
    std::free(p);
  }
}

namespace {
float* allocate_floats(int64_t n) {
  if (n <= 0) return nullptr;
  const auto b = checked_mul(n, static_cast<int64_t>(sizeof(float)));
  if (!b) fail("a tensor of {} floats: more bytes than a 64-bit size holds", n);
  check_allocation(*b, "a tensor");
  std::size_t bytes = static_cast<std::size_t>(*b);
  bytes = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  void* p = std::aligned_alloc(kTensorAlignment, bytes);
  if (p == nullptr) throw std::bad_alloc();
  return static_cast<float*>(p);
}
}  // namespace

Tensor::Tensor(Shape shape) : shape_(std::move(shape)) {
  for (int64_t d : shape_.dims()) NNPERF_CHECK(d >= 0, "negative dimension in shape {}", shape_.str());
  numel_ = shape_.numel();
  capacity_ = numel_;
  data_.reset(allocate_floats(numel_));
}

Tensor Tensor::zeros(Shape shape) {
  constexpr int64_t kMapAtBytes = int64_t{4} << 20;  // below this, malloc's pages are cheaper
  for (int64_t d : shape.dims()) NNPERF_CHECK(d >= 0, "negative dimension in shape {}", shape.str());
  const int64_t n = shape.numel();
  const auto bytes = checked_mul(n, static_cast<int64_t>(sizeof(float)));
  if (!bytes || *bytes < kMapAtBytes) {
    Tensor t(std::move(shape));
    t.zero();
    return t;
  }
  check_allocation(*bytes, "a tensor");
  void* p = ::mmap(nullptr, static_cast<std::size_t>(*bytes), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  Tensor t;
  t.shape_ = std::move(shape);
  t.numel_ = n;
  t.capacity_ = n;
  t.data_ = std::unique_ptr<float[], Free>(static_cast<float*>(p), Free{static_cast<std::size_t>(*bytes)});
  return t;
}

Tensor::Tensor(const Tensor& other) : Tensor(other.shape_) {
  if (numel_ > 0) std::memcpy(data(), other.data(), static_cast<std::size_t>(numel_) * sizeof(float));
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) {
    resize(other.shape_);
    if (numel_ > 0) std::memcpy(data(), other.data(), static_cast<std::size_t>(numel_) * sizeof(float));
  }
  return *this;
}

void Tensor::fill(float v) { std::fill_n(data(), numel_, v); }
void Tensor::zero() {
  if (numel_ > 0) std::memset(data(), 0, static_cast<std::size_t>(numel_) * sizeof(float));
}

void Tensor::reshape(Shape shape) {
  NNPERF_CHECK(shape.numel() == numel_, "cannot reshape {} to {}", shape_.str(), shape.str());
  shape_ = std::move(shape);
}

void Tensor::resize(Shape shape) {
  const int64_t n = shape.numel();
  if (n > capacity_) {
    data_.reset(allocate_floats(n));  // frees the old storage as it was allocated
    data_.get_deleter().mapped_bytes = 0;
    capacity_ = n;
  }
  shape_ = std::move(shape);
  numel_ = n;
}

}  // namespace nnperf
