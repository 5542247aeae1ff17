// Reading JSON that nnperf (or a user) saved: every failure names the file and the field path
// ("runs/x/final_results.json: field 'hyperparameters.batch_size': expected an integer, found a
// string"); no nlohmann exception reaches a user.
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace nnperf {

nlohmann::json parse_json(std::string_view text, const std::string& source);
nlohmann::json read_json(const std::filesystem::path& path);

// Where a value sits: the file and the path of keys to it, for messages.
struct JsonPath {
  std::string source;
  std::string path;  // "" for the document, "hyperparameters.batch_size", ...
  JsonPath at(std::string_view key) const;
  // Element i of the array at this path: "records[3]", so every reader writes an index one way.
  JsonPath item(std::size_t i) const;
  std::string str() const;  // "FILE: field 'a.b'" or "FILE"
};

// The member `key` of the object at `where` (which must be an object), checked for its type.
const nlohmann::json& json_object(const nlohmann::json& obj, std::string_view key, const JsonPath& where);
double json_number(const nlohmann::json& obj, std::string_view key, const JsonPath& where);
int64_t json_integer(const nlohmann::json& obj, std::string_view key, const JsonPath& where);
std::string json_string(const nlohmann::json& obj, std::string_view key, const JsonPath& where);
bool json_bool(const nlohmann::json& obj, std::string_view key, const JsonPath& where);
// Absent or null: nullopt; otherwise a finite number or an error.
std::optional<double> json_optional_number(const nlohmann::json& obj, std::string_view key,
                                           const JsonPath& where);

}  // namespace nnperf
