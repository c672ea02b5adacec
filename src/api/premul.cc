// C entry points for premul-sum operations: argument checks here, the ops themselves in
// the runtime (runtime/premul.h).
#include <string>

#include "braid/braid.h"
#include "runtime/last_error.h"
#include "runtime/live_handles.h"
#include "runtime/premul.h"

using namespace braid;

extern "C" {

braidResult_t braidRedOpCreatePreMulSum(braidRedOp_t* op, void* scalar, braidDataType_t datatype,
                                        braidScalarResidence_t residence, braidComm_t comm) {
  Status st = Status::ok();
  if (comm == nullptr || !isLiveComm(comm)) {
    st = invalidArgument("comm is not a live communicator (NULL, destroyed, or aborted)");
  } else if (op == nullptr) {
    st = invalidArgument("op is NULL");
  } else if (scalar == nullptr) {
    st = invalidArgument("scalar is NULL");
  } else if (static_cast<int>(datatype) < 0 || datatype >= braidNumTypes) {
    st =
        invalidArgument("datatype " + std::to_string(static_cast<int>(datatype)) +
                        " is not a braidDataType_t (0.." + std::to_string(braidNumTypes - 1) + ")");
  } else if (residence != braidScalarDevice && residence != braidScalarHostImmediate) {
    st = invalidArgument("residence " + std::to_string(static_cast<int>(residence)) +
                         " is neither braidScalarDevice nor braidScalarHostImmediate");
  }
  if (!st.isOk()) return finish(isLiveComm(comm) ? comm : nullptr, st);
  Expected<braidRedOp_t> made =
      createPreMulOp(comm, scalar, datatype, residence == braidScalarDevice);
  if (!made.isOk()) return finish(comm, made.status());
  *op = made.value();
  return braidSuccess;
}

braidResult_t braidRedOpDestroy(braidRedOp_t op, braidComm_t comm) {
  if (comm == nullptr || !isLiveComm(comm)) {
    return finish(nullptr,
                  invalidArgument("comm is not a live communicator (NULL, destroyed, or aborted)"));
  }
  if (destroyPreMulOp(comm, op)) return braidSuccess;
  return finish(comm, invalidArgument("op " + std::to_string(static_cast<int>(op)) +
                                      " is not a live op from braidRedOpCreatePreMulSum on this "
                                      "comm (built-in ops are not destroyed)"));
}

}  // extern "C"
