// braid-info: what this Braid build is and how it is configured.
//   braid-info          version, reduction kernels, transports, algorithms
//   braid-info --env    every BRAID_* variable: its value here, default, NCCL
//                       fallback and a line of doc
//   braid-info --dump PID...  asks running Braid processes to print their
//                       communicators' in-flight operations (BRAID_DUMP_SIGNAL,
//                       SIGUSR1 by default) on their stderr
// Built beside the library (it reads the internal variable table), so it sits
// here rather than under tools/, which uses the public API only.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "algorithms/registry.h"
#include "braid/braid.h"
#include "core/env.h"
#include "exec/reduce.h"
#include "runtime/dump.h"
#include "transports/registry.h"

namespace {

void printEnv() {
  std::printf("%-24s %-14s %-10s %s\n", "variable", "value", "default", "meaning");
  for (const braid::EnvVar& v : braid::envTable()) {
    const char* set = std::getenv(v.name);
    const char* fallback = v.fallback ? std::getenv(v.fallback) : nullptr;
    std::string value = set ? set : fallback ? std::string(fallback) + " (" + v.fallback + ")" : "-";
    std::printf("%-24s %-14s %-10s %s%s%s\n", v.name, value.c_str(),
                v.defaultValue ? v.defaultValue : "-", v.doc,
                v.fallback ? "; also read as " : "", v.fallback ? v.fallback : "");
  }
}

void printBuild() {
  int version = 0;
  braidGetVersion(&version);
  std::printf("Braid %d.%d.%d\n", version / 10000, version / 100 % 100, version % 100);
  std::printf("reduction kernels: %s\n", braid::reduceIsa());
  std::printf("transports: %s\n", braid::transport::builtTransports().c_str());
  std::printf("algorithms:");
  for (int i = 0; i < braid::algo::kNumAlgorithms; ++i) {
    std::printf(" %s", braid::algo::algorithmName(static_cast<braid::algo::Algorithm>(i)));
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--env") == 0) {
    printEnv();
    return 0;
  }
  if (argc == 1) {
    printBuild();
    return 0;
  }
  if (argc >= 3 && std::strcmp(argv[1], "--dump") == 0) {
    const int sig = braid::parseDumpSignal(braid::envString("BRAID_DUMP_SIGNAL"));
    if (sig <= 0) {
      std::fprintf(stderr, "braid-info: BRAID_DUMP_SIGNAL names no signal to send\n");
      return 2;
    }
    int rc = 0;
    for (int i = 2; i < argc; ++i) {
      const int pid = std::atoi(argv[i]);
      if (pid <= 0 || kill(pid, sig) != 0) {
        std::fprintf(stderr, "braid-info: cannot signal pid '%s'\n", argv[i]);
        rc = 1;
      }
    }
    return rc;
  }
  std::fprintf(stderr, "usage: braid-info [--env | --dump PID...]\n");
  return 2;
}
