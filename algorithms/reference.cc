#include "algorithms/reference.h"

#include <algorithm>

namespace braid::algo {

bool reduces(Collective c) {
  return c == Collective::kAllReduce || c == Collective::kReduceScatter || c == Collective::kReduce;
}

RankLayout rankLayout(Collective c, int nranks, int rank, uint64_t count, int root, bool inPlace) {
  const uint64_t n = static_cast<uint64_t>(nranks), k = count;
  const uint64_t r = static_cast<uint64_t>(rank);
  const bool isRoot = rank == root;
  RankLayout l;
  switch (c) {
    case Collective::kAllReduce:
      l.inputElems = k;
      l.outputElems = k;
      break;
    case Collective::kAllGather:
      l.inputElems = k;
      l.outputElems = n * k;
      break;
    case Collective::kReduceScatter:
      l.inputElems = n * k;
      l.outputElems = k;
      break;
    case Collective::kBroadcast:
      l.inputElems = isRoot ? k : 0;
      l.outputElems = k;
      break;
    case Collective::kReduce:
      l.inputElems = k;
      l.outputElems = isRoot ? k : 0;
      break;
    case Collective::kGather:
      l.inputElems = k;
      l.outputElems = isRoot ? n * k : 0;
      break;
    case Collective::kScatter:
      l.inputElems = isRoot ? n * k : 0;
      l.outputElems = k;
      break;
    case Collective::kAllToAll:
      l.inputElems = n * k;
      l.outputElems = n * k;
      break;
    case Collective::kAllToAllv:
      break;  // laid out by the caller
  }
  if (!inPlace) return l;
  const bool bigOutput = c == Collective::kAllGather || (c == Collective::kGather && isRoot);
  const bool bigInput = c == Collective::kReduceScatter || (c == Collective::kScatter && isRoot);
  if (bigOutput) return RankLayout{k, n * k, true, r * k, 0, 0, n * k};
  if (bigInput) return RankLayout{n * k, k, true, 0, r * k, k, n * k};
  if (c == Collective::kGather || c == Collective::kScatter || c == Collective::kAllToAllv) {
    return l;
  }
  l.inPlace = true;
  l.storageElems = std::max(l.inputElems, l.outputElems);
  return l;
}

OutputSource outputSource(Collective c, int rank, uint64_t count, int root, uint64_t j) {
  using Kind = OutputSource::Kind;
  const uint64_t k = count;
  const uint64_t r = static_cast<uint64_t>(rank);
  switch (c) {
    case Collective::kAllReduce:
      return {Kind::kReduce, 0, j};
    case Collective::kReduce:
      return rank == root ? OutputSource{Kind::kReduce, 0, j} : OutputSource{};
    case Collective::kReduceScatter:
      return {Kind::kReduce, 0, r * k + j};
    case Collective::kAllGather:
    case Collective::kGather:
      return {Kind::kCopy, static_cast<int>(j / k), j % k};
    case Collective::kBroadcast:
      return {Kind::kCopy, root, j};
    case Collective::kScatter:
      return {Kind::kCopy, root, r * k + j};
    case Collective::kAllToAll:
      return {Kind::kCopy, static_cast<int>(j / k), r * k + j % k};
    case Collective::kAllToAllv:
      break;
  }
  return {};
}

}  // namespace braid::algo
