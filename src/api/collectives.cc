// C entry points for collectives, point-to-point and host streams: argument
// checks (an error names the argument and changes nothing), then the request
// runs now (NULL stream), on the stream's worker, or at braidGroupEnd.
#include <cstdint>
#include <cstring>

#include "core/stream.h"
#include "exec/reduce.h"
#include "runtime/device_calls.h"
#include "runtime/issue.h"
#include "runtime/last_error.h"
#include "runtime/live_handles.h"
#include "runtime/premul.h"

using namespace braid;

namespace {

using algo::Collective;

// Each check is inline and tests its condition first; the error's text is made out of
// line, only for a call that fails it, so a valid call's checks are a few compares.

// checkComm past its common case: an error, or a CUDA stream's check.
[[gnu::noinline]] Status checkCommRest(braidComm* comm, braidStream_t stream) {
  if (comm == nullptr) return invalidArgument("comm is NULL");
  if (!isLiveComm(comm)) {
    return invalidArgument("comm is not a live communicator (destroyed, aborted, or never made)");
  }
  if (isDestroyedStream(stream)) {
    return invalidArgument("stream was destroyed (braidStreamDestroy) and cannot be used");
  }
  return checkCudaStream(stream);  // or a CUDA stream
}

inline Status checkComm(braidComm* comm, braidStream_t stream) {
  // NULL or a live host stream
  if (comm != nullptr && isLiveComm(comm) && isValidStream(stream)) [[likely]] {
    return Status::ok();
  }
  return checkCommRest(comm, stream);
}

[[gnu::cold, gnu::noinline]] Status typeError(braidDataType_t datatype) {
  return invalidArgument("datatype " + std::to_string(static_cast<int>(datatype)) +
                         " is not a braidDataType_t (0.." + std::to_string(braidNumTypes - 1) +
                         ")");
}

inline Status checkType(braidDataType_t datatype) {
  if (static_cast<int>(datatype) >= 0 && datatype < braidNumTypes) [[likely]] {
    return Status::ok();
  }
  return typeError(datatype);
}

[[gnu::cold, gnu::noinline]] Status rankError(int value, int nranks, const char* what) {
  return invalidArgument(std::string(what) + " " + std::to_string(value) + " is outside 0.." +
                         std::to_string(nranks - 1));
}

inline Status checkRank(int value, int nranks, const char* what) {
  if (value >= 0 && value < nranks) [[likely]] return Status::ok();
  return rankError(value, nranks, what);
}

[[gnu::cold, gnu::noinline]] Status countError(size_t count, const char* what) {
  return invalidArgument(std::string(what) + " " + std::to_string(count) +
                         " is too large (a negative number passed as size_t?)");
}

// count elements times `blocks` must fit in memory.
inline Status checkCount(size_t count, size_t es, size_t blocks, const char* what) {
  // count * es * blocks > SIZE_MAX / 4, as one multiplication (es * blocks cannot overflow).
  size_t bytes = 0;
  if (!__builtin_mul_overflow(count, es * blocks, &bytes) && bytes <= SIZE_MAX / 4) [[likely]] {
    return Status::ok();
  }
  return countError(count, what);
}

[[gnu::cold, gnu::noinline]] Status nullError(const char* name) {
  return invalidArgument(std::string(name) + " is NULL");
}

inline Status checkBuffer(const void* p, size_t bytes, const char* name) {
  if (bytes == 0 || p != nullptr) [[likely]] return Status::ok();
  return nullError(name);
}

// Buffers may be equal (or sit where in-place placement puts them), but not
// overlap otherwise.
[[gnu::cold, gnu::noinline]] Status overlapError() {
  return invalidArgument("sendbuff and recvbuff overlap but are not placed for in-place use "
                         "(see braid.h for where sendbuff must sit in place)");
}

inline Status checkOverlap(const void* send, size_t sendBytes, const void* recv, size_t recvBytes,
                           const void* inPlaceSend) {
  auto s = reinterpret_cast<uintptr_t>(send);
  auto r = reinterpret_cast<uintptr_t>(recv);
  if (send == inPlaceSend || sendBytes == 0 || recvBytes == 0) return Status::ok();
  if (s < r + recvBytes && r < s + sendBytes) return overlapError();
  return Status::ok();
}

// One entry point's call with the communicator and stream it came on, and its checks' result.
struct ApiCall {
  braidComm* comm;
  braidStream_t stream;
  Call op;
  Status status;

  int nranks() const { return comm->comm->nranks(); }
  int rank() const { return comm->comm->rank(); }
  size_t es() const { return datatypeSize(op.datatype); }
};

// Validates what every call shares; returns false when `call.status` failed.
bool checkCommon(ApiCall& call) {
  call.status = checkComm(call.comm, call.stream);
  if (call.status.isOk()) call.status = checkType(call.op.datatype);
  if (call.status.isOk()) call.status = checkCount(call.op.count, call.es(), call.nranks(), "count");
  return call.status.isOk();
}

braidResult_t issue(ApiCall& call) {
  if (!call.status.isOk()) return finish(call.comm, call.status);
  // A collective of count 0 moves nothing on any rank (every rank passes the same count),
  // so once checked it returns at once, as NCCL's do: no peer is waited for, nothing is
  // queued, in a group or on a stream. An all-to-all-v's counts are its arrays.
  if (call.op.kind == Call::Kind::kCollective && call.op.count == 0 &&
      call.op.collective != Collective::kAllToAllv) {
    return finish(call.comm, Status::ok());
  }
  if (queueInGroup(call.comm, std::move(call.op), call.stream)) return braidSuccess;
  return issueOne(call.comm, std::move(call.op), call.stream);
}

ApiCall collective(braidComm* comm, braidStream_t stream, Collective c, const void* send,
                void* recv, size_t count, braidDataType_t datatype, braidRedOp_t op, int root) {
  ApiCall call{comm, stream, Call{}, Status::ok()};
  call.op.collective = c;
  call.op.send = send;
  call.op.recv = recv;
  call.op.count = count;
  call.op.datatype = datatype;
  call.op.op = op;
  call.op.root = root;
  if (!checkCommon(call)) return call;
  const bool reduces = c == Collective::kAllReduce || c == Collective::kReduceScatter ||
                       c == Collective::kReduce;
  if (reduces) call.status = resolveRedOp(comm, op, datatype, &call.op.op, &call.op.preMul);
  const bool rooted = c == Collective::kBroadcast || c == Collective::kReduce ||
                      c == Collective::kGather || c == Collective::kScatter;
  if (call.status.isOk() && rooted) call.status = checkRank(root, call.nranks(), "root");
  if (!call.status.isOk()) return call;
  // Bytes each buffer must hold on this rank, and where sendbuff sits in place.
  const size_t block = count * call.es();
  const size_t all = block * call.nranks();
  const bool isRoot = call.rank() == root;
  size_t sendBytes = block, recvBytes = block;
  const char* inPlace = static_cast<const char*>(recv);
  switch (c) {
    case Collective::kAllGather: recvBytes = all; inPlace += call.rank() * block; break;
    case Collective::kReduceScatter:
      sendBytes = all;
      inPlace = static_cast<const char*>(recv) - call.rank() * block;
      break;
    case Collective::kBroadcast: sendBytes = isRoot ? block : 0; break;
    case Collective::kReduce: recvBytes = isRoot ? block : 0; break;
    case Collective::kGather: recvBytes = isRoot ? all : 0; inPlace += root * block; break;
    case Collective::kScatter:
      sendBytes = isRoot ? all : 0;
      inPlace = static_cast<const char*>(recv) - root * block;
      break;
    case Collective::kAllToAll: sendBytes = recvBytes = all; break;
    default: break;
  }
  call.status = checkBuffer(send, sendBytes, "sendbuff");
  if (call.status.isOk()) call.status = checkBuffer(recv, recvBytes, "recvbuff");
  if (call.status.isOk()) call.status = checkOverlap(send, sendBytes, recv, recvBytes, inPlace);
  return call;
}

ApiCall pointToPoint(braidComm* comm, braidStream_t stream, Call::Kind kind, const void* send,
                  void* recv, size_t count, braidDataType_t datatype, int peer) {
  ApiCall call{comm, stream, Call{}, Status::ok()};
  call.op.kind = kind;
  call.op.send = send;
  call.op.recv = recv;
  call.op.count = count;
  call.op.datatype = datatype;
  call.op.peer = peer;
  if (!checkCommon(call)) return call;
  call.status = checkRank(peer, call.nranks(), "peer");
  if (call.status.isOk()) {
    call.status = kind == Call::Kind::kSend ? checkBuffer(send, count, "sendbuff")
                                                 : checkBuffer(recv, count, "recvbuff");
  }
  return call;
}

}  // namespace

extern "C" {

braidResult_t braidAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                             braidDataType_t datatype, braidRedOp_t op, braidComm_t comm,
                             braidStream_t stream) {
  ApiCall call = collective(comm, stream, Collective::kAllReduce, sendbuff, recvbuff, count,
                         datatype, op, 0);
  return issue(call);
}

braidResult_t braidAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                             braidDataType_t datatype, braidComm_t comm, braidStream_t stream) {
  ApiCall call = collective(comm, stream, Collective::kAllGather, sendbuff, recvbuff, sendcount,
                         datatype, braidSum, 0);
  return issue(call);
}

braidResult_t braidReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                 braidDataType_t datatype, braidRedOp_t op, braidComm_t comm,
                                 braidStream_t stream) {
  ApiCall call = collective(comm, stream, Collective::kReduceScatter, sendbuff, recvbuff, recvcount,
                         datatype, op, 0);
  return issue(call);
}

braidResult_t braidBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                             braidDataType_t datatype, int root, braidComm_t comm,
                             braidStream_t stream) {
  ApiCall call = collective(comm, stream, Collective::kBroadcast, sendbuff, recvbuff, count,
                         datatype, braidSum, root);
  return issue(call);
}

braidResult_t braidReduce(const void* sendbuff, void* recvbuff, size_t count,
                          braidDataType_t datatype, braidRedOp_t op, int root, braidComm_t comm,
                          braidStream_t stream) {
  ApiCall call = collective(comm, stream, Collective::kReduce, sendbuff, recvbuff, count, datatype,
                         op, root);
  return issue(call);
}

braidResult_t braidGather(const void* sendbuff, void* recvbuff, size_t count,
                          braidDataType_t datatype, int root, braidComm_t comm,
                          braidStream_t stream) {
  ApiCall call = collective(comm, stream, Collective::kGather, sendbuff, recvbuff, count, datatype,
                         braidSum, root);
  return issue(call);
}

braidResult_t braidScatter(const void* sendbuff, void* recvbuff, size_t count,
                           braidDataType_t datatype, int root, braidComm_t comm,
                           braidStream_t stream) {
  ApiCall call = collective(comm, stream, Collective::kScatter, sendbuff, recvbuff, count, datatype,
                         braidSum, root);
  return issue(call);
}

braidResult_t braidAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                            braidDataType_t datatype, braidComm_t comm, braidStream_t stream) {
  ApiCall call = collective(comm, stream, Collective::kAllToAll, sendbuff, recvbuff, count, datatype,
                         braidSum, 0);
  return issue(call);
}

braidResult_t braidAlltoAllv(const void* sendbuff, const size_t sendcounts[],
                             const size_t sdispls[], void* recvbuff, const size_t recvcounts[],
                             const size_t rdispls[], braidDataType_t datatype, braidComm_t comm,
                             braidStream_t stream) {
  ApiCall call = collective(comm, stream, Collective::kAllToAllv, sendbuff, recvbuff, 0, datatype,
                         braidSum, 0);
  if (call.status.isOk() && (!sendcounts || !sdispls || !recvcounts || !rdispls)) {
    call.status = invalidArgument("sendcounts, sdispls, recvcounts and rdispls must all be "
                                  "arrays of nranks elements");
  }
  if (!call.status.isOk()) return finish(comm, call.status);
  const int n = call.nranks();
  for (int p = 0; p < n && call.status.isOk(); ++p) {
    call.status = checkCount(sendcounts[p], call.es(), 1, "sendcounts[p]");
    if (call.status.isOk()) call.status = checkCount(recvcounts[p], call.es(), 1, "recvcounts[p]");
    if (call.status.isOk()) call.status = checkCount(sdispls[p], call.es(), 1, "sdispls[p]");
    if (call.status.isOk()) call.status = checkCount(rdispls[p], call.es(), 1, "rdispls[p]");
    if (call.status.isOk() && sendcounts[p] > 0 && sendbuff == nullptr) {
      call.status = invalidArgument("sendbuff is NULL but sendcounts[" + std::to_string(p) + "] > 0");
    }
    if (call.status.isOk() && recvcounts[p] > 0 && recvbuff == nullptr) {
      call.status = invalidArgument("recvbuff is NULL but recvcounts[" + std::to_string(p) + "] > 0");
    }
    for (int q = 0; q < p && call.status.isOk(); ++q) {  // received blocks must not overlap
      if (recvcounts[p] && recvcounts[q] && rdispls[p] < rdispls[q] + recvcounts[q] &&
          rdispls[q] < rdispls[p] + recvcounts[p]) {
        call.status = invalidArgument("recv blocks of ranks " + std::to_string(q) + " and " +
                                      std::to_string(p) + " overlap (rdispls/recvcounts)");
      }
    }
  }
  call.op.sendCounts.assign(sendcounts, sendcounts + n);
  call.op.sendDispls.assign(sdispls, sdispls + n);
  call.op.recvCounts.assign(recvcounts, recvcounts + n);
  call.op.recvDispls.assign(rdispls, rdispls + n);
  return issue(call);
}

braidResult_t braidSend(const void* sendbuff, size_t count, braidDataType_t datatype, int peer,
                        braidComm_t comm, braidStream_t stream) {
  ApiCall call = pointToPoint(comm, stream, Call::Kind::kSend, sendbuff, nullptr, count,
                           datatype, peer);
  return issue(call);
}

braidResult_t braidRecv(void* recvbuff, size_t count, braidDataType_t datatype, int peer,
                        braidComm_t comm, braidStream_t stream) {
  ApiCall call = pointToPoint(comm, stream, Call::Kind::kRecv, nullptr, recvbuff, count,
                           datatype, peer);
  return issue(call);
}

braidResult_t braidBarrier(braidComm_t comm, braidStream_t stream) {
  Status st = checkComm(comm, stream);
  if (!st.isOk()) return finish(comm, st);
  ApiCall call = collective(comm, stream, Collective::kAllReduce, &comm->barrierByte,
                         &comm->barrierByte, 1, braidUint8, braidMax, 0);
  return issue(call);
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
  stream->impl->synchronize();
  return braidSuccess;
}

braidResult_t braidStreamDestroy(braidStream_t stream) {
  if (stream == nullptr || !isValidStream(stream)) {
    return finish(nullptr, invalidArgument("stream is not a stream from braidStreamCreate"));
  }
  unregisterStream(stream);
  stream->impl.reset();  // finishes what is queued first; the struct stays (stream.h)
  return braidSuccess;
}

braidResult_t braidCommGetAlgorithm(braidComm_t comm, braidCollective_t collective, size_t count,
                                    braidDataType_t datatype, const char** algorithm,
                                    double* predictedUs) {
  static_assert(static_cast<int>(Collective::kAllToAllv) == braidCollAlltoAllv,
                "braidCollective_t follows algo::Collective");
  Status st = checkComm(comm, nullptr);
  if (st.isOk()) st = checkType(datatype);
  if (st.isOk() && (static_cast<int>(collective) < 0 || collective >= braidNumCollectives)) {
    st = invalidArgument("collective " + std::to_string(static_cast<int>(collective)) +
                         " is not a braidCollective_t (0.." +
                         std::to_string(braidNumCollectives - 1) + ")");
  }
  if (st.isOk()) st = checkCount(count, datatypeSize(datatype), 1, "count");
  if (!st.isOk()) return finish(comm, st);
  const auto c = static_cast<Collective>(collective);
  const uint64_t bytes = static_cast<uint64_t>(count) * datatypeSize(datatype);
  DeviceChoice device;  // once device calls run on the windows, theirs (device_calls.h)
  Expected<bool> onDevice = deviceCallChoice(comm, c, bytes, &device);
  if (!onDevice.isOk()) return finish(comm, onDevice.status());
  if (onDevice.value()) {
    if (algorithm != nullptr) *algorithm = device.name();
    if (predictedUs != nullptr) *predictedUs = device.predictedUs;
    return braidSuccess;
  }
  Expected<Selector::Choice> choice = comm->selector.choose(c, bytes);
  if (!choice.isOk()) return finish(comm, choice.status());
  if (algorithm != nullptr) *algorithm = choice.value().name();
  if (predictedUs != nullptr) *predictedUs = choice.value().predictedUs;
  return braidSuccess;
}

}  // extern "C"
