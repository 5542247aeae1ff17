// libFuzzer target: IDX content, raw or gzip, through parse_idx (the code behind read_idx).
// Properties checked beyond "no crash, no leak, no hang, no huge allocation":
//  - a parsed array is consistent: 1 to 4 dimensions, each >= 1, a known element type, and
//    exactly prod(dims) * element size bytes;
//  - every refusal is an nnperf::Error with a one-line message naming the input;
//  - differential: the same bytes gzip-compressed by the harness parse to the same array, or
//    fail too, so the fuzzer's mutations of raw IDX also exercise the inflate path (mutated gzip
//    seeds mostly exercise zlib's own checks).
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "nnperf/core/error.h"
#include "nnperf/data/dataset.h"

namespace {

constexpr std::size_t kMaxDifferentialBytes = 1 << 16;

std::string gzip(std::string_view raw) {
  z_stream zs{};
  FUZZ_CHECK(deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) ==
                 Z_OK,
             "deflateInit2");
  std::string out(deflateBound(&zs, raw.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  zs.avail_in = static_cast<uInt>(raw.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  FUZZ_CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END, "deflate");
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::optional<nnperf::IdxArray> parse(std::string_view bytes, const std::string& source) {
  try {
    return nnperf::parse_idx(bytes, source);
  } catch (const nnperf::Error& e) {
    nnperf::fuzz::check_error_message(e.what(), source);
    return std::nullopt;
  }
}

void check_consistent(const nnperf::IdxArray& a) {
  const int elem = nnperf::idx_element_size(a.type_code);
  FUZZ_CHECK(elem > 0, "type 0x%02x accepted", a.type_code);
  FUZZ_CHECK(!a.dims.empty() && a.dims.size() <= 4, "%zu dimensions accepted", a.dims.size());
  uint64_t n = static_cast<uint64_t>(elem);
  for (int64_t d : a.dims) {
    FUZZ_CHECK(d >= 1 && d <= 0xFFFFFFFF, "dimension %lld accepted", static_cast<long long>(d));
    n *= static_cast<uint64_t>(d);  // bounded by the payload actually present
  }
  FUZZ_CHECK(n == a.bytes.size(), "payload of %zu bytes for %llu claimed", a.bytes.size(),
             static_cast<unsigned long long>(n));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const auto direct = parse(bytes, "fuzz-input");
  if (direct) check_consistent(*direct);

  const bool is_gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  if (!is_gzip && size <= kMaxDifferentialBytes) {
    const auto via_gzip = parse(gzip(bytes), "fuzz-input.gz");
    FUZZ_CHECK(direct.has_value() == via_gzip.has_value(),
               "raw parse %s but the gzip of the same bytes %s", direct ? "succeeded" : "failed",
               via_gzip ? "succeeded" : "failed");
    if (direct) {
      FUZZ_CHECK(direct->type_code == via_gzip->type_code && direct->dims == via_gzip->dims &&
                     direct->bytes == via_gzip->bytes,
                 "raw and gzip parses differ");
    }
  }
  return 0;
}
