#include "tools/braidrun/options.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>

#include "tools/braidrun/rank_env.h"

namespace braid::run {
namespace {

constexpr long kMaxGraceMs = 3600L * 1000;  // an hour
constexpr double kMaxTimeoutSeconds = 366.0 * 24 * 3600;

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

Expected<long> parseInteger(std::string_view option, std::string_view text, long min, long max) {
  long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    return Status::error(std::string(option) + " " + quoted(text) + ": expected an integer from " +
                         std::to_string(min) + " to " + std::to_string(max));
  }
  return value;
}

Expected<std::chrono::milliseconds> parseSeconds(std::string_view option, std::string_view text) {
  double seconds = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc() || end != text.data() + text.size() || !(seconds > 0) ||
      seconds > kMaxTimeoutSeconds) {
    return Status::error(std::string(option) + " " + quoted(text) +
                         ": expected a number of seconds greater than 0 (e.g. 30 or 0.5)");
  }
  return std::chrono::milliseconds(std::max(1L, std::lround(seconds * 1000)));
}

Status checkRoot(std::string_view text) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return Status::error("--root " + quoted(text) + ": expected host:port, e.g. 10.0.0.1:29500");
  }
  Expected<long> port = parseInteger("--root port", text.substr(colon + 1), 1, 65535);
  return port.status();
}

bool isVariableName(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  });
}

// Adds "VAR=value" to `env`, replacing an earlier -x of the same VAR.
Status addEnvAssignment(std::string_view text, std::vector<std::string>& env) {
  size_t eq = text.find('=');
  std::string_view name = text.substr(0, eq);
  if (eq == std::string_view::npos || !isVariableName(name)) {
    return Status::error("-x " + quoted(text) + ": expected VAR=value with VAR made of letters, " +
                         "digits and '_'");
  }
  if (std::find(kRankVariables.begin(), kRankVariables.end(), name) != kRankVariables.end()) {
    return Status::error("-x " + quoted(text) + ": braidrun sets " + std::string(name) +
                         " itself for each rank (use -n or --root to change it)");
  }
  std::erase_if(env,
                [name](const std::string& e) { return e.starts_with(std::string(name) + "="); });
  env.emplace_back(text);
  return Status::ok();
}

bool takesValue(std::string_view name) {
  return name == "-n" || name == "--np" || name == "--root" || name == "--grace-ms" ||
         name == "-x" || name == "--timeout" || name == "--bind";
}

Status applyValueOption(std::string_view name, std::string_view value, Options& options) {
  if (name == "-n" || name == "--np") {
    Expected<long> n = parseInteger(name, value, 1, kMaxRanks);
    if (!n.isOk()) return n.status();
    options.num_ranks = static_cast<int>(n.value());
  } else if (name == "--root") {
    Status ok = checkRoot(value);
    if (!ok.isOk()) return ok;
    options.root = value;
  } else if (name == "--grace-ms") {
    Expected<long> ms = parseInteger(name, value, 0, kMaxGraceMs);
    if (!ms.isOk()) return ms.status();
    options.grace = std::chrono::milliseconds(ms.value());
  } else if (name == "-x") {
    return addEnvAssignment(value, options.extra_env);
  } else if (name == "--timeout") {
    Expected<std::chrono::milliseconds> timeout = parseSeconds(name, value);
    if (!timeout.isOk()) return timeout.status();
    options.timeout = timeout.value();
  } else if (name == "--bind") {
    if (value != "none" && value != "core" && value != "auto") {
      return Status::error("--bind " + quoted(value) + ": expected none, core or auto");
    }
    options.bind = value == "core" ? Bind::kCore : value == "none" ? Bind::kNone : Bind::kAuto;
  }
  return Status::ok();
}

// Splits "--name=value" and "-n4"/"-xVAR=value" into a name and an attached value.
std::pair<std::string_view, std::optional<std::string_view>> splitOption(std::string_view arg) {
  if (arg.starts_with("--")) {
    size_t eq = arg.find('=');
    if (eq != std::string_view::npos) return {arg.substr(0, eq), arg.substr(eq + 1)};
  } else if (arg.size() > 2 && (arg.starts_with("-n") || arg.starts_with("-x"))) {
    return {arg.substr(0, 2), arg.substr(2)};
  }
  return {arg, std::nullopt};
}

Status checkComplete(const Options& options) {
  if (options.num_ranks == 0) return Status::error("missing -n N (the number of ranks to start)");
  if (options.command.empty()) return Status::error("missing the command to run after the options");
  return Status::ok();
}

}  // namespace

Expected<CommandLine> parseCommandLine(int argc, const char* const* argv) {
  CommandLine parsed;
  int i = 1;
  for (; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') break;  // the command starts here
    auto [name, attached] = splitOption(arg);
    if (name == "-h" || name == "--help") {
      parsed.show_help = true;
      return parsed;
    }
    if (name == "--no-prefix" && !attached) {
      parsed.options.prefix_output = false;
      continue;
    }
    if (!takesValue(name)) return Status::error("unknown option " + quoted(arg));
    if (!attached && i + 1 >= argc) return Status::error(std::string(name) + " needs a value");
    Status applied = applyValueOption(name, attached ? *attached : argv[++i], parsed.options);
    if (!applied.isOk()) return applied;
  }
  parsed.options.command.assign(argv + i, argv + argc);
  Status complete = checkComplete(parsed.options);
  if (!complete.isOk()) return complete;
  return parsed;
}

std::string usageText() {
  return "usage: braidrun [options] -n N [--] command [args...]\n"
         "Run 'braidrun --help' for the options.\n";
}

std::string helpText() {
  return R"(usage: braidrun [options] -n N [--] command [args...]

Starts N copies of command on this machine, as ranks 0..N-1 of one Braid job.

Options:
  -n N, --np N      number of ranks to start, 1..1024 (required)
  --root HOST:PORT  address where rank 0 listens for the bootstrap
                    (default: 127.0.0.1 and a port that is free when braidrun starts)
  -x VAR=value      extra environment variable for every rank (repeatable)
  --no-prefix       do not prefix forwarded output lines with "[rank] "
  --grace-ms M      after a rank fails, how long the others may keep running to
                    finish or report the failure themselves before braidrun sends
                    them SIGTERM (then SIGKILL 2 s later); default 3000
  --timeout S       stop all ranks (SIGTERM, then SIGKILL 2 s later) and fail after
                    S seconds; fractions allowed; default: no limit
  --bind none|core|auto
                    core: rank r runs only on the (r mod N)-th of the N CPUs braidrun
                    may use (sched_setaffinity before exec; ranks share CPUs when
                    they outnumber them); none: wherever the kernel puts it;
                    auto (default): core when there are at least N ranks, else none
  -h, --help        print this help

Each rank's environment: braidrun's own, the -x variables, and
  BRAID_RANK, BRAID_LOCAL_RANK       the rank, 0..N-1
  BRAID_WORLD_SIZE, BRAID_LOCAL_SIZE N
  BRAID_ROOT                         HOST:PORT (see --root)
  BRAID_SECRET                       32 random hex characters, the same for all ranks

Output: each rank's stdout and stderr are re-printed line by line on braidrun's
stdout and stderr, prefixed with "[rank] ". A line longer than 64 KiB is printed
as several lines. Rank 0 reads braidrun's stdin; the other ranks read /dev/null.

Signals: SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to braidrun are
forwarded to every rank still running. If braidrun itself is killed, the ranks
receive SIGKILL.

Exit status:
  0        every rank exited with code 0
  C        the first rank to fail exited with code C (127: command not found)
  128+S    the first rank to fail was killed by signal S
  124      --timeout expired before the ranks finished
  2        bad command line
  1        braidrun could not start the ranks
)";
}

}  // namespace braid::run
