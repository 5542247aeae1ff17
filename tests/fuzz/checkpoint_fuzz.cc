// libFuzzer target: nnperf checkpoint bytes through parse_checkpoint (the code behind
// read_checkpoint and --resume). Almost every mutation breaks the CRC-32, so each input is also
// parsed "resealed": its length field and trailing CRC rewritten to match, which lets the
// mutations reach the metadata, table and data checks. Properties beyond "no crash, no leak, no
// hang, no huge allocation":
//  - every refusal is an nnperf::Error with a one-line message naming the input;
//  - a parsed checkpoint is consistent: metadata an object, unique non-empty names, rank <= 8,
//    data.size() == numel;
//  - round trip: serialize_checkpoint of the result parses back to the same tensors and metadata.
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "nnperf/core/error.h"
#include "nnperf/train/checkpoint.h"

namespace {

std::optional<nnperf::Checkpoint> parse(std::string_view bytes, const std::string& source) {
  try {
    return nnperf::parse_checkpoint(bytes, source);
  } catch (const nnperf::Error& e) {
    nnperf::fuzz::check_error_message(e.what(), source + ": ");
    return std::nullopt;
  }
}

void check(const nnperf::Checkpoint& c) {
  FUZZ_CHECK(c.meta.is_object(), "metadata of type %s accepted", c.meta.type_name());
  std::set<std::string> names;
  for (const nnperf::CheckpointTensor& t : c.tensors) {
    FUZZ_CHECK(!t.name.empty() && names.insert(t.name).second, "name '%s' empty or repeated",
               t.name.c_str());
    FUZZ_CHECK(t.shape.rank() <= 8, "rank %d accepted", t.shape.rank());
    FUZZ_CHECK(static_cast<int64_t>(t.data.size()) == t.shape.numel(), "%zu values for shape %s",
               t.data.size(), t.shape.str().c_str());
  }
  const auto back = parse(nnperf::serialize_checkpoint(c), "reserialized");
  FUZZ_CHECK(back.has_value(), "a parsed checkpoint does not parse after serialize");
  FUZZ_CHECK(back->meta == c.meta || c.meta.dump() == back->meta.dump(), "metadata changed");
  FUZZ_CHECK(back->tensors.size() == c.tensors.size(), "tensor count changed");
  for (std::size_t i = 0; i < c.tensors.size(); ++i) {
    const auto& a = c.tensors[i];
    const auto& b = back->tensors[i];
    FUZZ_CHECK(
        a.name == b.name && a.shape == b.shape && a.data.size() == b.data.size() &&
            (a.data.empty() || std::memcmp(a.data.data(), b.data.data(), a.data.size() * 4) == 0),
        "tensor %zu changed", i);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (const auto c = parse(bytes, "fuzz-input")) check(*c);

  // Header (20 bytes: magic, version, length) + CRC: rewrite the length and the CRC.
  if (size >= 24) {
    std::string sealed(bytes);
    const uint64_t length = size;
    for (int i = 0; i < 8; ++i) sealed[12 + i] = static_cast<char>((length >> (8 * i)) & 0xFF);
    const uint32_t crc = static_cast<uint32_t>(
        crc32(0L, reinterpret_cast<const Bytef*>(sealed.data()), static_cast<uInt>(size - 4)));
    for (int i = 0; i < 4; ++i) sealed[size - 4 + i] = static_cast<char>((crc >> (8 * i)) & 0xFF);
    if (const auto c = parse(sealed, "fuzz-sealed")) check(*c);
  }
  return 0;
}
