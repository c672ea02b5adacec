// The first message on every peer link (Comm's control, data and pass links):
// who connects to whom, for which job, with which slice settings. Built by the
// connecting side; parsed by the accepting side before the connection is kept,
// with every field checked against what this rank knows, so the fuzzer
// (fuzz/fuzz_link_hello.cc) reaches exactly what Comm runs. Stateless.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/bootstrap.h"
#include "core/status.h"

namespace braid {

constexpr uint32_t kLinkMagic = 0x42524c4b;  // "BRLK"
constexpr uint32_t kLinkControl = 1;
constexpr uint32_t kLinkData = 2;
constexpr uint32_t kLinkPass = 3;  // passBytes: a length and that many bytes, then closed

// Wire format.
struct LinkHello {
  uint32_t magic;
  uint32_t kind;
  uint8_t secret[16];
  int32_t from;
  int32_t to;
  char transport[16];
  uint64_t sliceBytes;
  int32_t slots;
};

// What the accepting rank knows: its job's secret, its rank, and its settings.
struct LinkExpectation {
  Secret secret{};
  int rank = 0;
  int nranks = 0;
  uint64_t sliceBytes = 0;
  int slots = 0;
};

// A hello that passed every check.
struct LinkOrigin {
  uint32_t kind;
  int from;
};

LinkHello makeLinkHello(uint32_t kind, const Secret& secret, int from, int to, uint64_t sliceBytes,
                        int slots);

// Checks the `size` bytes at `wire`. Errors: braidRemoteError for a stranger
// (not a whole hello, not this job's secret, not meant for this rank, an
// unknown kind or rank: drop the connection); braidInvalidUsage for a rank of
// this job whose slice settings differ (a configuration error to report).
Expected<LinkOrigin> parseLinkHello(const void* wire, size_t size, const LinkExpectation& expect);

}  // namespace braid
