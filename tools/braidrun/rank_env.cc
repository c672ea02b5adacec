#include "tools/braidrun/rank_env.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdint>

#include "tools/braidrun/status.h"

extern char** environ;

namespace braid::run {
namespace {

constexpr size_t kSecretBytes = 16;

std::string_view variableName(std::string_view assignment) {
  return assignment.substr(0, assignment.find('='));
}

bool isReplaced(std::string_view name, const std::vector<std::string>& extra_env) {
  if (std::find(kRankVariables.begin(), kRankVariables.end(), name) != kRankVariables.end()) {
    return true;
  }
  return std::any_of(extra_env.begin(), extra_env.end(),
                     [name](const std::string& extra) { return variableName(extra) == name; });
}

}  // namespace

Expected<std::string> makeSecret() {
  uint8_t bytes[kSecretBytes];
  size_t filled = 0;
  while (filled < kSecretBytes) {
    ssize_t n = getrandom(bytes + filled, kSecretBytes - filled, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return systemError("getrandom() for BRAID_SECRET failed");
    filled += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string secret;
  for (uint8_t byte : bytes) {
    secret += kHex[byte >> 4];
    secret += kHex[byte & 0xf];
  }
  return secret;
}

Expected<std::string> pickLoopbackRoot() {
  UniqueFd sock(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock.valid()) return systemError("socket() to pick a port for BRAID_ROOT failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (bind(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return systemError("bind(127.0.0.1:0) to pick a port for BRAID_ROOT failed (pass --root)");
  }
  socklen_t len = sizeof(addr);
  if (getsockname(sock.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return systemError("getsockname() to pick a port for BRAID_ROOT failed (pass --root)");
  }
  return "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
}

std::vector<std::string> rankEnvironment(const JobEnvironment& job, int rank) {
  std::vector<std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    if (!isReplaced(variableName(*entry), job.extra_env)) env.emplace_back(*entry);
  }
  env.insert(env.end(), job.extra_env.begin(), job.extra_env.end());
  env.push_back("BRAID_RANK=" + std::to_string(rank));
  env.push_back("BRAID_WORLD_SIZE=" + std::to_string(job.world_size));
  env.push_back("BRAID_LOCAL_RANK=" + std::to_string(rank));
  env.push_back("BRAID_LOCAL_SIZE=" + std::to_string(job.world_size));
  env.push_back("BRAID_ROOT=" + job.root);
  env.push_back("BRAID_SECRET=" + job.secret);
  return env;
}

}  // namespace braid::run
