// What this process's communicators are doing, on demand (see dump.cc).
#pragma once

#include <string>

namespace braid {

// One line per live communicator: rank, posted / completed operation numbers,
// the operation in flight, a sticky error.
std::string describeLiveComms();
// BRAID_DUMP_SIGNAL's value as a signal number: "" and "SIGUSR1"/"USR1" give
// SIGUSR1, "USR2" SIGUSR2, a number itself; 0 for "0"/"off"/"none"; -1 when
// unreadable.
int parseDumpSignal(const std::string& spec);
// Writes every live communicator's BRAID_TRACE file (the dump signal does, after the text).
void writeLiveTraces();
// Installs the BRAID_DUMP_SIGNAL handler once per process (at the first init).
void installDumpSignal();

}  // namespace braid
