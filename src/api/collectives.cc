// C entry points for collectives and host streams: argument checks, then the
// operation runs now (NULL stream) or on the stream's worker.
#include <cstdint>
#include <cstring>

#include "algorithms/ring/ring.h"
#include "api/handle.h"
#include "core/stream.h"
#include "exec/reduce.h"

using namespace braid;

namespace {

constexpr size_t kMaxCachedSchedules = 16;

bool overlaps(const void* a, const void* b, size_t bytes) {
  auto x = reinterpret_cast<uintptr_t>(a);
  auto y = reinterpret_cast<uintptr_t>(b);
  return x != y && x < y + bytes && y < x + bytes;
}

Status checkCommon(braidComm* comm, braidStream_t stream) {
  if (comm == nullptr) return invalidArgument("comm is NULL");
  if (!isLiveComm(comm)) {
    return invalidArgument("comm is not a live communicator (destroyed, aborted, or never made)");
  }
  if (!isValidStream(stream)) {
    return invalidArgument("stream is neither NULL nor a stream from braidStreamCreate");
  }
  return Status::ok();
}

Status checkReduction(braidDataType_t datatype, braidRedOp_t op) {
  if (static_cast<int>(datatype) < 0 || datatype >= braidNumTypes) {
    return invalidArgument("datatype " + std::to_string(static_cast<int>(datatype)) +
                           " is not a braidDataType_t (0.." + std::to_string(braidNumTypes - 1) +
                           ")");
  }
  if (static_cast<int>(op) < 0 || op >= braidNumOps) {
    return invalidArgument("op " + std::to_string(static_cast<int>(op)) +
                           " is not a braidRedOp_t (0.." + std::to_string(braidNumOps - 1) + ")");
  }
  return Status::ok();
}

const algo::Schedule& allReduceSchedule(braidComm* comm, uint64_t count, uint32_t elemSize,
                                        bool inPlace) {
  auto& cache = comm->schedules;
  for (auto it = cache.begin(); it != cache.end(); ++it) {
    if (it->count == count && it->elemSize == elemSize && it->inPlace == inPlace) {
      cache.splice(cache.begin(), cache, it);
      return cache.front().schedule;
    }
  }
  const CommConfig& cfg = comm->comm->config();
  algo::CollArgs args;
  args.rank = comm->comm->rank();
  args.nranks = comm->comm->nranks();
  args.count = count;
  args.elemSize = elemSize;
  args.inPlace = inPlace;
  // Half the FIFO per step: the first send of a round always fits, and a rank
  // can run a step ahead of its neighbour.
  args.maxStepElems = std::max<uint64_t>(1, cfg.sliceBytes * (cfg.slots / 2) / elemSize);
  cache.push_front({count, elemSize, inPlace, algo::ringAllReduce(args)});
  if (cache.size() > kMaxCachedSchedules) cache.pop_back();
  return cache.front().schedule;
}

Status runAllReduce(braidComm* comm, const void* send, void* recv, size_t count,
                    braidDataType_t datatype, braidRedOp_t op) {
  std::lock_guard<std::mutex> lock(comm->opMu);
  const size_t elem = datatypeSize(datatype);
  OpDesc desc;
  desc.collective = "allreduce";
  desc.algorithm = "ring";
  desc.seq = comm->comm->nextSeq();
  desc.bytes = count * elem;
  desc.datatype = datatype;
  desc.op = op;
  const algo::Schedule& s = allReduceSchedule(comm, count, elem, send == recv);
  return comm->exec->run(s, ExecBuffers{send, recv}, desc);
}

}  // namespace

extern "C" {

braidResult_t braidAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                             braidDataType_t datatype, braidRedOp_t op, braidComm_t comm,
                             braidStream_t stream) {
  Status st = checkCommon(comm, stream);
  if (st.isOk()) st = checkReduction(datatype, op);
  const size_t elem = st.isOk() ? datatypeSize(datatype) : 1;
  if (st.isOk() && count > SIZE_MAX / elem / 2) {
    st = invalidArgument("count " + std::to_string(count) + " is too large (negative?)");
  }
  if (st.isOk() && count > 0 && (sendbuff == nullptr || recvbuff == nullptr)) {
    st = invalidArgument(sendbuff == nullptr ? "sendbuff is NULL" : "recvbuff is NULL");
  }
  if (st.isOk() && overlaps(sendbuff, recvbuff, count * elem)) {
    st = invalidArgument("sendbuff and recvbuff overlap without being equal (in place means "
                         "sendbuff == recvbuff)");
  }
  if (!st.isOk()) return finish(comm, st);
  if (stream == nullptr) return finish(comm, runAllReduce(comm, sendbuff, recvbuff, count,
                                                          datatype, op));
  comm->inflight.fetch_add(1);
  stream->impl.enqueue([=] {
    Status result = runAllReduce(comm, sendbuff, recvbuff, count, datatype, op);
    if (!result.isOk()) {
      comm->comm->raiseAsyncError(result);
      finish(comm, result);
    }
    comm->inflight.fetch_sub(1);
  });
  return braidSuccess;
}

braidResult_t braidStreamCreate(braidStream_t* stream) {
  if (stream == nullptr) return finish(nullptr, invalidArgument("stream is NULL"));
  auto* s = new braidStream();
  registerStream(s);
  *stream = s;
  return braidSuccess;
}

braidResult_t braidStreamSynchronize(braidStream_t stream) {
  if (stream == nullptr) return braidSuccess;  // the NULL stream is always idle
  if (!isValidStream(stream)) {
    return finish(nullptr, invalidArgument("stream is not a stream from braidStreamCreate"));
  }
  stream->impl.synchronize();
  return braidSuccess;
}

braidResult_t braidStreamDestroy(braidStream_t stream) {
  if (stream == nullptr || !isValidStream(stream)) {
    return finish(nullptr, invalidArgument("stream is not a stream from braidStreamCreate"));
  }
  unregisterStream(stream);
  delete stream;  // finishes what is queued first
  return braidSuccess;
}

}  // extern "C"
