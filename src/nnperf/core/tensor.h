// Tensor: float32, row-major (NCHW for images), 64-byte aligned, owning its storage.
// Shapes are small vectors of int64 dimensions; a Tensor never reallocates behind a caller's back.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace nnperf {

inline constexpr std::size_t kTensorAlignment = 64;  // one cache line, one AVX-512 register

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t operator[](int i) const { return dims_[static_cast<std::size_t>(i < 0 ? i + rank() : i)]; }
  int64_t& operator[](int i) { return dims_[static_cast<std::size_t>(i < 0 ? i + rank() : i)]; }
  int64_t numel() const;
  const std::vector<int64_t>& dims() const { return dims_; }
  bool operator==(const Shape& o) const { return dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return dims_ != o.dims_; }
  std::string str() const;  // "[64, 784]"

 private:
  std::vector<int64_t> dims_;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Shape shape);  // uninitialised storage
  static Tensor zeros(Shape shape);

  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;

  const Shape& shape() const { return shape_; }
  int64_t numel() const { return numel_; }
  int64_t size(int i) const { return shape_[i]; }
  bool empty() const { return numel_ == 0; }
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  float& operator[](int64_t i) { return data_.get()[i]; }
  float operator[](int64_t i) const { return data_.get()[i]; }

  void fill(float v);
  void zero();
  // Reinterpret with a new shape of the same element count (no copy).
  void reshape(Shape shape);
  // Reuses storage when capacity allows; otherwise reallocates (plan time only).
  void resize(Shape shape);

 private:
  // Storage comes from std::aligned_alloc, or for a large zeros() tensor from an anonymous
  // mapping (mapped_bytes > 0): the kernel's zero pages, touched only when used, so building a
  // model whose weights are never written (complexity counts, sweep planning) costs no page faults.
  struct Free {
    Free() noexcept : mapped_bytes(0) {}  // a constructor, not a member initialiser (CWG 1397)
    explicit Free(std::size_t bytes) noexcept : mapped_bytes(bytes) {}
    std::size_t mapped_bytes;
    void operator()(float* p) const;
  };
  Shape shape_;
  int64_t numel_ = 0;
  int64_t capacity_ = 0;
  std::unique_ptr<float[], Free> data_;
};

}  // namespace nnperf
