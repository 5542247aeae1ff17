// Trace-event JSON writer. Format reference: "Trace Event Format" (Google, 2016), the JSON Object
// Format with complete ("X"), counter ("C") and metadata ("M") events; pid is fixed at 1 because
// one trace file describes one process.
#include "nnperf/io/trace.h"

#include <cmath>

#include "nnperf/core/error.h"
#include "nnperf/io/files.h"

namespace nnperf {

namespace {
constexpr int kPid = 1;

void check_time(const std::string& name, const char* what, double v) {
  if (!std::isfinite(v)) fail("trace event '{}': {} is not finite ({})", name, what, v);
}
}  // namespace

TraceWriter::TraceWriter(std::string process_name) : process_name_(std::move(process_name)) {}

void TraceWriter::add(TraceEvent e) {
  check_time(e.name, "ts_us", e.ts_us);
  check_time(e.name, "dur_us", e.dur_us);
  if (e.dur_us < 0) fail("trace event '{}': negative duration {} us", e.name, e.dur_us);
  nlohmann::json j = {{"name", std::move(e.name)},
                      {"cat", std::move(e.cat)},
                      {"ph", "X"},
                      {"ts", e.ts_us},
                      {"dur", e.dur_us},
                      {"pid", kPid},
                      {"tid", e.tid}};
  if (!e.args.is_null() && !e.args.empty()) j["args"] = std::move(e.args);
  events_.push_back(std::move(j));
}

void TraceWriter::add_complete(std::string name, std::string cat, double ts_us, double dur_us,
                               int tid, nlohmann::json args) {
  add(TraceEvent{std::move(name), std::move(cat), ts_us, dur_us, tid, std::move(args)});
}

void TraceWriter::add_counter(const std::string& name, double ts_us, const nlohmann::json& values) {
  check_time(name, "ts_us", ts_us);
  if (!values.is_object() || values.empty()) {
    fail("trace counter '{}': values must be a non-empty object of series name -> number", name);
  }
  events_.push_back({{"name", name}, {"ph", "C"}, {"ts", ts_us}, {"pid", kPid}, {"args", values}});
}

void TraceWriter::set_thread_name(int tid, const std::string& name) {
  thread_names_.push_back({{"name", "thread_name"},
                           {"ph", "M"},
                           {"pid", kPid},
                           {"tid", tid},
                           {"args", {{"name", name}}}});
}

void TraceWriter::set_metadata(const std::string& key, nlohmann::json value) {
  metadata_[key] = std::move(value);
}

nlohmann::json TraceWriter::to_json() const {
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", kPid},
                    {"tid", 0},
                    {"args", {{"name", process_name_}}}});
  for (const auto& e : thread_names_) events.push_back(e);
  for (const auto& e : events_) events.push_back(e);
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}, {"metadata", metadata_}};
}

void TraceWriter::write(const std::filesystem::path& path) const {
  // Compact (no indent): traces get large and are read by tools, not people.
  std::string text = to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  text += '\n';
  write_file_atomic(path, text);
}

}  // namespace nnperf
