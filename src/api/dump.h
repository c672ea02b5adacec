// What this process's communicators are doing, on demand (see dump.cc).
#pragma once

#include <string>

namespace braid {

// One line per live communicator: rank, posted / completed operation numbers,
// the operation in flight, a sticky error.
std::string describeLiveComms();
// Installs the BRAID_DUMP_SIGNAL handler once per process (at the first init).
void installDumpSignal();

}  // namespace braid
