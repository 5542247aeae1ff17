// Chrome / Perfetto trace-event JSON ("JSON Object Format"): per-layer timings become a timeline
// that chrome://tracing and ui.perfetto.dev open directly. Events are collected in memory and
// written once, atomically: {"traceEvents": [...], "displayTimeUnit": "ms", "metadata": {...}}.
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace nnperf {

// A complete event (ph "X"): one span on one thread track; times in microseconds.
struct TraceEvent {
  std::string name;  // "conv1.forward"
  std::string cat;   // "forward", "backward", "optimizer", ...
  double ts_us = 0;  // start, from any fixed origin (the run's start)
  double dur_us = 0;
  int tid = 0;  // track: a thread, or a logical lane such as "layers"
  nlohmann::json args = nlohmann::json::object();  // shown in the viewer's detail pane
};

class TraceWriter {
 public:
  explicit TraceWriter(std::string process_name = "nnperf");
  // Throws when ts/dur are not finite or dur is negative (naming the event).
  void add(TraceEvent event);
  void add_complete(std::string name, std::string cat, double ts_us, double dur_us, int tid = 0,
                    nlohmann::json args = nlohmann::json::object());
  // A counter track (ph "C"), e.g. power in watts or memory in bytes, sampled at ts_us.
  void add_counter(const std::string& name, double ts_us, const nlohmann::json& values);
  void set_thread_name(int tid, const std::string& name);
  // Free-form facts for the top-level "metadata" object (run context, model, algorithm).
  void set_metadata(const std::string& key, nlohmann::json value);

  std::size_t size() const { return events_.size(); }
  nlohmann::json to_json() const;
  void write(const std::filesystem::path& path) const;  // atomic (files.h)

 private:
  std::string process_name_;
  std::vector<nlohmann::json> thread_names_;
  std::vector<nlohmann::json> events_;
  nlohmann::json metadata_ = nlohmann::json::object();
};

}  // namespace nnperf
