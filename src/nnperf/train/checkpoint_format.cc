// The byte format of checkpoints (docs/checkpoint.md), kept apart from the Graph/Optimizer glue
// of checkpoint.cc so that the fuzz target links it with core/ alone. The parser checks every
// count and size against the bytes actually present before it allocates anything.
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <string_view>

#include "nnperf/core/error.h"
#include "nnperf/core/memory.h"
#include "nnperf/train/checkpoint.h"

namespace nnperf {
namespace {

static_assert(std::endian::native == std::endian::little,
              "checkpoint data is written as the host's float32; a big-endian host must swap");

constexpr std::size_t kHeaderBytes = 8 + 4 + 8;  // magic, version, file length
constexpr std::size_t kCrcBytes = 4;
constexpr uint32_t kMaxRank = 8;
constexpr uint32_t kMaxNameBytes = 1024;
// A single dimension beyond 2^40 elements cannot be real; it also keeps the products below.
constexpr int64_t kMaxDim = int64_t{1} << 40;
// Smallest table entry: name length, a 1-byte name, dtype, rank (0), offset, length.
constexpr std::size_t kMinEntryBytes = 4 + 1 + 4 + 4 + 8 + 8;

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}
void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}
uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}
uint64_t get_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

uint32_t crc32_of(std::string_view bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths: feed 1 GiB at a time.
  constexpr std::size_t kChunk = std::size_t{1} << 30;
  for (std::size_t i = 0; i < bytes.size(); i += kChunk) {
    const std::size_t n = std::min(kChunk, bytes.size() - i);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + i), static_cast<uInt>(n));
  }
  return static_cast<uint32_t>(crc);
}

// Reads the table and the data section in order; every read checks the bytes left first.
class Reader {
 public:
  Reader(std::string_view bytes, const std::string& source, std::size_t pos)
      : bytes_(bytes), source_(source), pos_(pos) {}
  std::size_t left() const { return bytes_.size() - pos_; }
  std::size_t pos() const { return pos_; }
  void need(std::size_t n, std::string_view what) const {
    if (n > left()) {
      fail("{}: checkpoint truncated in the {}: {} bytes needed at offset {}, {} left", source_,
           what, n, pos_, left());
    }
  }
  uint32_t u32(std::string_view what) {
    need(4, what);
    const uint32_t v = get_u32(bytes_.data() + pos_);
    pos_ += 4;
    return v;
  }
  uint64_t u64(std::string_view what) {
    need(8, what);
    const uint64_t v = get_u64(bytes_.data() + pos_);
    pos_ += 8;
    return v;
  }
  std::string_view take(std::size_t n, std::string_view what) {
    need(n, what);
    const std::string_view v = bytes_.substr(pos_, n);
    pos_ += n;
    return v;
  }

 private:
  std::string_view bytes_;
  const std::string& source_;
  std::size_t pos_;
};

}  // namespace

std::string serialize_checkpoint(const Checkpoint& ckpt) {
  if (!ckpt.meta.is_object()) fail("checkpoint: the metadata must be a JSON object");
  const std::string meta = ckpt.meta.dump();
  std::set<std::string_view> names;
  std::string table;
  put_u32(table, static_cast<uint32_t>(ckpt.tensors.size()));
  uint64_t offset = 0;
  for (const CheckpointTensor& t : ckpt.tensors) {
    if (t.name.empty() || t.name.size() > kMaxNameBytes) {
      fail("checkpoint: tensor name '{}' must have 1 to {} bytes", quote_input(t.name),
           kMaxNameBytes);
    }
    if (!names.insert(t.name).second) fail("checkpoint: duplicate tensor '{}'", t.name);
    if (static_cast<uint32_t>(t.shape.rank()) > kMaxRank) {
      fail("checkpoint: tensor '{}' has rank {}, at most {}", t.name, t.shape.rank(), kMaxRank);
    }
    if (static_cast<int64_t>(t.data.size()) != t.shape.numel()) {
      fail("checkpoint: tensor '{}' of shape {} holds {} values", t.name, t.shape.str(),
           t.data.size());
    }
    put_u32(table, static_cast<uint32_t>(t.name.size()));
    table += t.name;
    put_u32(table, kCheckpointDtypeFloat32);
    put_u32(table, static_cast<uint32_t>(t.shape.rank()));
    for (int64_t d : t.shape.dims()) put_u64(table, static_cast<uint64_t>(d));
    const uint64_t length = t.data.size() * sizeof(float);
    put_u64(table, offset);
    put_u64(table, length);
    offset += length;
  }
  const uint64_t total = kHeaderBytes + 8 + meta.size() + table.size() + offset + kCrcBytes;
  std::string out;
  out.reserve(total);
  out.append(kCheckpointMagic, sizeof(kCheckpointMagic));
  put_u32(out, kCheckpointVersion);
  put_u64(out, total);
  put_u64(out, meta.size());
  out += meta;
  out += table;
  for (const CheckpointTensor& t : ckpt.tensors) {
    out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size() * sizeof(float));
  }
  put_u32(out, crc32_of(out));
  return out;
}

namespace {

// The file's bytes without the CRC, once the magic, version, length and checksum are right.
std::string_view checked_body(std::string_view bytes, const std::string& source) {
  if (bytes.size() < sizeof(kCheckpointMagic) ||
      std::memcmp(bytes.data(), kCheckpointMagic, sizeof(kCheckpointMagic)) != 0) {
    fail("{}: not an nnperf checkpoint (the file does not start with NNPFCKPT)", source);
  }
  if (bytes.size() < kHeaderBytes + kCrcBytes) {
    fail("{}: checkpoint truncated in the header: {} bytes, at least {} needed", source,
         bytes.size(), kHeaderBytes + kCrcBytes);
  }
  const uint32_t version = get_u32(bytes.data() + 8);
  if (version != kCheckpointVersion) {
    fail("{}: unsupported checkpoint format version {} (this nnperf reads version {})", source,
         version, kCheckpointVersion);
  }
  const uint64_t length = get_u64(bytes.data() + 12);
  if (length != bytes.size()) {
    fail("{}: checkpoint {}: the header says {} bytes, the file has {}", source,
         length > bytes.size() ? "truncated" : "has trailing bytes", length, bytes.size());
  }
  const std::string_view body = bytes.substr(0, bytes.size() - kCrcBytes);
  const uint32_t stored = get_u32(bytes.data() + body.size());
  const uint32_t computed = crc32_of(body);
  if (stored != computed) {
    fail(
        "{}: checkpoint checksum mismatch (CRC-32 stored {:08x}, computed {:08x}): the file is "
        "corrupt",
        source, stored, computed);
  }
  return body;
}

nlohmann::json read_metadata(Reader& r, const std::string& source) {
  const uint64_t meta_bytes = r.u64("metadata length");
  r.need(meta_bytes, "metadata");
  const std::string_view meta_text = r.take(static_cast<std::size_t>(meta_bytes), "metadata");
  nlohmann::json meta = nlohmann::json::parse(meta_text, nullptr, /*allow_exceptions=*/false);
  if (meta.is_discarded()) fail("{}: checkpoint metadata is not valid JSON", source);
  if (!meta.is_object()) {
    fail("{}: checkpoint metadata is a JSON {}, expected an object", source, meta.type_name());
  }
  return meta;
}

// A table entry's shape, each dimension at most 2^40 and the element count at most the file's bytes
// (so the products cannot overflow).
Shape read_shape(Reader& r, const std::string& name, std::size_t file_bytes,
                 const std::string& source, uint64_t& numel) {
  const uint32_t rank = r.u32("tensor table");
  if (rank > kMaxRank) {
    fail("{}: checkpoint tensor '{}' has rank {}, at most {}", source, quote_input(name), rank,
         kMaxRank);
  }
  std::vector<int64_t> dims(rank);
  numel = 1;
  for (uint32_t k = 0; k < rank; ++k) {
    const uint64_t d = r.u64("tensor table");
    if (d > static_cast<uint64_t>(kMaxDim)) {
      fail("{}: checkpoint tensor '{}' has dimension {} = {}, beyond 2^40", source,
           quote_input(name), k, d);
    }
    dims[k] = static_cast<int64_t>(d);
    // numel * d with both <= 2^40 could overflow; stop once the product exceeds the file.
    if (d != 0 && numel > file_bytes / d) {
      fail("{}: checkpoint tensor '{}' has more elements than the file has bytes", source,
           quote_input(name));
    }
    numel *= d;
  }
  return Shape(std::move(dims));
}

// One table entry (tensor i): its name, dtype, shape and data range, which must start where the
// previous tensor's data ended (data_bytes, advanced past this one). Returns its byte length.
uint64_t read_entry(Reader& r, uint32_t i, std::size_t file_bytes, std::size_t body_bytes,
                    const std::string& source, std::set<std::string>& names,
                    uint64_t& data_bytes, Checkpoint& ckpt) {
  const uint32_t name_bytes = r.u32("tensor table");
  if (name_bytes == 0 || name_bytes > kMaxNameBytes) {
    fail("{}: checkpoint tensor {} has a name of {} bytes, expected 1 to {}", source, i,
         name_bytes, kMaxNameBytes);
  }
  std::string name(r.take(name_bytes, "tensor table"));
  if (!names.insert(name).second) {
    fail("{}: checkpoint has tensor '{}' twice", source, quote_input(name));
  }
  const uint32_t dtype = r.u32("tensor table");
  if (dtype != kCheckpointDtypeFloat32) {
    fail("{}: checkpoint tensor '{}' has unknown dtype code {} (only {} = float32)", source,
         quote_input(name), dtype, kCheckpointDtypeFloat32);
  }
  uint64_t numel = 0;
  Shape shape = read_shape(r, name, file_bytes, source, numel);
  const uint64_t offset = r.u64("tensor table");
  const uint64_t tensor_bytes = r.u64("tensor table");
  if (tensor_bytes != numel * sizeof(float)) {
    fail("{}: checkpoint tensor '{}' holds {} bytes, its shape needs {}", source,
         quote_input(name), tensor_bytes, numel * sizeof(float));
  }
  if (offset != data_bytes) {
    fail(
        "{}: checkpoint tensor '{}' starts at data offset {}, expected {} (tensors are stored "
        "in table order without gaps)",
        source, quote_input(name), offset, data_bytes);
  }
  if (tensor_bytes > body_bytes) {
    fail("{}: checkpoint tensor '{}' of {} bytes is larger than the file", source,
         quote_input(name), tensor_bytes);
  }
  data_bytes += tensor_bytes;  // both below the file size: no overflow
  if (data_bytes > body_bytes) {
    fail("{}: checkpoint tensors need {} bytes, more than the file has", source, data_bytes);
  }
  ckpt.tensors.push_back({std::move(name), std::move(shape), {}});
  return tensor_bytes;
}

}  // namespace

Checkpoint parse_checkpoint(std::string_view bytes, const std::string& source) {
  const std::string_view body = checked_body(bytes, source);
  Reader r(body, source, kHeaderBytes);
  Checkpoint ckpt;
  ckpt.meta = read_metadata(r, source);
  const uint32_t count = r.u32("tensor count");
  if (count > r.left() / kMinEntryBytes) {
    fail("{}: checkpoint claims {} tensors, but {} bytes cannot hold that many table entries",
         source, count, r.left());
  }
  std::vector<uint64_t> lengths;
  lengths.reserve(count);
  ckpt.tensors.reserve(count);
  std::set<std::string> names;
  uint64_t data_bytes = 0;
  for (uint32_t i = 0; i < count; ++i) {
    lengths.push_back(read_entry(r, i, bytes.size(), body.size(), source, names, data_bytes, ckpt));
  }
  if (data_bytes != r.left()) {
    fail("{}: checkpoint {}: the tensor table needs {} data bytes, {} are present", source,
         data_bytes > r.left() ? "truncated in the data" : "has unaccounted bytes", data_bytes,
         r.left());
  }
  check_memory(static_cast<int64_t>(data_bytes), source + ": checkpoint tensors");
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    const std::string_view raw = r.take(lengths[i], "data");
    std::vector<float>& data = ckpt.tensors[i].data;
    data.resize(raw.size() / sizeof(float));
    if (!raw.empty()) std::memcpy(data.data(), raw.data(), raw.size());
  }
  return ckpt;
}

}  // namespace nnperf
