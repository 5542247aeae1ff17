// run.json and the {context, records} JSON convention: who ran what, where, with which build.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace nnperf {

// Machine, build (compiler), threads, commit, date, library versions (OpenBLAS, zlib, fmt,
// nlohmann_json, glibc).
nlohmann::json run_context();
// Writes <dir>/run.json = run_context() + {"command": cmdline} + extra, atomically.
void write_run_json(const std::filesystem::path& dir, const std::string& command_line,
                    const nlohmann::json& extra = nlohmann::json::object());
// Writes JSON with 4-space indent, atomically.
void write_json_atomic(const std::filesystem::path& path, const nlohmann::json& j);
std::string iso8601_now();
std::string timestamp_compact();  // YYYYmmdd_HHMMSS (usra-survey's run-folder suffix)
std::string hostname();

}  // namespace nnperf
