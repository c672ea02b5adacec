// C entry points that group calls: each queues its calls until the outermost
// braidGroupEnd issues them (runtime/issue.h).
#include "braid/braid.h"
#include "runtime/issue.h"

extern "C" {

braidResult_t braidGroupStart(void) {
  braid::groupStart();
  return braidSuccess;
}

braidResult_t braidGroupEnd(void) { return braid::groupEnd(); }

}  // extern "C"
