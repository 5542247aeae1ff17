// Running a sweep's cells (here, or through Slurm) and following them: each cell's state lives in
// state/<name>.json, written atomically by the one process that runs the cell.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>

#include "nnperf/core/error.h"
#include "nnperf/core/memory.h"
#include "nnperf/io/csv.h"
#include "nnperf/io/files.h"
#include "nnperf/io/json_read.h"
#include "nnperf/io/run_info.h"
#include "nnperf/core/clock.h"
#include "nnperf/core/text.h"
#include "nnperf/runs/sweep.h"

extern char** environ;

namespace nnperf {

namespace fs = std::filesystem;

namespace {

fs::path self_exe() { return fs::read_symlink("/proc/self/exe"); }

fs::path state_path(const fs::path& dir, const std::string& name) {
  return dir / "state" / (name + ".json");
}

std::string env_or(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v != nullptr ? v : fallback;
}

// posix_spawnp of `argv` (searched on PATH when argv[0] has no slash) with the file actions `fa`,
// which it destroys; 0 or the error number.
int spawn_with(const std::vector<std::string>& argv, posix_spawn_file_actions_t& fa, pid_t& pid) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc;
}

// Starts `argv` with cwd `cwd`, stdout and stderr appended to `log` (inherited when empty);
// returns the pid.
pid_t spawn(const std::vector<std::string>& argv, const fs::path& cwd, const fs::path& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  if (!log.empty()) {
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  }
  pid_t pid = 0;
  if (const int rc = spawn_with(argv, fa, pid); rc != 0) {
    throw Error(fmt::format("cannot start {}: {}", argv[0], std::strerror(rc)));
  }
  return pid;
}

int exit_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

int wait_for(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw Error(fmt::format("waitpid: {}", std::strerror(errno)));
  }
  return exit_status(status);
}

// The last line of the log that says what went wrong: the last "nnperf: error:" line, else the
// last non-empty line.
std::string last_error_line(const fs::path& log) {
  if (!fs::exists(log)) return "";
  const std::string text = read_file(log);
  std::string last, last_error;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    const std::string line = text.substr(pos, end - pos);
    if (!line.empty()) last = line;
    if (line.starts_with("nnperf: error:")) last_error = line;
    pos = end + 1;
  }
  return last_error.empty() ? last : last_error;
}

// Rows a cell produced: the profile's overall rows, or the training driver's rows labelled with
// the cell's name.
int64_t cell_rows(const fs::path& dir, const nlohmann::json& cell) {
  const fs::path out = dir / cell["output"].get<std::string>();
  if (cell["kind"] == "profile") {
    const fs::path f = out / fmt::format("{}_{}_overall.csv", cell["model"].get<std::string>(),
                                         cell["algorithm"].get<std::string>());
    return fs::exists(f) ? static_cast<int64_t>(read_csv(f).rows.size()) : 0;
  }
  const fs::path f = out / "metrics.csv";
  if (!fs::exists(f)) return 0;
  const CsvTable t = read_csv(f);
  const std::size_t label = t.require("label");
  int64_t n = 0;
  for (std::size_t r = 0; r < t.rows.size(); ++r) n += t.cell(r, label) == cell["name"].get<std::string>();
  return n;
}

// Whether the cell runner recorded in `s` still runs on this machine: its pid exists, is not a
// zombie (a killed runner whose parent has not reaped it yet) and is still `nnperf sweep run-cell`
// (not another program that got the pid since).
bool alive_here(const nlohmann::json& s) {
  if (s.value("host", "") != hostname() || !s.contains("pid") || !s["pid"].is_number_integer()) return false;
  const fs::path proc = fs::path("/proc") / std::to_string(s["pid"].get<int64_t>());
  std::string stat, cmdline;
  try {
    stat = read_file(proc / "stat");
    cmdline = read_file(proc / "cmdline");
  } catch (const Error&) {
    return false;
  }
  const std::size_t close = stat.rfind(") ");
  if (close == std::string::npos || close + 2 >= stat.size()) return false;
  const char state = stat[close + 2];
  if (state == 'Z' || state == 'X') return false;
  return cmdline.find(std::string("run-cell") + '\0') != std::string::npos;
}

std::vector<int> unfinished(const fs::path& dir, const nlohmann::json& sweep, bool skip_running) {
  std::vector<int> out;
  for (const auto& c : sweep["cells"]) {
    const nlohmann::json s = cell_state(dir, c);
    if (s["state"] == "done") continue;
    if (skip_running && (s["state"] == "running" || s["state"] == "queued") && !s.value("stale", false)) continue;
    out.push_back(c["index"].get<int>());
  }
  return out;
}

// "0-3,5,7-9"
std::string index_ranges(const std::vector<int>& idx) {
  std::string out;
  for (std::size_t i = 0; i < idx.size();) {
    std::size_t j = i;
    while (j + 1 < idx.size() && idx[j + 1] == idx[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += j == i ? std::to_string(idx[i]) : fmt::format("{}-{}", idx[i], idx[j]);
    i = j + 1;
  }
  return out;
}

// Runs `argv`, returning its exit status and standard output.
std::pair<int, std::string> capture(const std::vector<std::string>& argv) {
  int fds[2];
  if (::pipe(fds) != 0) throw Error(fmt::format("pipe: {}", std::strerror(errno)));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  pid_t pid = 0;
  const int rc = spawn_with(argv, fa, pid);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    throw Error(fmt::format("cannot run {}: {}", argv[0], std::strerror(rc)));
  }
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  return {wait_for(pid), out};
}

// Whether squeue still lists the queued array task of `s`: one `squeue -r` per job and process.
// True when squeue cannot be run here: a machine that only reads the sweep folder must not call
// other machines' cells stale.
bool slurm_task_known(const nlohmann::json& s) {
  static std::map<std::string, std::optional<std::string>> listed;  // job -> squeue's task ids
  const std::string job = s.value("slurm_job", std::string());
  if (job.empty()) {
    // Marked before sbatch answered: known while the submitting process still waits for it
    // (or where that cannot be seen from here), stale once it is gone without a job id.
    if (s.value("host", std::string()) != hostname() || !s.contains("pid")) return true;
    std::error_code ec;
    return fs::exists(fs::path("/proc") / std::to_string(s["pid"].get<int64_t>()), ec);
  }
  if (!listed.count(job)) {
    try {
      const auto [rc, out] = capture({"squeue", "-h", "-r", "-o", "%i", "-j", job});
      // A job squeue has forgotten is refused (status 1) or listed empty.
      listed[job] = rc == 0 ? out : std::string();
    } catch (const Error&) {
      listed[job] = std::nullopt;
    }
  }
  const auto& out = listed[job];
  if (!out) return true;
  const std::string task = job + "_" + s.value("slurm_task", std::string());
  std::size_t pos = 0;
  while (pos < out->size()) {
    const std::size_t end = std::min(out->find('\n', pos), out->size());
    if (out->compare(pos, end - pos, task) == 0) return true;
    pos = end + 1;
  }
  return false;
}

// sbatch's --time: minutes, minutes:seconds, hours:minutes:seconds, days-hours,
// days-hours:minutes, days-hours:minutes:seconds, or UNLIMITED / INFINITE.
bool slurm_time_ok(const std::string& t) {
  if (t == "UNLIMITED" || t == "INFINITE" || t == "unlimited" || t == "infinite") return true;
  const std::size_t dash = t.find('-');
  const std::string days = dash == std::string::npos ? "" : t.substr(0, dash);
  const std::string rest = dash == std::string::npos ? t : t.substr(dash + 1);
  std::vector<std::string> parts;
  for (std::size_t pos = 0;;) {
    const std::size_t colon = rest.find(':', pos);
    parts.push_back(rest.substr(pos, colon == std::string::npos ? std::string::npos : colon - pos));
    if (colon == std::string::npos) break;
    pos = colon + 1;
  }
  const auto digits = [](const std::string& x) {
    return !x.empty() && x.size() <= 9 && x.find_first_not_of("0123456789") == std::string::npos;
  };
  if (dash != std::string::npos && !digits(days)) return false;
  if (parts.size() > 3) return false;
  for (const auto& part : parts) {
    if (!digits(part)) return false;
  }
  return true;
}

// sbatch's --mem: a whole number with an optional unit K, M (the default), G or T.
bool slurm_mem_ok(const std::string& m) {
  const std::size_t unit = m.find_first_not_of("0123456789");
  if (unit == 0 || m.size() > 12) return false;
  return unit == std::string::npos ||
         (unit + 1 == m.size() && std::string("KMGTkmgt").find(m[unit]) != std::string::npos);
}

double cell_memory(const nlohmann::json& cell) { return cell.value("estimated_memory_bytes", 0.0); }

int64_t to_bytes(double b) { return b < 9e18 ? static_cast<int64_t>(b) : -1; }

// The plan's memory estimate of the cells about to run here, each alone and the `jobs` largest
// together, against this machine's available memory: refused before any cell starts.
void check_cells_fit_here(const nlohmann::json& sweep, const std::vector<int>& todo, int jobs) {
  std::vector<std::pair<double, std::string>> need;
  for (int i : todo) {
    const nlohmann::json& c = sweep["cells"][static_cast<std::size_t>(i)];
    need.emplace_back(cell_memory(c), c["name"].get<std::string>());
  }
  if (need.empty()) return;
  std::sort(need.rbegin(), need.rend());
  check_memory(to_bytes(need[0].first),
               fmt::format("sweep cell {} (sweep.json's estimate at its largest input)", need[0].second));
  const std::size_t together = std::min(need.size(), static_cast<std::size_t>(jobs));
  if (together < 2) return;
  double sum = 0;
  for (std::size_t k = 0; k < together; ++k) sum += need[k].first;
  check_memory(to_bytes(sum), fmt::format("--jobs {} (the {} largest cells at once, by sweep.json's estimates)",
                                          jobs, together));
}

// sbatch --mem in bytes (no unit = megabytes); nullopt for 0, which asks for all of a node's memory.
std::optional<double> slurm_mem_bytes(const std::string& m) {
  const std::size_t unit = m.find_first_not_of("0123456789");
  const double n = std::stod(m.substr(0, unit));
  if (n == 0) return std::nullopt;
  const char u = unit == std::string::npos ? 'M' : static_cast<char>(std::toupper(m[unit]));
  const double scale = u == 'K' ? 1024.0 : u == 'M' ? 1048576.0 : u == 'G' ? 1073741824.0 : 1099511627776.0;
  return n * scale;
}

// A --mem below a cell's estimate would have Slurm kill the cell after it queued: refused here.
void check_cells_fit_slurm(const nlohmann::json& sweep, const std::vector<int>& todo, const std::string& mem) {
  const std::optional<double> limit = mem.empty() ? std::nullopt : slurm_mem_bytes(mem);
  if (!limit) return;
  for (int i : todo) {
    const nlohmann::json& c = sweep["cells"][static_cast<std::size_t>(i)];
    if (cell_memory(c) > *limit) {
      throw UsageError(fmt::format("--mem {}: cell {} needs at least {} (sweep.json's estimate at its "
                                   "largest input: node outputs and parameters)",
                                   mem, c["name"].get<std::string>(), format_bytes(to_bytes(cell_memory(c)))));
    }
  }
}

// Refuses option values sbatch would reject, before anything is written.
void check_slurm_options(const SlurmOptions& o) {
  if (!o.time.empty() && !slurm_time_ok(o.time)) {
    throw UsageError(fmt::format("--time '{}': expected a Slurm time limit: minutes, minutes:seconds, "
                                 "hours:minutes:seconds, days-hours[:minutes[:seconds]] or UNLIMITED",
                                 o.time));
  }
  if (!o.mem.empty() && !slurm_mem_ok(o.mem)) {
    throw UsageError(fmt::format("--mem '{}': expected a whole number of megabytes or one with a unit "
                                 "K, M, G or T (e.g. 16G)", o.mem));
  }
  for (const auto& [flag, value] : {std::pair{"--partition", o.partition}, std::pair{"--account", o.account},
                                    std::pair{"--gres", o.gres}}) {
    const bool bad = std::any_of(value.begin(), value.end(), [](char c) {
      return static_cast<unsigned char>(c) <= ' ' || c == '\x7f';
    });
    if (bad) throw UsageError(fmt::format("{} '{}': expected a Slurm name without spaces or control characters", flag, value));
  }
}

}  // namespace

nlohmann::json cell_state(const fs::path& dir, const nlohmann::json& cell) {
  const fs::path p = state_path(dir, cell["name"].get<std::string>());
  if (!fs::exists(p)) return {{"state", "pending"}};
  nlohmann::json s = read_json(p);
  if (!s.is_object() || !s.contains("state") || !s["state"].is_string()) {
    throw Error(fmt::format("{}: not a cell state (expected an object with a \"state\")", p.string()));
  }
  // The fields status and the runner read, where present, of the types the runner writes.
  const JsonPath where{p.string(), ""};
  for (const char* key :
       {"host", "node", "started", "finished", "submitted", "slurm_job", "slurm_task", "error"}) {
    if (s.contains(key)) (void)json_string(s, key, where);
  }
  for (const char* key : {"rows", "pid", "exit_code"}) {
    if (s.contains(key)) (void)json_integer(s, key, where);
  }
  if (s.contains("seconds")) (void)json_number(s, "seconds", where);
  if (s.contains("stale")) (void)json_bool(s, "stale", where);
  const std::string state = s["state"];
  if (state != "pending" && state != "queued" && state != "running" && state != "done" && state != "failed") {
    throw Error(fmt::format("{}: state '{}' (expected pending, queued, running, done or failed); delete "
                            "the file to run the cell again",
                            p.string(), state));
  }
  // A cell recorded running on this machine by a process that is gone was killed; a queued cell
  // whose array task Slurm no longer knows was cancelled before it started.
  if (s["state"] == "running" && s.value("host", "") == hostname() && !alive_here(s)) s["stale"] = true;
  if (s["state"] == "queued" && !slurm_task_known(s)) s["stale"] = true;
  return s;
}

int run_sweep_cell(const fs::path& given, int index) {
  const fs::path dir = fs::absolute(given).lexically_normal();
  const nlohmann::json sweep = read_sweep(dir);
  const int cells = static_cast<int>(sweep["cells"].size());
  if (index < 0 || index >= cells) {
    throw UsageError(fmt::format("sweep run-cell: cell {} of {} (expected 0..{})", index, dir.string(), cells - 1));
  }
  const nlohmann::json& cell = sweep["cells"][static_cast<std::size_t>(index)];
  const std::string name = cell["name"];
  if (cell_state(dir, cell)["state"] == "done") {
    fmt::print("cell {} ({}) is done already\n", index, name);
    return 0;
  }
  fs::create_directories(dir / "state");
  fs::create_directories(dir / "logs");
  const fs::path log = dir / "logs" / (name + ".log");
  nlohmann::json st = {{"state", "running"}, {"host", hostname()}, {"pid", ::getpid()},
                       {"started", iso8601_now()}};
  for (const auto& [key, var] : {std::pair{"slurm_job", "SLURM_ARRAY_JOB_ID"},
                                 std::pair{"slurm_task", "SLURM_ARRAY_TASK_ID"},
                                 std::pair{"node", "SLURMD_NODENAME"}}) {
    if (const std::string v = env_or(var); !v.empty()) st[key] = v;
  }
  write_json_atomic(state_path(dir, name), st);
  const int64_t t0 = now_ns();
  int rc = 0;
  std::string error;
  try {
    if (cell["kind"] == "train" && cell_rows(dir, cell) >= 1) {
      rc = 0;  // the row was written before the cell was killed: the run is complete
    } else {
      std::vector<std::string> argv{self_exe().string()};
      for (const auto& a : cell["args"]) argv.push_back(a.get<std::string>());
      if (cell["kind"] == "profile" && fs::exists(dir / cell["output"].get<std::string>() / "run.json")) {
        argv.push_back("--resume");
      }
      rc = wait_for(spawn(argv, dir, log));
    }
  } catch (const Error& e) {
    rc = 1;
    error = e.what();
  }
  st["finished"] = iso8601_now();
  st["seconds"] = seconds_since(t0);
  if (rc == 0) {
    st["state"] = "done";
    st["rows"] = cell_rows(dir, cell);
  } else {
    st["state"] = "failed";
    st["exit_code"] = rc;
    st["error"] = error.empty() ? last_error_line(log) : error;
  }
  write_json_atomic(state_path(dir, name), st);
  return rc;
}

int run_sweep_local(const fs::path& dir, int jobs) {
  if (jobs < 1) throw UsageError(fmt::format("--jobs {}: expected at least 1", jobs));
  const nlohmann::json sweep = read_sweep(dir);
  const std::vector<int> todo = unfinished(dir, sweep, true);
  check_cells_fit_here(sweep, todo, jobs);
  fmt::print("sweep {}: {} of {} cells to run, {} at a time\n", dir.string(), todo.size(),
             sweep["cells"].size(), jobs);
  std::map<pid_t, int> running;
  std::size_t next = 0;
  int failed = 0;
  const fs::path self = self_exe();
  while (next < todo.size() || !running.empty()) {
    while (next < todo.size() && static_cast<int>(running.size()) < jobs) {
      const int i = todo[next++];
      running[spawn({self.string(), "sweep", "run-cell", dir.string(), std::to_string(i)}, "", "")] = i;
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw Error(fmt::format("waitpid: {}", std::strerror(errno)));
    }
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const int i = it->second;
    running.erase(it);
    const nlohmann::json& c = sweep["cells"][static_cast<std::size_t>(i)];
    const nlohmann::json s = cell_state(dir, c);
    const bool ok = exit_status(status) == 0 && s["state"] == "done";
    failed += !ok;
    fmt::print(
        "cell {} {}: {}\n", i, c["name"].get<std::string>(),
        ok ? "done, " + count_noun(s.value("rows", int64_t{0}), "row")
           : fmt::format("FAILED: {}", s.value("error", std::string("exit status ") +
                                                            std::to_string(exit_status(status)))));
  }
  return failed;
}

namespace {

// slurm/sweep_<n>.sbatch: one array task per cell, the task id the cell's index.
fs::path write_array_script(const fs::path& dir, const nlohmann::json& sweep, int n) {
  const fs::path script = dir / "slurm" / fmt::format("sweep_{}.sbatch", n);
  write_file_atomic(script, fmt::format(
      "#!/bin/bash\n"
      "# nnperf sweep {}: one Slurm array task per cell; the task id is the cell's index.\n"
      "# Written by `nnperf sweep run --slurm` on {}; submitted by submit_{}.sh.\n"
      "exec {} sweep run-cell {} \"$SLURM_ARRAY_TASK_ID\"\n",
      sweep["id"].get<std::string>(), iso8601_now(), n, shell_quote(self_exe().string()),
      shell_quote(dir.string())));
  fs::permissions(script, fs::perms::owner_exec, fs::perm_options::add);
  return script;
}

// sbatch's command line for the cells `todo` of the array script.
std::vector<std::string> sbatch_argv(const SlurmOptions& o, const fs::path& dir,
                                     const nlohmann::json& sweep, const std::vector<int>& todo,
                                     const fs::path& script) {
  // Slurm expands %-patterns in --output: a literal % in the folder is written %%.
  std::string out_pattern;
  for (char c : (dir / "slurm").string()) out_pattern += c == '%' ? std::string("%%") : std::string(1, c);
  std::vector<std::string> argv{o.sbatch, "--parsable", "--job-name=nnperf-sweep",
                                "--array=" + index_ranges(todo) +
                                    (o.max_parallel > 0 ? "%" + std::to_string(o.max_parallel) : ""),
                                "--output=" + out_pattern + "/%A_%a.out", "--chdir=" + dir.string(),
                                "--cpus-per-task=" + std::to_string(o.cpus_per_task > 0 ? o.cpus_per_task
                                                                                        : sweep.value("threads_per_cell", 1))};
  for (const auto& [flag, value] : {std::pair{"--partition=", o.partition}, std::pair{"--time=", o.time},
                                    std::pair{"--mem=", o.mem}, std::pair{"--account=", o.account},
                                    std::pair{"--gres=", o.gres}}) {
    if (!value.empty()) argv.push_back(flag + value);
  }
  argv.push_back(script.string());
  return argv;
}

// Each cell of `todo` queued, with `job` ("" before sbatch answers; after, only where the task
// has not started yet: run-cell records it running).
void mark_queued(const fs::path& dir, const nlohmann::json& sweep, const std::vector<int>& todo,
                 const std::string& job, const std::string& submitted) {
  for (int i : todo) {
    const nlohmann::json& cell = sweep["cells"][static_cast<std::size_t>(i)];
    if (!job.empty() && cell_state(dir, cell)["state"] != "queued") continue;
    nlohmann::json st = {{"state", "queued"},
                         {"slurm_job", job},
                         {"slurm_task", std::to_string(i)},
                         {"submitted", submitted}};
    // Before sbatch answers: who is waiting for it, so that status can tell a submission in
    // progress from one that was interrupted.
    if (job.empty()) st.update({{"host", hostname()}, {"pid", ::getpid()}});
    write_json_atomic(state_path(dir, cell["name"]), st);
  }
}

// sbatch run: the job id it answers, or Error.
std::string run_sbatch(const SlurmOptions& o, const std::vector<std::string>& argv,
                       const fs::path& script) {
  const auto [rc, out] = capture(argv);
  if (rc != 0) throw Error(fmt::format("{} exited with status {}; the script is {}", o.sbatch, rc, script.string()));
  const std::string job = out.substr(0, out.find_first_of(";\n"));
  if (job.empty() || job.find_first_not_of("0123456789") != std::string::npos) {
    throw Error(fmt::format("{}: unexpected answer '{}' (expected a job id)", o.sbatch, out));
  }
  return job;
}

}  // namespace

std::string submit_sweep_slurm(const fs::path& given, const SlurmOptions& o) {
  check_slurm_options(o);
  const fs::path dir = fs::absolute(given).lexically_normal();
  const nlohmann::json sweep = read_sweep(dir);
  const std::vector<int> todo = unfinished(dir, sweep, true);
  if (todo.empty())
    return fmt::format("sweep {}: every cell is done or running; nothing to submit\n",
                       dir.string());
  check_cells_fit_slurm(sweep, todo, o.mem);
  fs::create_directories(dir / "slurm");
  int n = 1;
  while (fs::exists(dir / "slurm" / fmt::format("sweep_{}.sbatch", n))) ++n;
  const fs::path script = write_array_script(dir, sweep, n);
  const std::vector<std::string> argv = sbatch_argv(o, dir, sweep, todo, script);
  std::string command;
  for (const auto& a : argv) command += (command.empty() ? "" : " ") + shell_quote(a);
  const fs::path submit = dir / "slurm" / fmt::format("submit_{}.sh", n);
  write_file_atomic(submit, "#!/bin/sh\nexec " + command + "\n");
  if (o.dry_run) {
    return fmt::format("sweep {}: {} in {} (not submitted: --dry-run); submit with sh {}\n",
                       dir.string(), count_noun(static_cast<int64_t>(todo.size()), "cell"),
                       script.string(), shell_quote(submit.string()));
  }
  const std::string submitted = iso8601_now();
  fs::create_directories(dir / "state");
  // Each cell's state before it is marked queued (null: no file), put back if sbatch fails.
  std::vector<std::optional<nlohmann::json>> before;
  for (int i : todo) {
    const fs::path p = state_path(dir, sweep["cells"][static_cast<std::size_t>(i)]["name"]);
    before.push_back(fs::exists(p) ? std::optional(read_json(p)) : std::nullopt);
  }
  mark_queued(dir, sweep, todo, "", submitted);
  std::string job;
  try {
    job = run_sbatch(o, argv, script);
  } catch (const Error&) {
    for (std::size_t k = 0; k < todo.size(); ++k) {
      const fs::path p = state_path(dir, sweep["cells"][static_cast<std::size_t>(todo[k])]["name"]);
      if (before[k]) {
        write_json_atomic(p, *before[k]);
      } else {
        fs::remove(p);
      }
    }
    throw;
  }
  mark_queued(dir, sweep, todo, job, submitted);
  const fs::path subs = dir / "slurm" / "submissions.json";
  nlohmann::json all = fs::exists(subs) ? read_json(subs) : nlohmann::json::array();
  all.push_back({{"job", job}, {"script", script.filename().string()}, {"cells", todo}, {"submitted", iso8601_now()}});
  write_json_atomic(subs, all);
  return fmt::format("sweep {}: submitted job array {} ({}: {}); follow with nnperf status {}\n",
                     dir.string(), job, count_noun(static_cast<int64_t>(todo.size()), "cell"),
                     index_ranges(todo), shell_quote(dir.string()));
}

namespace {

// What status says of a cell in state file `s`; `state` becomes "stale" for a running cell whose
// process is gone or a queued one that left squeue.
std::string cell_detail(const nlohmann::json& s, std::string& state) {
  if (state == "done") {
    return fmt::format("{}, {:.1f} s on {}", count_noun(s.value("rows", int64_t{0}), "row"),
                       s.value("seconds", 0.0), s.value("host", std::string("?")));
  }
  if (state == "running") {
    if (s.value("stale", false)) state = "stale";
    return fmt::format(
        "{}on {} since {}{}",
        s.contains("slurm_job") ? fmt::format("job {}_{} ", s["slurm_job"].get<std::string>(),
                                              s.value("slurm_task", std::string("?")))
                                : std::string(),
        s.value("node", s.value("host", std::string("?"))), s.value("started", std::string("?")),
        state == "stale" ? " (its process is gone: killed? run the sweep again)" : "");
  }
  if (state == "queued") {
    if (s.value("stale", false)) state = "stale";
    if (s.value("slurm_job", std::string()).empty()) {
      return state == "stale"
                 ? "marked for sbatch, which gave no job id (interrupted?); run the sweep again"
                 : "being submitted (sbatch has not answered yet)";
    }
    return fmt::format(
        "job {}_{} submitted {}{}", s.value("slurm_job", std::string("?")),
        s.value("slurm_task", std::string("?")), s.value("submitted", std::string("?")),
        state == "stale" ? " (no longer in squeue: cancelled? run the sweep again)" : "");
  }
  if (state == "failed") {
    return fmt::format("exit {}: {}", s.value("exit_code", 0), s.value("error", std::string()));
  }
  return "";
}

}  // namespace

std::string sweep_status(const fs::path& dir) {
  const nlohmann::json sweep = read_sweep(dir);
  std::string out;
  std::map<std::string, int> count;
  double spent = 0, est_done = 0, est_left = 0;
  for (const auto& c : sweep["cells"]) {
    nlohmann::json s;
    try {
      s = cell_state(dir, c);
    } catch (const Error& e) {
      ++count["unreadable"];
      out += fmt::format("{:<8} {:<40} {}\n", "?", c["name"].get<std::string>(), e.what());
      est_left += c["estimated_seconds"].get<double>();
      continue;
    }
    std::string state = s["state"];
    if (state == "done") {
      spent += s.value("seconds", 0.0);
      est_done += c["estimated_seconds"].get<double>();
    } else {
      est_left += c["estimated_seconds"].get<double>();
    }
    const std::string detail = cell_detail(s, state);
    ++count[state];
    out += fmt::format("{:<8} {:<40} {}\n", state, c["name"].get<std::string>(), detail);
  }
  const int total = static_cast<int>(sweep["cells"].size());
  const double ratio = est_done > 0 ? spent / est_done : 1.0;
  out += fmt::format("{}: {} done, {} running, {} failed, {} pending{}{}{}; {} spent; about {} "
                     "of work left ({})\n",
                     count_noun(total, "cell"), count["done"], count["running"], count["failed"], count["pending"],
                     count["queued"] > 0 ? fmt::format(", {} queued", count["queued"]) : "",
                     count["stale"] > 0 ? fmt::format(", {} stale", count["stale"]) : "",
                     count["unreadable"] > 0 ? fmt::format(", {} with an unreadable state file", count["unreadable"]) : "",
                     format_duration(spent), format_duration(est_left * ratio),
                     est_done > 0 ? fmt::format("estimates x {:.2f}, the measured/estimated ratio of the done cells", ratio)
                                  : "the plan's estimate");
  if (count["done"] == total) {
    try {
      out += merge_sweep(dir);
    } catch (const Error& e) {
      out += fmt::format("merge failed: {}\n", e.what());
    }
  }
  return out;
}

}  // namespace nnperf
