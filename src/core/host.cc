#include "core/host.h"

#include <unistd.h>

#include <fstream>

#include "core/env.h"

namespace braid {

std::string hostName() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return host;
}

std::string hostIdentity() {
  std::string id = envString("BRAID_HOST_ID");
  if (!id.empty()) return id;
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  return hostName() + "/" + boot;
}

}  // namespace braid
