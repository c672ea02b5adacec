// C entry points that make a communicator from another: argument checks here, the
// work in the runtime (runtime/split.cc).
#include <string>

#include "braid/braid.h"
#include "runtime/communicator_ops.h"
#include "runtime/last_error.h"
#include "runtime/live_handles.h"

using namespace braid;

extern "C" braidResult_t braidCommShrink(braidComm_t comm, int* excludeRanksList,
                                         int excludeRanksCount, braidComm_t* newcomm,
                                         braidConfig_t* config, int shrinkFlags) {
  Status st;
  if (comm == nullptr || !isLiveComm(comm)) {
    st = invalidArgument("comm is not a live communicator");
  } else if (newcomm == nullptr) {
    st = invalidArgument("newcomm is NULL");
  } else if (excludeRanksCount < 0 || (excludeRanksCount > 0 && excludeRanksList == nullptr)) {
    st = invalidArgument("excludeRanksList is NULL or excludeRanksCount negative");
  } else if ((shrinkFlags & ~BRAID_SHRINK_ABORT) != 0) {
    st = invalidArgument("shrinkFlags " + std::to_string(shrinkFlags) +
                         " is not BRAID_SHRINK_DEFAULT or BRAID_SHRINK_ABORT");
  }
  if (st.isOk()) {
    st = shrinkComm(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
  }
  return finish(comm, st);
}

extern "C" braidResult_t braidCommSplit(braidComm_t comm, int color, int key,
                                        braidComm_t* newcomm, braidConfig_t* config) {
  Status st;
  if (comm == nullptr || !isLiveComm(comm)) {
    st = invalidArgument("comm is not a live communicator");
  } else if (newcomm == nullptr) {
    st = invalidArgument("newcomm is NULL");
  } else if (color < 0 && color != BRAID_SPLIT_NOCOLOR) {
    st = invalidArgument("color must be >= 0 or BRAID_SPLIT_NOCOLOR");
  }
  if (st.isOk()) st = splitComm(comm, color, key, newcomm, config);
  return finish(comm, st);
}
