// Starting one rank: fork() and execvpe() of the command, with its stdout and stderr on
// pipes that braidrun reads. The rank stays braidrun's child, in braidrun's process group.
// Not thread-safe (fork in a single-threaded program).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "tools/braidrun/signals.h"
#include "tools/braidrun/status.h"

namespace braid::run {

struct SpawnedRank {
  pid_t pid = -1;
  UniqueFd stdout_fd;  // read ends, non-blocking and close-on-exec
  UniqueFd stderr_fd;
};

// Starts `command` as `rank` with environment `env` ("NAME=value"). Rank 0 reads braidrun's
// stdin, the others /dev/null. If the command cannot be executed, the rank prints why on its
// stderr and exits 127 (not found) or 126 (found but not executable), like a shell.
// `cpu` >= 0 confines the rank to that CPU before exec. `signals` must be held across the
// call (it is what the child restores before exec).
Expected<SpawnedRank> spawnRank(int rank, const std::vector<std::string>& command,
                                const std::vector<std::string>& env, int cpu,
                                const ScopedSignalBlock& signals);

// The CPUs this process may run on (sched_getaffinity), in increasing order.
Expected<std::vector<int>> allowedCpus();

}  // namespace braid::run
