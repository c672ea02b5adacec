// Users' algorithms on a communicator (docs/algorithms.md): schedule files
// (algorithms/file/schedule_file.h) read from BRAID_ALGO_FILES at init or given to
// braidCommRegisterAlgorithm, each refused before any call uses it unless the simulator
// proves it for the communicator's rank count (runtime/algorithm_proof.h). A file's
// verdict is kept process-wide by its content's hash and rank count, so communicators
// that load one file (splits, a job's several communicators) prove it once. Every rank
// must load the same files: the ranks compare their files' hashes, and a difference
// fails every rank alike. A loaded algorithm then competes in the communicator's
// selector (select/select.h). Thread-safe where noted.
#pragma once

#include <memory>
#include <string>

#include "algorithms/file/schedule_file.h"
#include "core/status.h"

struct braidComm;

namespace braid {

// `pathOrJson` (a path, or the JSON text itself when it starts with '{') read, parsed and
// proven for `nranks` ranks, or the verdict cached for its content. Errors name the file
// (or "<JSON text>"), and for a failed proof the rank count, count, rank, step and fault.
// Thread-safe.
Expected<std::shared_ptr<const algo::AlgoFile>> provenAlgorithm(const std::string& pathOrJson,
                                                                int nranks);

// BRAID_ALGO_FILES (paths separated by ':') on a new communicator, before its first call;
// a file that does not claim the communicator's rank count is left out (INFO says so), so
// splits of other sizes start.
Status loadAlgorithmFiles(braidComm* comm);

// braidCommRegisterAlgorithm: one file on a live communicator; every rank calls it.
// Takes comm->opMu.
Status registerAlgorithm(braidComm* comm, const std::string& pathOrJson);

}  // namespace braid
