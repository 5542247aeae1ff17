// nnperf: the one program. Parses the command line, dispatches to a subcommand, and turns
// nnperf::Error into one line on stderr with exit code 1 (runtime) or 2 (usage).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "command.h"
#include "nnperf/core/error.h"
#include "nnperf/core/interrupt.h"
#include "nnperf/core/memory.h"
#include "nnperf/io/machine_model_file.h"
#include "nnperf/io/out_dir.h"

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

namespace nnperf::app {
namespace {

// The first word names the command: an unknown one, or a flag before any command, is said
// plainly (CLI11 would only say that a subcommand is required); "help" prints the help. Returns
// the exit code when the command line ends here.
std::optional<int> check_first_word(int argc, char** argv, CLI::App& cli) {
  if (argc < 2) return std::nullopt;
  const std::string first = argv[1];
  std::vector<std::string> names;
  for (const auto& c : commands()) names.push_back(c.name);
  if (first == "help") {
    cli.name(argv[0]);
    fmt::print("{}", cli.help());
    return 0;
  }
  if (first.empty() || first[0] != '-') {
    if (std::find(names.begin(), names.end(), first) != names.end()) return std::nullopt;
    fmt::print(stderr,
               "nnperf: error: unknown command '{}'; expected one of: {} (see 'nnperf "
               "--help')\n",
               first, fmt::join(names, ", "));
    return 2;
  }
  if (first == "-h" || first == "--help" || first == "--version") return std::nullopt;
  fmt::print(stderr,
             "nnperf: error: {}: flags go after the command (nnperf COMMAND {} ...; see "
             "'nnperf --help')\n",
             first, first);
  return 2;
}

// Folders replaced with --overwrite are settled when the command ends: on an error the earlier
// outputs go back in place, and the note says so on the error's line.
std::string settled(RunEnd end) {
  const std::string note = finish_output_replacements(end);
  return note.empty() ? note : " (" + note + ")";
}

// Runs the parsed command; every failure becomes one line on stderr and an exit code.
int run_action(const std::function<int()>& action) {
  try {
    const int rc = action();
    if (const std::string note = finish_output_replacements(RunEnd::kSucceeded); !note.empty()) {
      fmt::print(stderr, "nnperf: warning: {}\n", note);
    }
    return rc;
  } catch (const InterruptedError& e) {
    fmt::print(stderr, "nnperf: interrupted: {}{}\n", e.what(), settled(RunEnd::kInterrupted));
    return interrupt_exit_code();
  } catch (const UsageError& e) {
    fmt::print(stderr, "nnperf: error: {}{}\n", e.what(), settled(RunEnd::kFailed));
    return 2;
  } catch (const Error& e) {
    fmt::print(stderr, "nnperf: error: {}{}\n", e.what(), settled(RunEnd::kFailed));
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    // A file-system call without its own check: still one line naming the path.
    fmt::print(stderr, "nnperf: error: {}{}: {}{}\n", e.path1().string(),
               e.path2().empty() ? "" : " -> " + e.path2().string(), e.code().message(),
               settled(RunEnd::kFailed));
    return 1;
  } catch (const std::bad_alloc&) {
    // Sizes from flags and files are checked against the memory budget before allocating; this
    // is the last line of defence for an allocation no check foresaw.
    fmt::print(stderr,
               "nnperf: error: out of memory ({} available); use smaller sizes (--batch-size, "
               "--hidden, --sizes, ...){}\n",
               format_bytes(available_memory_bytes()), settled(RunEnd::kFailed));
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "nnperf: internal error: {}{}\n", e.what(), settled(RunEnd::kFailed));
    return 1;
  }
}

// The command as typed ("sweep run") and the deepest subcommand parsed.
std::pair<std::string, CLI::App*> parsed_command(CLI::App& cli) {
  std::string words;
  CLI::App* at = &cli;
  for (bool deeper = true; deeper;) {
    deeper = false;
    for (CLI::App* s : at->get_subcommands()) {
      words += " " + s->get_name();
      at = s;
      deeper = true;
      break;
    }
  }
  return {words, at};
}

// CLI11's messages in nnperf's words: what was expected, naming the flag.
std::string plain_parse_error(const CLI::ParseError& e, CLI::App& root, CLI::App& at) {
  std::string what = e.what();
  std::replace(what.begin(), what.end(), '\n', ' ');
  std::smatch m;
  // "--epochs: 1 required INT:an integer in [1, 1000000] missing"
  static const std::regex missing(R"(^(-\S+): \d+ required (?:([A-Z]+)(?::(.*))?) missing$)");
  if (std::regex_match(what, m, missing)) {
    const std::string kind = m[3].matched && !m[3].str().empty() ? m[3].str()
                             : m[2] == "INT"                     ? "an integer"
                             : m[2] == "FLOAT"                   ? "a number"
                                                                 : "a value";
    return fmt::format("{}: expected {} after the flag, got nothing", m[1].str(),
                       kind == "list" ? "a comma-separated list" : kind);
  }
  static const std::regex extras(R"(^The following arguments? (?:was|were) not expected: (.*)$)");
  if (std::regex_match(what, m, extras)) {
    std::vector<std::string> args = root.remaining(true);
    if (args.empty()) args = {m[1].str()};
    if (!args[0].empty() && args[0][0] == '-') return fmt::format("unknown flag {} for this command", args[0]);
    return fmt::format("unexpected argument{} '{}' (this command takes {})", args.size() > 1 ? "s" : "",
                       fmt::join(args, "' '"),
                       at.get_options([](const CLI::Option* o) { return o->get_positional(); }).empty()
                           ? "no positional arguments"
                           : "fewer positional arguments");
  }
  if (what == "A subcommand is required") {
    std::vector<std::string> names;
    for (const CLI::App* s : at.get_subcommands({})) names.push_back(s->get_name());
    return fmt::format("expected one of: {}", fmt::join(names, ", "));
  }
  static const std::regex required(R"(^(\S+) is required$)");
  if (std::regex_match(what, m, required)) {
    return fmt::format("{} is required", m[1].str()[0] == '-' ? m[1].str() : "the argument " + m[1].str());
  }
  return what;
}

// A flag given an empty value ('' from an unset shell variable, say), where '' does not mean
// something the flag's help says: its name, else "". An empty value is not "the default"
// (profile --sizes '' profiled the stage's sizes, train --out-dir '' wrote to a new folder).
std::string empty_value_flag(CLI::App& at) {
  // (command, flag) pairs whose help gives '' a meaning.
  static const std::set<std::pair<std::string, std::string>> kEmptyMeans{{"peaks", "--out"}};
  for (const CLI::Option* opt : at.get_options()) {
    if (opt->count() == 0 || opt->get_expected_min() == 0 || opt->get_positional()) continue;
    const auto& values = opt->results();
    if (std::find(values.begin(), values.end(), std::string()) == values.end()) continue;
    if (kEmptyMeans.count({at.get_name(), opt->get_name()}) > 0) continue;
    return opt->get_name();
  }
  return "";
}

}  // namespace
}  // namespace nnperf::app

int main(int argc, char** argv) {
  using namespace nnperf;
  // The cost models' machine: measured ceilings ($NNPERF_PEAKS, ./peaks.json) when there are
  // any, read on first use.
  set_machine_model_source(&detect_machine_model);
  for (int i = 0; i < argc; ++i) {
    if (i > 0) app::g_command_line += ' ';
    std::string a = argv[i];
    const bool quote = a.empty() || a.find_first_of(" \t'\"$") != std::string::npos;
    app::g_command_line += quote ? "'" + a + "'" : a;
  }
  CLI::App cli{"nnperf: measure, model and explain where neural-network time and energy go"};
  cli.require_subcommand(1);
  // A flag given twice keeps its last value (scripts append overrides), as most programs do.
  cli.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cli.set_version_flag("--version", "nnperf 0.1.0");
  auto& cmds = app::commands();
  std::sort(cmds.begin(), cmds.end(),
            [](const auto& a, const auto& b) { return a.order < b.order; });
  std::map<CLI::App*, std::function<int()>> actions;
  for (auto& c : cmds) {
    CLI::App* sub = cli.add_subcommand(c.name);
    actions[sub] = c.setup(*sub);
  }
  if (const auto rc = app::check_first_word(argc, argv, cli)) return *rc;
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return cli.exit(e);  // --help, --version, --list-*
    // One line, naming the flag, and where to read more.
    const auto [sub, at] = app::parsed_command(cli);
    fmt::print(stderr, "nnperf: error: {} (see 'nnperf{} --help')\n", app::plain_parse_error(e, cli, *at), sub);
    return 2;
  }
  if (const auto [words, at] = app::parsed_command(cli); !app::empty_value_flag(*at).empty()) {
    fmt::print(stderr, "nnperf: error: {}: expected a value, got '' (see 'nnperf{} --help')\n",
               app::empty_value_flag(*at), words);
    return 2;
  }
  install_interrupt_handlers();
  for (auto& [sub, action] : actions) {
    if (sub->parsed()) return app::run_action(action);
  }
  return 2;
}
