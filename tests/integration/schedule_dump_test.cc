// BRAID_SCHEDULE_DUMP over real processes: what each rank writes, read back as JSON.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "algorithms/schedule_json.h"
#include "braid/braid.h"
#include "spawn.h"

namespace braid::test {
namespace {

// BRAID_SCHEDULE_DUMP: each rank appends the schedules it builds to <prefix>.<pid>.json,
// every object valid JSON (python3 parses the stream); a schedule used twice is written
// once (cached), all-to-all-v once per call; the text is the schedule the registry builds.
int scheduleDumpBody() {
  braidComm_t comm = nullptr;
  if (braidCommInitFromEnv(&comm, nullptr) != braidSuccess) return 2;
  int r = 0;
  braidCommUserRank(comm, &r);
  std::vector<float> a(1000, 1.0f), b(1000);
  int bad = 0;
  for (int i = 0; i < 2; ++i) {
    bad += braidAllReduce(a.data(), b.data(), 1000, braidFloat32, braidSum, comm, nullptr) != 0;
    // Rank s sends 3 + s + 2d + i elements to rank d.
    const size_t sc[2] = {size_t(3 + r + i), size_t(5 + r + i)};
    const size_t rc[2] = {size_t(3 + 2 * r + i), size_t(4 + 2 * r + i)}, displs[2] = {0, 100};
    bad += braidAlltoAllv(a.data(), sc, displs, b.data(), rc, displs, braidFloat32, comm,
                          nullptr) != 0;
  }
  if (bad != 0) fprintf(stderr, "rank %d: %s\n", r, braidGetLastError(comm));
  braidCommDestroy(comm);
  return bad;
}

// The objects of a dump file, each its text.
std::vector<std::string> dumpedObjects(const std::string& path) {
  std::ifstream in(path);
  std::stringstream all;
  all << in.rdbuf();
  const std::string text = all.str(), end = "\n]}\n";
  std::vector<std::string> objects;
  for (size_t at = 0, next; (next = text.find(end, at)) != std::string::npos;
       at = next + end.size()) {
    objects.push_back(text.substr(at, next + end.size() - at));
  }
  return objects;
}

TEST(ScheduleDump, EveryRankWritesTheSchedulesItBuildsAsJson) {
  char dir[] = "/tmp/braid-dump-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  struct RemoveDir {
    const char* path;
    ~RemoveDir() { (void)std::system((std::string("rm -rf ") + path).c_str()); }
  } cleanup{dir};
  Env env = jobEnv(2);
  env["BRAID_SCHEDULE_DUMP"] = std::string(dir) + "/sched";
  env["BRAID_ALGO"] = "allreduce:ring;alltoallv:pairwise";
  auto outcomes = runRanks(
      2, env, [](int) { return scheduleDumpBody(); }, 120);
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(outcomes[r].exitCode, 0) << "rank " << r << ":\n" << outcomes[r].output;
    const std::string path =
        std::string(dir) + "/sched." + std::to_string(outcomes[r].pid) + ".json";
    const std::string check =
        "python3 -c \"import json,sys; t=open(sys.argv[1]).read(); d=json.JSONDecoder(); i=0\n"
        "while t[i:].strip(): o,i=d.raw_decode(t,i); i+=len(t[i:])-len(t[i:].lstrip())\" " +
        path;
    EXPECT_EQ(std::system(check.c_str()), 0) << path << " is not a stream of JSON values";
    int allReduce = 0, allToAllv = 0;
    for (const std::string& o : dumpedObjects(path)) {
      if (o.find("\"collective\": \"alltoallv\"") != std::string::npos) ++allToAllv;
      if (o.find("\"collective\": \"allreduce\", \"algorithm\": \"ring\"") == std::string::npos ||
          o.find("\"count\": 1000,") == std::string::npos) {
        continue;
      }
      ++allReduce;
      algo::CollArgs args;
      args.rank = r;
      args.nranks = 2;
      args.count = 1000;
      args.elemSize = 4;
      const size_t at = o.find("\"maxStepElems\": ") + 16;
      args.maxStepElems = std::stoull(o.substr(at));
      EXPECT_EQ(o, algo::scheduleJson(algo::buildSchedule(algo::Algorithm::kRing, args), args,
                                      "ring", "host"));
    }
    EXPECT_EQ(allReduce, 1) << "rank " << r << ": the 1000-float ring all-reduce, once";
    EXPECT_EQ(allToAllv, 2) << "rank " << r << ": each all-to-all-v call";
  }
}

}  // namespace
}  // namespace braid::test
