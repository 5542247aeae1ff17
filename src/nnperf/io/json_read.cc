#include "nnperf/io/json_read.h"

#include <fmt/format.h>

#include <cmath>

#include "nnperf/core/error.h"
#include "nnperf/io/files.h"

namespace nnperf {

nlohmann::json parse_json(std::string_view text, const std::string& source) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    // Parse again with exceptions only to learn where it broke.
    try {
      const nlohmann::json again = nlohmann::json::parse(text);
      (void)again;
    } catch (const nlohmann::json::parse_error& e) {
      fail("{}: not valid JSON (at byte {})", source, e.byte);
    } catch (const std::exception&) {
    }
    fail("{}: not valid JSON", source);
  }
  return j;
}

nlohmann::json read_json(const std::filesystem::path& path) { return parse_json(read_file(path), path.string()); }

JsonPath JsonPath::at(std::string_view key) const {
  return JsonPath{source, path.empty() ? std::string(key) : path + "." + std::string(key)};
}

JsonPath JsonPath::item(std::size_t i) const {
  return JsonPath{source, fmt::format("{}[{}]", path, i)};
}

std::string JsonPath::str() const { return path.empty() ? source : fmt::format("{}: field '{}'", source, path); }

namespace {

const char* type_name(const nlohmann::json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

const nlohmann::json& member(const nlohmann::json& obj, std::string_view key, const JsonPath& where) {
  if (!obj.is_object()) fail("{}: expected an object, found {}", where.str(), type_name(obj));
  const auto it = obj.find(std::string(key));
  if (it == obj.end()) fail("{} is missing", where.at(key).str());
  return *it;
}

}  // namespace

const nlohmann::json& json_object(const nlohmann::json& obj, std::string_view key, const JsonPath& where) {
  const nlohmann::json& v = member(obj, key, where);
  if (!v.is_object()) fail("{}: expected an object, found {}", where.at(key).str(), type_name(v));
  return v;
}

double json_number(const nlohmann::json& obj, std::string_view key, const JsonPath& where) {
  const nlohmann::json& v = member(obj, key, where);
  if (!v.is_number()) fail("{}: expected a number, found {}", where.at(key).str(), type_name(v));
  const double d = v.get<double>();
  if (!std::isfinite(d)) fail("{}: expected a finite number", where.at(key).str());
  return d;
}

int64_t json_integer(const nlohmann::json& obj, std::string_view key, const JsonPath& where) {
  const nlohmann::json& v = member(obj, key, where);
  if (!v.is_number_integer()) fail("{}: expected an integer, found {}", where.at(key).str(), type_name(v));
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    fail("{}: integer out of range", where.at(key).str());
  }
  return v.get<int64_t>();
}

std::string json_string(const nlohmann::json& obj, std::string_view key, const JsonPath& where) {
  const nlohmann::json& v = member(obj, key, where);
  if (!v.is_string()) fail("{}: expected a string, found {}", where.at(key).str(), type_name(v));
  return v.get<std::string>();
}

bool json_bool(const nlohmann::json& obj, std::string_view key, const JsonPath& where) {
  const nlohmann::json& v = member(obj, key, where);
  if (!v.is_boolean()) fail("{}: expected true or false, found {}", where.at(key).str(), type_name(v));
  return v.get<bool>();
}

std::optional<double> json_optional_number(const nlohmann::json& obj, std::string_view key, const JsonPath& where) {
  if (!obj.is_object()) fail("{}: expected an object, found {}", where.str(), type_name(obj));
  const auto it = obj.find(std::string(key));
  if (it == obj.end() || it->is_null()) return std::nullopt;
  return json_number(obj, key, where);
}

}  // namespace nnperf
