// ncclConfig_t as NCCL reads it: size, magic and version first; fields past
// the caller's size (an older header) keep their defaults; a newer header's
// extra fields are ignored. Values are checked even where Braid has no use for
// them (the CTA counts are GPU scheduling hints), so a bad config fails here
// as it would under NCCL.
#include <cstddef>

#include "compat/nccl/compat.h"

namespace braid::nccl {
namespace {

constexpr unsigned int kConfigMagic = 0xcafebeef;
// ncclConfig_t first appeared in NCCL 2.14.
constexpr unsigned int kFirstConfigVersion = 21400;

// Whether the caller's struct reaches the int at `offset`.
bool has(const ncclConfig_t* c, size_t offset) { return c->size >= offset + sizeof(int); }

ncclResult_t checkFlag(const ncclConfig_t* c, size_t offset, int value, const char* name) {
  if (!has(c, offset) || value == NCCL_CONFIG_UNDEF_INT || value == 0 || value == 1) {
    return ncclSuccess;
  }
  return fail(nullptr, ncclInvalidArgument,
              std::string("config->") + name + " is " + std::to_string(value) +
                  "; it must be 0, 1 or NCCL_CONFIG_UNDEF_INT");
}

}  // namespace

ncclResult_t parseConfig(const ncclConfig_t* config, const Settings* inherit, Settings* out) {
  Settings s = inherit != nullptr ? *inherit : Settings{};
  if (config == nullptr) {
    *out = s;
    return ncclSuccess;
  }
  if (config->magic != kConfigMagic) {
    return fail(nullptr, ncclInvalidArgument,
                "config->magic is not 0xcafebeef: initialise the config with "
                "NCCL_CONFIG_INITIALIZER");
  }
  if (config->version < kFirstConfigVersion) {
    return fail(nullptr, ncclInvalidArgument,
                "config->version " + std::to_string(config->version) +
                    " is older than any ncclConfig_t (2.14): initialise the config with "
                    "NCCL_CONFIG_INITIALIZER");
  }
  if (!has(config, offsetof(ncclConfig_t, blocking))) {
    return fail(nullptr, ncclInvalidArgument,
                "config->size " + std::to_string(config->size) +
                    " is too small for an ncclConfig_t: initialise the config with "
                    "NCCL_CONFIG_INITIALIZER");
  }
  if (config->blocking != NCCL_CONFIG_UNDEF_INT) {
    if (config->blocking != 0 && config->blocking != 1) {
      return fail(nullptr, ncclInvalidArgument,
                  "config->blocking is " + std::to_string(config->blocking) + "; it must be 0 or 1");
    }
    s.blocking = config->blocking == 1;
  }
  ncclResult_t r = checkFlag(config, offsetof(ncclConfig_t, splitShare), config->splitShare,
                             "splitShare");
  if (r == ncclSuccess) {
    r = checkFlag(config, offsetof(ncclConfig_t, shrinkShare), config->shrinkShare, "shrinkShare");
  }
  if (r == ncclSuccess) {
    r = checkFlag(config, offsetof(ncclConfig_t, collnetEnable), config->collnetEnable,
                  "collnetEnable");
  }
  if (r != ncclSuccess) return r;
  if (has(config, offsetof(ncclConfig_t, CTAPolicy)) && config->CTAPolicy != NCCL_CONFIG_UNDEF_INT &&
      (config->CTAPolicy & ~(NCCL_CTA_POLICY_EFFICIENCY | NCCL_CTA_POLICY_ZERO)) != 0) {
    return fail(nullptr, ncclInvalidArgument,
                "config->CTAPolicy " + std::to_string(config->CTAPolicy) +
                    " is not a combination of NCCL_CTA_POLICY_* flags");
  }
  if (has(config, offsetof(ncclConfig_t, maxCTAs)) && config->minCTAs != NCCL_CONFIG_UNDEF_INT &&
      config->maxCTAs != NCCL_CONFIG_UNDEF_INT && config->minCTAs > config->maxCTAs) {
    return fail(nullptr, ncclInvalidArgument,
                "config->minCTAs (" + std::to_string(config->minCTAs) + ") exceeds maxCTAs (" +
                    std::to_string(config->maxCTAs) + ")");
  }
  *out = s;
  return ncclSuccess;
}

}  // namespace braid::nccl
