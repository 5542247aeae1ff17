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
  // Creates `<logdir>/<file_name>` (refused when it exists) with its file_version event stamped
  // `opened`: a file written before, rebuilt byte for byte when its scalars are added again with
  // the wall times they had.
  TensorBoardWriter(const std::filesystem::path& logdir, const std::string& file_name,
                    double opened);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;
  // The event stamped now, or at `wall_time` (unix seconds).
  void add_scalar(const std::string& tag, double value, int64_t step);
  void add_scalar(const std::string& tag, double value, int64_t step, double wall_time);
  void flush();
  const std::filesystem::path& path() const { return path_; }
  double opened() const { return opened_; }  // the file_version event's wall time
  static double now();                       // unix seconds, as the events are stamped

 private:
  void write_version_event();
  void write_record(const std::string& payload);
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  double opened_ = 0;
};

// CRC-32C (Castagnoli), as TFRecord uses: SSE4.2 instruction when the CPU has it, else a table.
uint32_t crc32c(const void* data, std::size_t n);
uint32_t crc32c_portable(const void* data, std::size_t n);  // the table path, for tests
// TFRecord's masking of stored CRCs: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t crc32c_masked(uint32_t crc);

}  // namespace nnperf
