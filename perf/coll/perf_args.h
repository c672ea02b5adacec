// Command line of the perf tools: every nccl-tests option, long and short, with
// nccl-tests' meaning and default, and Braid's own choices on letters nccl-tests
// does not use. Header-only so unit tests can parse without the library. Not
// thread-safe: uses getopt's globals.
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
  // nccl-tests' options (its defaults).
  int nThreads = 1;  // -t: threads per process, each driving -g ranks
  int nGpus = 1;     // -g: ranks per thread
  size_t minBytes = 32u << 20;
  size_t maxBytes = 32u << 20;
  size_t stepFactor = 1;  // > 1: multiply; else add stepBytes
  size_t stepBytes = 1u << 20;
  int iters = 20;
  int aggIters = 1;  // -m: calls per timed iteration, issued in one group
  int warmupIters = 1;
  int runCycles = 1;     // -N: sweeps of the sizes; 0 runs until killed
  int parallelInit = 0;  // -p: each thread creates its own ranks' communicators
  int check = 1;         // check iterations per placement; 0: off
  std::vector<braidDataType_t> types{braidFloat32};
  std::vector<braidRedOp_t> ops{braidSum};
  int root = 0;
  int blocking = 0;          // -z: 1 wait+barrier per call, 2 wait per call, 3 per iteration
  int streamNull = 0;        // -y 1: the calls pass the NULL stream (they block)
  double timeoutSec = 0.0;   // -T: 0 for the library's default
  int graphLaunches = 0;     // -G n: the timed calls captured into a CUDA graph, launched n times
  int reportCpuTime = 0;     // -C 1: the time column is the time to issue the calls
  int reportTimestamps = 0;  // -S 1: each row ends with the time it was printed
  std::string jsonPath;      // -J: "" for none; written only when it ends in .json
  AverageMode average = AverageMode::kMean;
  int localRegister = 0;    // -R 1: braidCommRegister the buffers; 2: symmetric (as 1 here)
  int ctaPolicy = -1;       // -x: accepted; no CTAs on Braid's executors
  int deviceImpl = 0;       // -D: accepted; no device-side implementation
  int deviceCtaCount = 16;  // -V: accepted; no CTAs
  int memoryReport = 0;     // -M 1: a line with the buffers' memory
  int unalign = 0;          // -u n: buffers start n bytes past their alignment
  int perIterTiming = 0;    // -I 1: each iteration timed on its own
  int perIterSkip = 0;      // -K n: the per-iteration summary leaves out the first n
  // Braid's own.
  std::string algo;       // -A: "" for the library's choice
  int memAlloc = 0;       // -P 1: buffers from braidMemAlloc (peers read them in place)
  int deviceBuffers = 0;  // -E 1: send and receive buffers in CUDA device memory
  int shareGpu = 0;       // -Q 1: every rank on device 0 (perf_devices.h)
  bool help = false;
};

inline const char* perfUsage() {
  return "nccl-tests' options (same letters, meanings and defaults):\n"
         "  -t, --nthreads <n>            threads per process, each driving -g ranks (1)\n"
         "  -g, --ngpus <n>               ranks per thread (1); ranks = processes x -t x -g\n"
         "  -b, --minbytes <n>            smallest size, K/M/G suffixes (32M)\n"
         "  -e, --maxbytes <n>            largest size (32M)\n"
         "  -i, --stepbytes <n>           add n between sizes when -f is 1 (1M)\n"
         "  -f, --stepfactor <n>          multiply sizes by n (1: use -i)\n"
         "  -n, --iters <n>               timed iterations (20)\n"
         "  -m, --agg_iters <n>           calls per iteration, issued in one group (1)\n"
         "  -w, --warmup_iters <n>        warm-up iterations (1)\n"
         "  -N, --run_cycles <n>          sweeps of the sizes, each printed; 0: forever (1)\n"
         "  -p, --parallel_init <0/1>     each thread creates its ranks' communicators (0)\n"
         "  -c, --check <n>               check the results n times per placement; 0: off (1)\n"
         "  -o, --op <op>                 sum prod max min avg mulsum, or all (sum)\n"
         "  -d, --datatype <t>            int8 uint8 int32 uint32 int64 uint64 half float\n"
         "                                double bfloat16 f8e4m3 f8e5m2, or all (float)\n"
         "  -r, --root <r>                root of rooted collectives (0)\n"
         "  -z, --blocking <0-3>          1: wait and barrier after each call; 2: wait after\n"
         "                                each call; 3: wait and barrier after each\n"
         "                                iteration, the barrier left out of the time (0)\n"
         "  -y, --stream_null <0/1>       1: calls on the NULL stream, so each returns done;\n"
         "                                0: on a stream of the rank's, synchronised (0)\n"
         "  -T, --timeout <s>             seconds any wait may take (BRAID_TIMEOUT_MS)\n"
         "  -G, --cudagraph <n>           with device buffers: the -n calls captured into a\n"
         "                                CUDA graph launched n times (0)\n"
         "  -C, --report_cputime <0/1>    time column: the time to issue the calls (0)\n"
         "  -S, --report_timestamps <0/1> each row ends with the time it was printed (0)\n"
         "  -J, --output_file <f.json>    also write nccl-tests' JSON to f (never overwrites:\n"
         "                                f.0, f.1, ... when f exists)\n"
         "  -a, --average <0-3>           time across ranks: 0 rank 0's, 1 mean, 2 min, 3 max (1)\n"
         "  -R, --local_register <0-2>    1: buffers registered with braidCommRegister;\n"
         "                                2 (symmetric windows): registered as with 1 (0)\n"
         "  -x, --cta_policy <0-2>        accepted; no effect (no CTAs in Braid)\n"
         "  -D, --device_implementation <n>  accepted with -R 2; no effect (0)\n"
         "  -V, --device_cta_count <n>    accepted, 1-128; no effect (16)\n"
         "  -M, --memory_report <0/1>     print the buffers' memory (0)\n"
         "  -u, --unalign <n>             buffers start n bytes past their alignment (0)\n"
         "  -I, --per_iter_timing <0/1>   time each iteration: min, max, p99, cv columns (0)\n"
         "  -K, --per_iter_skip <n>       leave the first n iterations out of those (0)\n"
         "  -h, --help                    this text\n"
         "Braid's own options:\n"
         "  -A, --algo <name>             algorithm of the measured collective: ring tree\n"
         "                                halving_doubling bruck pairwise linear (sets\n"
         "                                BRAID_ALGO=<collective>:<name>; default: the library's)\n"
         "  -P, --memalloc <0/1>          1: buffers from braidMemAlloc, which peers on the node\n"
         "                                read in place (0)\n"
         "  -E, --device_buffers <0/1>    1: buffers in CUDA device memory, calls on a CUDA\n"
         "                                stream of the rank's (a build with CUDA only) (0)\n"
         "  -Q, --share_gpu <0/1>         with -E 1: 1 puts every rank on device 0; 0 maps\n"
         "                                them as nccl-tests does (process x -t x -g), and a\n"
         "                                rank past the last device is an error (0)\n";
}

namespace detail {
inline bool parseInt(const char* text, long lo, long hi, int* out) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 0);
  if (end == text || *end != '\0' || errno == ERANGE || v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}

// The int options: letter, range, member.
struct IntFlag {
  int flag;
  long lo, hi;
  int PerfArgs::*field;
  const char* what;
};
inline constexpr IntFlag kIntFlags[] = {
    {'t', 1, 1024, &PerfArgs::nThreads, "-t (threads, 1-1024)"},
    {'g', 1, 1024, &PerfArgs::nGpus, "-g (ranks per thread, 1-1024)"},
    {'n', 1, 1 << 30, &PerfArgs::iters, "-n (iterations, >= 1)"},
    {'m', 1, 1 << 20, &PerfArgs::aggIters, "-m (aggregated iterations, >= 1)"},
    {'w', 0, 1 << 30, &PerfArgs::warmupIters, "-w"},
    {'N', 0, 1 << 30, &PerfArgs::runCycles, "-N (run cycles, 0 = forever)"},
    {'p', 0, 1, &PerfArgs::parallelInit, "-p (0 or 1)"},
    {'c', 0, 1 << 20, &PerfArgs::check, "-c"},
    {'r', 0, 1 << 30, &PerfArgs::root, "root"},
    {'z', 0, 3, &PerfArgs::blocking, "-z (0-3)"},
    {'y', 0, 1, &PerfArgs::streamNull, "-y (0 or 1)"},
    {'G', 0, 1 << 20, &PerfArgs::graphLaunches, "-G"},
    {'C', 0, 1, &PerfArgs::reportCpuTime, "-C (0 or 1)"},
    {'S', 0, 1, &PerfArgs::reportTimestamps, "-S (0 or 1)"},
    {'R', 0, 2, &PerfArgs::localRegister, "-R (0, 1 or 2)"},
    {'x', 0, 2, &PerfArgs::ctaPolicy, "-x (0, 1 or 2)"},
    {'D', 0, 1 << 20, &PerfArgs::deviceImpl, "-D"},
    {'V', 1, 128, &PerfArgs::deviceCtaCount, "-V (1-128)"},
    {'M', 0, 1, &PerfArgs::memoryReport, "-M (0 or 1)"},
    {'u', 0, 4095, &PerfArgs::unalign, "-u (bytes, 0-4095)"},
    {'I', 0, 1, &PerfArgs::perIterTiming, "-I (0 or 1)"},
    {'K', 0, 1 << 30, &PerfArgs::perIterSkip, "-K"},
    {'P', 0, 1, &PerfArgs::memAlloc, "-P (0 or 1)"},
    {'E', 0, 1, &PerfArgs::deviceBuffers, "-E (0 or 1)"},
    {'Q', 0, 1, &PerfArgs::shareGpu, "-Q (0 or 1)"},
};
}  // namespace detail

// Applies flag `flag` with value `arg` (getopt's optarg) to *args; false with
// *error set when the value is bad.
inline bool applyPerfFlag(int flag, const char* arg, PerfArgs* args, std::string* error) {
  auto bad = [&](const char* what) {
    *error = std::string("invalid ") + what + " '" + (arg ? arg : "") + "'";
    return false;
  };
  for (const detail::IntFlag& f : detail::kIntFlags) {
    if (f.flag == flag) return detail::parseInt(arg, f.lo, f.hi, &(args->*f.field)) || bad(f.what);
  }
  int v = 0;
  switch (flag) {
    case 'b':
      return parseSize(arg, &args->minBytes) || bad("-b size");
    case 'e':
      return parseSize(arg, &args->maxBytes) || bad("-e size");
    case 'i':
      return parseSize(arg, &args->stepBytes) || bad("-i size");
    case 'f':
      return parseSize(arg, &args->stepFactor) || bad("-f factor");
    case 'd':
      return parseTypes(arg, &args->types) || bad("datatype");
    case 'o':
      return parseOps(arg, &args->ops) || bad("op");
    case 'a':
      if (!detail::parseInt(arg, 0, 3, &v)) return bad("-a (0-3)");
      args->average = static_cast<AverageMode>(v);
      return true;
    case 'J':
      args->jsonPath = arg;
      return true;
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
    case 'h':
      args->help = true;
      return true;
    default:
      *error = std::string("unhandled flag -") + static_cast<char>(flag);
      return false;
  }
}

// Rules between options, after every one is read; false with *error set.
inline bool checkPerfArgs(const PerfArgs& args, std::string* error) {
  if (args.minBytes > args.maxBytes) {
    *error = "-b (minbytes) is larger than -e (maxbytes)";
  } else if (args.stepFactor <= 1 && args.stepBytes == 0 && args.minBytes < args.maxBytes) {
    *error = "-i 0 with -f 1 never reaches -e; give -f above 1 or -i above 0";
  } else if (args.deviceImpl > 0 && args.localRegister != 2) {
    *error = "device implementation (-D > 0) requires symmetric registration (-R 2)";
  } else if (args.graphLaunches > 0 && args.deviceBuffers != 0 && args.nGpus > 1) {
    *error = "-G with -g above 1 is not supported: give each rank its own thread (-t)";
  } else if (args.perIterSkip > 0 && args.perIterSkip >= args.iters) {
    *error = "-K must leave at least one of the -n iterations";
  } else {
    return true;
  }
  return false;
}

// Parses argv into *args. On a bad flag or value returns false with *error
// saying which; *args then holds what was parsed so far.
inline bool parsePerfArgs(int argc, char** argv, PerfArgs* args, std::string* error) {
  static const option kLong[] = {
      {"nthreads", required_argument, nullptr, 't'},
      {"ngpus", required_argument, nullptr, 'g'},
      {"minbytes", required_argument, nullptr, 'b'},
      {"maxbytes", required_argument, nullptr, 'e'},
      {"stepbytes", required_argument, nullptr, 'i'},
      {"stepfactor", required_argument, nullptr, 'f'},
      {"iters", required_argument, nullptr, 'n'},
      {"agg_iters", required_argument, nullptr, 'm'},
      {"warmup_iters", required_argument, nullptr, 'w'},
      {"run_cycles", required_argument, nullptr, 'N'},
      {"parallel_init", required_argument, nullptr, 'p'},
      {"check", required_argument, nullptr, 'c'},
      {"op", required_argument, nullptr, 'o'},
      {"datatype", required_argument, nullptr, 'd'},
      {"root", required_argument, nullptr, 'r'},
      {"blocking", required_argument, nullptr, 'z'},
      {"stream_null", required_argument, nullptr, 'y'},
      {"timeout", required_argument, nullptr, 'T'},
      {"cudagraph", required_argument, nullptr, 'G'},
      {"report_cputime", required_argument, nullptr, 'C'},
      {"report_timestamps", required_argument, nullptr, 'S'},
      {"output_file", required_argument, nullptr, 'J'},
      {"average", required_argument, nullptr, 'a'},
      {"local_register", required_argument, nullptr, 'R'},
      {"cta_policy", required_argument, nullptr, 'x'},
      {"device_implementation", required_argument, nullptr, 'D'},
      {"device_cta_count", required_argument, nullptr, 'V'},
      {"memory_report", required_argument, nullptr, 'M'},
      {"memory", required_argument, nullptr, 'M'},  // nccl-tests' own table spells it so
      {"unalign", required_argument, nullptr, 'u'},
      {"per_iter_timing", required_argument, nullptr, 'I'},
      {"per_iter_skip", required_argument, nullptr, 'K'},
      {"help", no_argument, nullptr, 'h'},
      {"algo", required_argument, nullptr, 'A'},
      {"memalloc", required_argument, nullptr, 'P'},
      {"device_buffers", required_argument, nullptr, 'E'},
      {"share_gpu", required_argument, nullptr, 'Q'},
      {nullptr, 0, nullptr, 0},
  };
  static const char kShort[] =
      "t:g:b:e:i:f:n:m:w:N:p:c:o:d:r:z:y:T:G:C:S:J:a:R:x:D:V:M:u:I:K:hA:P:E:Q:";
  optind = 0;  // glibc: full reset, so a second parse (tests) starts afresh
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, kShort, kLong, nullptr)) != -1) {
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
  return checkPerfArgs(*args, error);
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

// The options accepted for nccl-tests' sake that change nothing on this run, as
// the header's one line names them ("" when none).
inline std::string noEffectOptions(const PerfArgs& a) {
  std::string out;
  auto add = [&out](const char* text) { out += (out.empty() ? "" : ", ") + std::string(text); };
  if (a.ctaPolicy >= 0) add("-x (CTA policy: Braid runs no CTAs)");
  if (a.deviceImpl > 0) add("-D (device implementation: Braid has none)");
  if (a.deviceCtaCount != 16) add("-V (device CTA count: Braid runs no CTAs)");
  if (a.localRegister == 2) add("-R 2 (symmetric windows: registered as with -R 1)");
  if (a.graphLaunches > 0 && a.deviceBuffers == 0) add("-G (CUDA graphs: host buffers, -E 0)");
  if (a.deviceBuffers != 0 && a.streamNull != 0) add("-y 1 (device buffers use the rank's stream)");
  if (a.deviceBuffers != 0 && a.localRegister != 0) add("-R (device buffers are not registered)");
  if (a.deviceBuffers != 0 && a.memAlloc != 0) add("-P (device buffers come from cudaMalloc)");
  if (a.deviceBuffers == 0 && a.shareGpu != 0) add("-Q (device sharing: host buffers, -E 0)");
  return out;
}

}  // namespace braid::perf
