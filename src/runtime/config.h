// Where a communicator's settings come from (braidConfig_t, then BRAID_* variables, then
// defaults), and the rank, size and rendezvous the launchers' conventions give.
#pragma once

#include <memory>
#include <string>

#include "braid/braid.h"
#include "core/bootstrap.h"
#include "core/comm.h"

namespace braid {

// The communicator's settings; *transports: the BRAID_TRANSPORTS list.
Expected<CommConfig> configFrom(const braidConfig_t* config, std::string* transports);
// braidCommInitFromEnv's rank and size (braidrun, torchrun, OpenMPI, Slurm).
Status launcherRankAndSize(int* rank, int* nranks);
// Its unique id: rank 0 starts the rendezvous service (*root) where the launcher says.
Expected<UniqueIdData> uniqueIdFromEnv(int rank, int nranks, std::shared_ptr<RootHandle>* root);

}  // namespace braid
