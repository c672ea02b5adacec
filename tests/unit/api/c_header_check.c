/* braid.h is the C ABI: this file must compile as strict C99 and link against
 * the shared library; running it checks a few enum values against NCCL's. */
#include <stdio.h>

#include "braid/braid.h"

int main(void) {
  braidConfig_t config = BRAID_CONFIG_INITIALIZER;
  int version = 0;
  if (braidGetVersion(&version) != braidSuccess || version != BRAID_VERSION_CODE) return 1;
  if (braidFloat32 != 7 || braidBfloat16 != 9 || braidAvg != 4 || braidRemoteError != 6) return 2;
  if (config.size != sizeof(braidConfig_t) || config.magic != BRAID_CONFIG_MAGIC) return 3;
  puts(braidGetErrorString(braidInvalidArgument));
  return 0;
}
