#include "runtime/schedule_cache.h"

#include "runtime/schedule_dump.h"

namespace braid {
namespace {

constexpr size_t kMaxCachedSchedules = 32;

}  // namespace

const algo::Schedule& scheduleFor(braidComm* comm, const algo::CollArgs& args, algo::Algorithm alg,
                                  const char* executor) {
  if (args.collective == algo::Collective::kAllToAllv) {
    comm->allToAllv = algo::buildSchedule(alg, args);
    dumpSchedule(comm->allToAllv, args, alg, executor);
    return comm->allToAllv;
  }
  auto& cache = comm->schedules;
  for (auto it = cache.begin(); it != cache.end(); ++it) {
    if (it->collective == args.collective && it->algorithm == alg && it->count == args.count &&
        it->elemSize == args.elemSize && it->inPlace == args.inPlace && it->root == args.root &&
        it->maxStepElems == args.maxStepElems && it->windowElems == args.windowElems &&
        it->scaledPut == args.scaledPut && it->user == nullptr) {
      cache.splice(cache.begin(), cache, it);
      return cache.front().schedule;
    }
  }
  cache.push_front({args.collective, alg, args.count, args.elemSize, args.inPlace, args.root,
                    args.maxStepElems, args.windowElems, args.scaledPut, nullptr,
                    args.windowElems != 0 ? algo::buildWindowSchedule(alg, args)
                                          : algo::buildSchedule(alg, args)});
  if (cache.size() > kMaxCachedSchedules) cache.pop_back();
  dumpSchedule(cache.front().schedule, args, alg, executor);
  return cache.front().schedule;
}

Expected<const algo::Schedule*> userScheduleFor(braidComm* comm, const algo::CollArgs& args,
                                                const algo::AlgoFile& file) {
  auto& cache = comm->schedules;
  for (auto it = cache.begin(); it != cache.end(); ++it) {
    if (it->user == &file && it->count == args.count && it->elemSize == args.elemSize &&
        it->inPlace == args.inPlace && it->root == args.root &&
        it->maxStepElems == args.maxStepElems && it->windowElems == args.windowElems) {
      cache.splice(cache.begin(), cache, it);
      return &cache.front().schedule;
    }
  }
  const algo::FileProgram* program = file.programFor(args.nranks);
  if (program == nullptr) {
    return internalError(file.name + " has no program for " + std::to_string(args.nranks) +
                         " ranks");
  }
  BRAID_ASSIGN_OR_RETURN(algo::Schedule s, algo::instantiate(file, *program, args));
  cache.push_front({args.collective, algo::Algorithm::kRing, args.count, args.elemSize,
                    args.inPlace, args.root, args.maxStepElems, args.windowElems, false, &file,
                    std::move(s)});
  if (cache.size() > kMaxCachedSchedules) cache.pop_back();
  dumpUserSchedule(cache.front().schedule, args, file.name.c_str());
  return &cache.front().schedule;
}

}  // namespace braid
