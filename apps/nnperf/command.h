// Subcommands register themselves here: one file per subcommand, each with a static Registrar
// that adds its CLI11 sub-app and the function to run. main() only parses and dispatches.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace nnperf::app {

struct Command {
  std::string name;
  int order;  // position in --help
  // Adds flags to `sub` and returns the action to run after parsing (returns the exit code).
  std::function<std::function<int()>(CLI::App& sub)> setup;
};

std::vector<Command>& commands();

struct Registrar {
  explicit Registrar(Command c) { commands().push_back(std::move(c)); }
};

// The full command line, for run.json.
const std::string& command_line();

}  // namespace nnperf::app
