// nnperf: the one program. Parses the command line, dispatches to a subcommand, and turns
// nnperf::Error into one line on stderr with exit code 1 (runtime) or 2 (usage).
#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <map>

#include "command.h"
#include "nnperf/core/error.h"

namespace nnperf::app {

std::vector<Command>& commands() {
  static std::vector<Command> all;
  return all;
}

namespace {
std::string g_command_line;
}
const std::string& command_line() { return g_command_line; }

}  // namespace nnperf::app

int main(int argc, char** argv) {
  using namespace nnperf;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) app::g_command_line += ' ';
    std::string a = argv[i];
    const bool quote = a.empty() || a.find_first_of(" \t'\"$") != std::string::npos;
    app::g_command_line += quote ? "'" + a + "'" : a;
  }
  CLI::App cli{"nnperf: measure, model and explain where neural-network time and energy go"};
  cli.require_subcommand(1);
  cli.set_version_flag("--version", "nnperf 0.1.0");
  auto& cmds = app::commands();
  std::sort(cmds.begin(), cmds.end(), [](const auto& a, const auto& b) { return a.order < b.order; });
  std::map<CLI::App*, std::function<int()>> actions;
  for (auto& c : cmds) {
    CLI::App* sub = cli.add_subcommand(c.name);
    actions[sub] = c.setup(*sub);
  }
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = cli.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    for (auto& [sub, action] : actions) {
      if (sub->parsed()) return action();
    }
    return 2;
  } catch (const InterruptedError& e) {
    fmt::print(stderr, "nnperf: interrupted: {}\n", e.what());
    return 130;
  } catch (const UsageError& e) {
    fmt::print(stderr, "nnperf: error: {}\n", e.what());
    return 2;
  } catch (const Error& e) {
    fmt::print(stderr, "nnperf: error: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "nnperf: internal error: {}\n", e.what());
    return 1;
  }
}
