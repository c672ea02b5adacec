// TraceSink (core/trace.h): the ring keeps the last N events oldest first, counts what it
// dropped, holds the call in flight apart, and bounds the names it keeps.
#include <gtest/gtest.h>

#include <string>

#include "core/trace.h"

namespace braid {
namespace {

TraceEvent stepAt(uint64_t t) {
  TraceEvent e;
  e.kind = TraceEvent::Kind::kStep;
  e.startNs = t;
  e.endNs = t + 1;
  return e;
}

TEST(TraceSink, KeepsTheLastEventsOldestFirst) {
  TraceSink sink(16);
  for (uint64_t t = 0; t < 40; ++t) sink.record(stepAt(t));
  const std::vector<TraceEvent> got = sink.snapshot();
  ASSERT_EQ(got.size(), 16u);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].startNs, 24 + i);
  EXPECT_EQ(sink.dropped(), 24u);
}

TEST(TraceSink, TheCallInFlightComesLastUntilItEnds) {
  TraceSink sink(16);
  sink.record(stepAt(1));
  TraceEvent call;
  call.kind = TraceEvent::Kind::kCall;
  call.seq = 7;
  call.startNs = 2;
  sink.beginCall(call);
  std::vector<TraceEvent> got = sink.snapshot();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].seq, 7u);
  EXPECT_EQ(got[1].state, TraceEvent::State::kInFlight);
  sink.endCall(9, false);
  got = sink.snapshot();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].state, TraceEvent::State::kFailed);
  EXPECT_EQ(got[1].endNs, 9u);
  sink.endCall(10, true);  // nothing open: nothing recorded
  EXPECT_EQ(sink.snapshot().size(), 2u);
}

TEST(TraceSink, InternsNamesUpToABound) {
  TraceSink sink(16);
  const char* a = sink.intern("step 1");
  EXPECT_EQ(a, sink.intern("step 1"));
  EXPECT_STREQ(a, "step 1");
  for (int i = 0; i < 5000; ++i) sink.intern("step " + std::to_string(i));
  EXPECT_STREQ(sink.intern("a new name past the bound"), "marker");
  EXPECT_STREQ(sink.intern("step 1"), "step 1");
}

}  // namespace
}  // namespace braid
