// TensorBoard event files written natively: TFRecord framing (length, masked CRC32C) around
// hand-encoded tensorflow.Event protobufs with scalar summaries. Readable by TensorBoard itself.
#pragma once
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

namespace nnperf {

class TensorBoardWriter {
 public:
  // Creates `<logdir>/events.out.tfevents.<unix time>.<hostname>` (folder created if needed).
  explicit TensorBoardWriter(const std::filesystem::path& logdir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;
  void add_scalar(const std::string& tag, double value, int64_t step);
  void flush();
  const std::filesystem::path& path() const { return path_; }

 private:
  void write_record(const std::string& payload);
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
};

// CRC-32C (Castagnoli), as TFRecord uses: SSE4.2 instruction when the CPU has it, else a table.
uint32_t crc32c(const void* data, std::size_t n);
uint32_t crc32c_portable(const void* data, std::size_t n);  // the table path, for tests
// TFRecord's masking of stored CRCs: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t crc32c_masked(uint32_t crc);

}  // namespace nnperf
