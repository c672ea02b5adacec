// braidrun's command line: what it means (Options), how it is read (parseCommandLine) and
// the text of --help. Pure functions of argv; thread-safe.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "tools/braidrun/status.h"

namespace braid::run {

inline constexpr int kMaxRanks = 1024;
inline constexpr int kDefaultGraceMs = 3000;
// Exit codes of braidrun itself (a failing rank's own code is passed through; see --help).
inline constexpr int kExitUsage = 2;
inline constexpr int kExitLaunchFailed = 1;
inline constexpr int kExitTimeout = 124;

// Where ranks may run: anywhere braidrun may (kNone), or rank r on one CPU, the (r mod N)-th
// of the N CPUs braidrun's own affinity allows (kCore; repeatable placement for benchmarks),
// or kCore when the ranks are at least N and kNone below (kAuto, the default: ranks that
// share CPUs and float between them run steadier bound).
enum class Bind { kNone, kCore, kAuto };

struct Options {
  int num_ranks = 0;
  std::string root;           // "host:port"; empty: pick a free loopback port
  bool prefix_output = true;  // "[rank] " before every forwarded line
  std::chrono::milliseconds grace{kDefaultGraceMs};
  std::vector<std::string> extra_env;  // "VAR=value" from -x, in command-line order
  std::optional<std::chrono::milliseconds> timeout;
  Bind bind = Bind::kAuto;
  std::vector<std::string> command;  // program and its arguments
};

struct CommandLine {
  bool show_help = false;  // -h/--help: print helpText() and exit 0; options are not checked
  Options options;
};

// Reads argv. An error's message says which argument is wrong and what is expected; the
// caller prints it with usageText() and exits kExitUsage.
Expected<CommandLine> parseCommandLine(int argc, const char* const* argv);

// The one-line synopsis and a pointer to --help.
std::string usageText();
// Everything: options, the environment each rank gets, output, signals, exit codes.
std::string helpText();

}  // namespace braid::run
