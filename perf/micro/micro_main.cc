// braid-micro: every micro benchmark of perf/micro in one program.
//
//   build/perf/micro/braid-micro                        everything (~1 min)
//   build/perf/micro/braid-micro --benchmark_filter=handOff
//
// Google Benchmark's flags all work; without --benchmark_min_time each
// benchmark runs for 0.1 s instead of the library's 0.5 s, so that the whole
// set fits in about a minute.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

int main(int argc, char** argv) {
  std::vector<char*> args(argv, argv + argc);
  bool minTimeGiven = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--benchmark_min_time", 20) == 0) minTimeGiven = true;
  }
  static char shortRuns[] = "--benchmark_min_time=0.1";
  if (!minTimeGiven) args.insert(args.begin() + 1, shortRuns);
  int n = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
