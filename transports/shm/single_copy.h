// Single-copy transfers for shm: reading a peer process's private memory with
// cross-memory attach (process_vm_readv), which needs no shared mapping.
//
// Linux allows it where this process may ptrace the peer: same user, and Yama's
// ptrace_scope 0 (ptrace_scope 1 lets only an ancestor read, 2 and 3 nobody),
// and no seccomp filter that forbids the call (some container runtimes). Braid
// never widens that (no PR_SET_PTRACER): where the system says no, the FIFOs
// carry every byte. BRAID_SHM_CMA=0 turns the path off.
//
// Thread-safe.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"
#include "core/transport.h"

namespace braid::transport::shm {

// Whether BRAID_SHM_CMA leaves single-copy transfers on (the default).
bool singleCopyEnabled();

// This process's figures (SingleCopyProbe), measured on the first call by
// reading its own memory, or nullptr where turned off or refused (said once at
// INFO). Later calls return the same answer.
const SingleCopyProbe* singleCopyProbe();

// Whether this process may read `bytes` at `at` in process `pid` and finds
// `expect` there: the pair probe of a connect. A refusal is said once at INFO,
// naming `who`, the errno and what usually causes it.
bool canReadPeer(pid_t pid, uint64_t at, const void* expect, size_t bytes, const std::string& who);

// Copies `bytes` at `at` in process `pid` into `dst`. remoteError when the
// process is gone or the range is not mapped there.
Status readPeer(pid_t pid, uint64_t at, void* dst, size_t bytes);

}  // namespace braid::transport::shm
