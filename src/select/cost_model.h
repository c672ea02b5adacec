// Alpha-beta cost model: predicted time of (algorithm, collective, bytes) on a
// communicator's shape and links, from each algorithm's closed form.
//
// A prediction is  base + steps x alpha + traffic x bytes / bandwidth,  where
// `steps` and `traffic` (bytes on a rank's busiest link, as a multiple of S)
// come from the algorithm's closed form and alpha / bandwidth from the link
// costs that costInputsFor() derives from a Topology and the constants table in
// cost_model.cc (each constant names its source). The model ignores protocols,
// channels and contention beyond the per-algorithm efficiency in that table.
//
// Multi-node: flat algorithms are priced on the bottleneck link: when nodes > 1
// every step costs the slower alpha and every byte moves at the smaller
// bandwidth, since a ring or a tree pipelines at its slowest edge and a
// step-synchronous algorithm waits for its slowest pair. Hierarchical
// algorithms price their intra-node phases on `intra` and their rail phases on
// `inter` (N nodes of L ranks: all-reduce 2(L-1) intra steps moving 2(L-1)/L S
// plus 2(N-1) rail steps moving 2(N-1)/N S/L); on one node they are a ring and
// are not ranked separately.
//
// Measured algorithms: a tuning file (select/tuning.h) may give, per
// collective and algorithm, a fitted base time and bandwidth for this
// communicator's transport and rank count; those replace the closed form.
//
// Ranks sharing one GPU: without MPS each process is its own context and the GPU
// time-slices them, so a step that waits for a peer costs a turn of every other rank's
// context, and their work shares the GPU's memory (sharedGpuLink). That is why the
// device windows' one-shot, with one barrier per round, beats every other all-reduce
// there.
//
// Pure functions on values; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/registry.h"
#include "core/transport.h"
#include "topo/paths.h"
#include "topo/topology.h"

namespace braid {

// One kind of link as the model sees it.
struct LinkCost {
  double alphaUs = 0;  // latency of one step (a minimal message) over this link
  double gbps = 0;     // achievable GB/s (1e9 bytes/s) per direction for one rank
};

// A measured algorithm: time = baseUs + S / gbps (S as predictUs's bytes),
// for S in [loBytes, hiBytes). Several bands per algorithm follow regimes a
// single line cannot (in cache or from memory, eager or pipelined).
struct AlgoFit {
  algo::Collective collective = algo::Collective::kAllReduce;
  algo::Algorithm algorithm = algo::Algorithm::kRing;
  double baseUs = 0;
  double gbps = 1;
  uint64_t loBytes = 0;
  uint64_t hiBytes = UINT64_MAX;
};

struct CostInputs {
  int nranks = 1;
  int nodes = 1;
  int ranksPerNode = 1;
  LinkCost intra;  // between ranks of one node
  LinkCost inter;  // between nodes, one rank's share of its node's NICs
  // Fixed cost of one call, whatever the algorithm: a kernel launch and its
  // protocol set-up on a GPU (NCCL's "base latency"); ~0 for host ranks.
  double baseUs = 0;
  // Host ranks of one node over shm with shared windows (exec/host/shared_windows.h): the
  // direct algorithms read peers' memory where it lies (a copy into the
  // window, then loads), while FIFO schedules copy every byte in and out.
  bool sharedWindows = false;
  // With shared windows: a call of at most this many bytes rides in a header line, where a
  // rank that waits for nobody runs calls ahead; a larger call's round first waits for
  // every rank's round before (the windows' two halves). 0: no lines.
  uint64_t windowLineBytes = 0;
  std::vector<AlgoFit> fits;  // measured (tuning file); they win over closed forms
  std::string source = "topology";  // where the figures come from, for messages
};

// Link costs for ranks at `places` on `topo`, from the paths between them
// (topo/paths.h), derated by the constants table. Intra: the worst path
// between two ranks of one node (NVLink, PCIe, or host shared memory for CPU
// ranks; a same-core hand-off when more than the node's cores' worth of ranks
// share its CPUs: `ranksSharingCpus`, 0 for the busiest node's rank count).
// Inter: the worst network path, each rank getting its share of the NIC it
// sends through; TCP figures when no NIC reports a speed.
CostInputs costInputsFor(const topo::Topology& topo, const std::vector<topo::RankPlace>& places,
                         int ranksSharingCpus = 0);
// The same for `nranks` ranks in blocks of `ranksPerNode` (topo::blockPlaces):
// a one-node file prices a cluster of such nodes.
CostInputs costInputsFor(const topo::Topology& topo, int nranks, int ranksPerNode);

// The link between `ranksOnGpu` (2+) ranks that share one GPU whose memory moves
// `memoryGBps`: a step costs a turn of each other rank's context, and each rank gets its
// share of the memory (see the header).
LinkCost sharedGpuLink(int ranksOnGpu, double memoryGBps);
// `nranks` ranks that all share one GPU of unknown figures (the topology does not place
// them): the shared link at the nominal device memory figure of topo/paths.cc.
CostInputs oneGpuInputs(int nranks);

// Steps and traffic (bytes over a rank's busiest link, as a multiple of S) of `a`'s
// closed form for `c` at `nranks` ranks; zeros where the model has no form for them.
struct AlgoShape {
  double steps = 0;
  double traffic = 0;
};
AlgoShape algorithmShape(algo::Algorithm a, algo::Collective c, int nranks);

// Predicted microseconds for one call. `bytes` is S as the perf tools' size
// column: the buffer for all-reduce, broadcast and reduce; the whole array
// (n blocks) for all-gather, reduce-scatter, all-to-all(v), gather and scatter.
// +infinity when `a` does not implement `c` (algo::supports).
double predictUs(algo::Algorithm a, algo::Collective c, uint64_t bytes, const CostInputs& in);

// Every algorithm implementing `c`, with its prediction, fastest first (ties
// keep the registry's order); hierarchical only when the ranks span nodes;
// only fitted algorithms when `in` has fits for `c`.
std::vector<std::pair<algo::Algorithm, double>> rankAlgorithms(algo::Collective c, uint64_t bytes,
                                                               const CostInputs& in);

// The smallest send that a single-copy read (shm over cross-memory attach,
// Endpoint::sendPostAt, or a window input lent by address) carries more cheaply
// than the two copies it replaces (into a FIFO slot or window, and out of it),
// from the transport's probe: the read costs latencyUs + b / gbps, the copies
// 2 b / copyGBps. UINT64_MAX where the read never wins (a read slower than two
// copies, as on VMs whose page pinning is slow).
uint64_t singleCopyMinBytes(const SingleCopyProbe& probe);

// Bytes host FIFO schedules copy per byte moved on a node with shared windows (into the
// slot and out of it), as the closed forms price them there.
double fifoCopyFactor();

// S for the model from a call's per-rank buffer bytes (count x element size):
// times nranks for the collectives whose S is the whole array.
uint64_t modelBytes(algo::Collective c, uint64_t rankBytes, int nranks);

}  // namespace braid
