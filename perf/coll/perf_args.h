// Command line of the perf tools (nccl-tests' flags). Header-only so unit tests
// can parse without the library. Not thread-safe: uses getopt's globals.
#pragma once

#include <getopt.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "perf/coll/perf_util.h"

namespace braid::perf {

struct PerfArgs {
  size_t minBytes = 32u << 20;
  size_t maxBytes = 32u << 20;
  size_t stepFactor = 1;  // > 1: multiply; else add stepBytes
  size_t stepBytes = 1u << 20;
  int iters = 20;
  int warmupIters = 1;
  int check = 1;  // check iterations per placement; 0: off
  std::vector<braidDataType_t> types{braidFloat32};
  std::vector<braidRedOp_t> ops{braidSum};
  int root = 0;
  AverageMode average = AverageMode::kMean;
  int blocking = 0;         // accepted; host calls on a NULL stream always block
  std::string jsonPath;     // -J: "" for none
  double timeoutSec = 0.0;  // -T: 0 for the library's default
  std::string algo;         // -A: "" for the library's choice
  int memAlloc = 0;         // -R 1: buffers from braidMemAlloc; 2: registered (peers read in place)
  int device = 0;           // -D 1: send and receive buffers in CUDA device memory
  int graphLaunches = 0;    // -G n: the timed calls captured into a CUDA graph, launched n times
  bool help = false;
};

inline const char* perfUsage() {
  return "  -b, --minbytes <n>       smallest size in bytes, K/M/G suffixes (default 32M)\n"
         "  -e, --maxbytes <n>       largest size in bytes (default 32M)\n"
         "  -i, --stepbytes <n>      add n between sizes when -f is not above 1 (default 1M)\n"
         "  -f, --stepfactor <n>     multiply sizes by n (default 1: use -i)\n"
         "  -n, --iters <n>          timed iterations (default 20)\n"
         "  -w, --warmup_iters <n>   warm-up iterations (default 1)\n"
         "  -c, --check <n>          check the results n times per placement; 0: off (default 1)\n"
         "  -d, --datatype <t>       int8 uint8 int32 uint32 int64 uint64 half|float16\n"
         "                           float|float32 double|float64 bfloat16, or all (default "
         "float)\n"
         "  -o, --op <op>            sum prod max min avg mulsum, or all (default sum)\n"
         "  -r, --root <r>           root rank of rooted collectives (default 0)\n"
         "  -a, --average <0-3>      time across ranks: 0 rank 0's, 1 mean, 2 min, 3 max (default "
         "1)\n"
         "  -z, --blocking <0/1>     accepted for nccl-tests compatibility; host calls always "
         "block\n"
         "  -J, --output_file <f>    also write the results to f as JSON (rank 0)\n"
         "  -T, --timeout <s>        seconds any wait may take (sets BRAID_TIMEOUT_MS)\n"
         "  -A, --algo <name>        algorithm of the measured collective: ring tree\n"
         "                           halving_doubling bruck pairwise linear (sets\n"
         "                           BRAID_ALGO=<collective>:<name>; default: the library's)\n"
         "  -R, --memalloc <0-2>     1: buffers from braidMemAlloc, which peers on the node\n"
         "                           read in place (as nccl-tests' -R with ncclMemAlloc);\n"
         "                           2: from the heap in whole pages, registered with\n"
         "                           braidCommRegister, which shares those pages so peers\n"
         "                           read them in place\n"
         "  -D, --device <0/1>       1: send and receive buffers in CUDA device memory (the\n"
         "                           calls run on a CUDA stream of the tool's; a build with\n"
         "                           CUDA only)\n"
         "  -G, --cudagraph <n>      with -D 1: capture the -n timed calls into a CUDA graph\n"
         "                           and time n launches of it (0: no graph; default 0)\n"
         "  -h, --help               this text\n";
}

namespace detail {
inline bool parseInt(const char* text, long lo, long hi, int* out) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE || v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}
}  // namespace detail

// Applies flag `flag` with value `arg` (getopt's optarg) to *args; false with
// *error set when the value is bad.
inline bool applyPerfFlag(int flag, const char* arg, PerfArgs* args, std::string* error) {
  auto bad = [&](const char* what) {
    *error = std::string("invalid ") + what + " '" + (arg ? arg : "") + "'";
    return false;
  };
  int v = 0;
  switch (flag) {
    case 'b': return parseSize(arg, &args->minBytes) || bad("-b size");
    case 'e': return parseSize(arg, &args->maxBytes) || bad("-e size");
    case 'i': return parseSize(arg, &args->stepBytes) || bad("-i size");
    case 'f': return parseSize(arg, &args->stepFactor) || bad("-f factor");
    case 'n': return detail::parseInt(arg, 1, 1 << 30, &args->iters) || bad("-n");
    case 'w': return detail::parseInt(arg, 0, 1 << 30, &args->warmupIters) || bad("-w");
    case 'c': return detail::parseInt(arg, 0, 1 << 20, &args->check) || bad("-c");
    case 'd': return parseTypes(arg, &args->types) || bad("datatype");
    case 'o': return parseOps(arg, &args->ops) || bad("op");
    case 'r': return detail::parseInt(arg, 0, 1 << 30, &args->root) || bad("root");
    case 'z': return detail::parseInt(arg, 0, 1, &args->blocking) || bad("-z");
    case 'R': return detail::parseInt(arg, 0, 2, &args->memAlloc) || bad("-R (0, 1 or 2)");
    case 'D': return detail::parseInt(arg, 0, 1, &args->device) || bad("-D (0 or 1)");
    case 'G':
      return detail::parseInt(arg, 0, 1 << 20, &args->graphLaunches) || bad("-G");
    case 'a':
      if (!detail::parseInt(arg, 0, 3, &v)) return bad("-a (0-3)");
      args->average = static_cast<AverageMode>(v);
      return true;
    case 'J': args->jsonPath = arg; return true;
    case 'A':
      if (*arg == '\0') return bad("-A algorithm");
      args->algo = arg;
      return true;
    case 'T': {
      char* end = nullptr;
      double sec = std::strtod(arg, &end);
      if (end == arg || *end != '\0' || !(sec > 0.0) || sec > 1e7) return bad("-T seconds");
      args->timeoutSec = sec;
      return true;
    }
    case 'h': args->help = true; return true;
    default:
      *error = std::string("unhandled flag -") + static_cast<char>(flag);
      return false;
  }
}

// Parses argv into *args. On a bad flag or value returns false with *error
// saying which; *args then holds what was parsed so far.
inline bool parsePerfArgs(int argc, char** argv, PerfArgs* args, std::string* error) {
  static const option kLong[] = {
      {"minbytes", required_argument, nullptr, 'b'},
      {"maxbytes", required_argument, nullptr, 'e'},
      {"stepbytes", required_argument, nullptr, 'i'},
      {"stepfactor", required_argument, nullptr, 'f'},
      {"iters", required_argument, nullptr, 'n'},
      {"warmup_iters", required_argument, nullptr, 'w'},
      {"check", required_argument, nullptr, 'c'},
      {"datatype", required_argument, nullptr, 'd'},
      {"op", required_argument, nullptr, 'o'},
      {"root", required_argument, nullptr, 'r'},
      {"average", required_argument, nullptr, 'a'},
      {"blocking", required_argument, nullptr, 'z'},
      {"output_file", required_argument, nullptr, 'J'},
      {"timeout", required_argument, nullptr, 'T'},
      {"algo", required_argument, nullptr, 'A'},
      {"memalloc", required_argument, nullptr, 'R'},
      {"device", required_argument, nullptr, 'D'},
      {"cudagraph", required_argument, nullptr, 'G'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  optind = 0;  // glibc: full reset, so a second parse (tests) starts afresh
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "b:e:i:f:n:w:c:d:o:r:a:z:J:T:A:R:D:G:h", kLong, nullptr)) !=
         -1) {
    if (c == '?' || c == ':') {
      char opt[2] = {static_cast<char>(optopt), '\0'};
      *error = optopt ? std::string("unknown flag or missing value: -") + opt
                      : std::string("unknown flag: ") + argv[optind - 1];
      return false;
    }
    if (!applyPerfFlag(c, optarg, args, error)) return false;
  }
  if (optind < argc) {
    *error = std::string("unexpected argument '") + argv[optind] + "'";
    return false;
  }
  if (args->graphLaunches > 0 && args->device == 0) {
    *error = "-G (CUDA graph launches) needs device buffers: add -D 1";
    return false;
  }
  if (args->minBytes > args->maxBytes) {
    *error = "-b (minbytes) is larger than -e (maxbytes)";
    return false;
  }
  if (args->stepFactor <= 1 && args->stepBytes == 0 && args->minBytes < args->maxBytes) {
    *error = "-i 0 with -f 1 never reaches -e; give -f above 1 or -i above 0";
    return false;
  }
  return true;
}

// BRAID_ALGO's value for -A `name` on `collective` (BRAID_ALGO's name for it):
// "allreduce" and "tree" give "allreduce:tree".
inline std::string algoSpec(const char* collective, const std::string& name) {
  return std::string(collective) + ":" + name;
}

// The header's "# Algorithm:" text: -A's name, else what a BRAID_ALGO from the
// environment (envAlgo, nullptr when unset) says, else "default".
inline std::string algoLabel(const std::string& algo, const char* envAlgo) {
  if (!algo.empty()) return algo;
  if (envAlgo != nullptr && *envAlgo != '\0') return std::string("BRAID_ALGO=") + envAlgo;
  return "default";
}

}  // namespace braid::perf
