// See json_lines.h.
#include "nnperf/io/json_lines.h"

#include <fmt/format.h>

#include <string>
#include <string_view>

#include "nnperf/io/files.h"
#include "nnperf/io/json_read.h"

namespace nnperf {

namespace {

// One line: compact, invalid UTF-8 replaced (as write_json_atomic does), newline-terminated.
std::string json_line(const nlohmann::json& value) {
  std::string line = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  line += '\n';
  return line;
}

}  // namespace

void write_json_lines_atomic(const std::filesystem::path& path,
                             const std::vector<nlohmann::json>& values) {
  std::string text;
  for (const nlohmann::json& v : values) text += json_line(v);
  write_file_atomic(path, text);
}

void append_json_line(const std::filesystem::path& path, const nlohmann::json& value) {
  append_file_synced(path, json_line(value));
}

JsonLines read_json_lines(const std::filesystem::path& path) {
  const std::string text = read_file(path);
  JsonLines out;
  std::size_t begin = 0;
  for (int line = 1; begin < text.size(); ++line) {
    const std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) {
      out.cut_last = true;
      break;
    }
    const std::string_view body(text.data() + begin, end - begin);
    begin = end + 1;
    if (body.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = fmt::format("{}: line {}", path.string(), line);
    // The last line may be torn whole-line (a crash can leave zeros or a partial block before
    // a newline written later): counted as cut, like a line without its newline.
    const bool last = text.find_first_not_of(" \t\r\n", begin) == std::string::npos;
    if (last) {
      nlohmann::json v = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
      if (v.is_discarded()) {
        out.cut_last = true;
        break;
      }
      out.values.push_back(std::move(v));
      continue;
    }
    out.values.push_back(parse_json(body, where));
  }
  return out;
}

}  // namespace nnperf
