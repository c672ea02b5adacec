#include "algorithms/schedule.h"

namespace braid::algo {

const char* opKindName(OpKind op) {
  switch (op) {
    case OpKind::kSend:
      return "send";
    case OpKind::kRecv:
      return "recv";
    case OpKind::kRecvReduce:
      return "recvReduce";
    case OpKind::kRecvReduceSend:
      return "recvReduceSend";
    case OpKind::kRecvReduceCopySend:
      return "recvReduceCopySend";
    case OpKind::kRecvCopySend:
      return "recvCopySend";
    case OpKind::kCopy:
      return "copy";
    case OpKind::kReduceLocal:
      return "reduceLocal";
    case OpKind::kBeginRound:
      return "beginRound";
    case OpKind::kPut:
      return "put";
    case OpKind::kSignal:
      return "signal";
    case OpKind::kWait:
      return "wait";
    case OpKind::kReducePeers:
      return "reducePeers";
    case OpKind::kCopyPeer:
      return "copyPeer";
  }
  return "?";
}

const char* bufRefName(BufRef b) {
  switch (b) {
    case BufRef::kInput:
      return "input";
    case BufRef::kOutput:
      return "output";
    case BufRef::kScratch:
      return "scratch";
    case BufRef::kWindowIn:
      return "windowIn";
    case BufRef::kWindowOut:
      return "windowOut";
    case BufRef::kNone:
      break;
  }
  return "none";
}

const char* winFlagName(WinFlag f) {
  switch (f) {
    case WinFlag::kReady:
      return "ready";
    case WinFlag::kDone:
      return "done";
    case WinFlag::kFinished:
      return "finished";
  }
  return "?";
}

const char* collectiveName(Collective c) {
  switch (c) {
    case Collective::kAllReduce:
      return "allreduce";
    case Collective::kAllGather:
      return "allgather";
    case Collective::kReduceScatter:
      return "reducescatter";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kReduce:
      return "reduce";
    case Collective::kGather:
      return "gather";
    case Collective::kScatter:
      return "scatter";
    case Collective::kAllToAll:
      return "alltoall";
    case Collective::kAllToAllv:
      return "alltoallv";
  }
  return "?";
}

}  // namespace braid::algo
