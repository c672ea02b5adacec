// What braidrun tells each rank about the job, through environment variables:
//   BRAID_RANK, BRAID_WORLD_SIZE, BRAID_LOCAL_RANK, BRAID_LOCAL_SIZE (all ranks are local),
//   BRAID_ROOT (host:port where rank 0 listens for the bootstrap) and
//   BRAID_SECRET (32 lowercase hex characters shared by the ranks of one job).
// Functions only; thread-safe except rankEnvironment, which reads `environ`.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "tools/braidrun/status.h"

namespace braid::run {

// The variables braidrun sets itself; -x may not set them.
inline constexpr std::array<std::string_view, 6> kRankVariables = {
    "BRAID_RANK",       "BRAID_WORLD_SIZE", "BRAID_LOCAL_RANK",
    "BRAID_LOCAL_SIZE", "BRAID_ROOT",       "BRAID_SECRET"};

struct JobEnvironment {
  int world_size = 0;
  std::string root;                    // "host:port"
  std::string secret;                  // 32 lowercase hex characters
  std::vector<std::string> extra_env;  // "VAR=value" from -x
};

// 16 bytes from getrandom(), as 32 lowercase hex characters.
Expected<std::string> makeSecret();

// "127.0.0.1:<port>" for a port the kernel says is free now: binds a TCP socket to
// 127.0.0.1:0, reads the port back and closes the socket, so rank 0 can listen there.
Expected<std::string> pickLoopbackRoot();

// braidrun's own environment, then -x assignments (which replace inherited values), then the
// rank variables above (which replace anything inherited), as "NAME=value" strings.
std::vector<std::string> rankEnvironment(const JobEnvironment& job, int rank);

}  // namespace braid::run
