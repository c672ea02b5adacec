// The communicator's executor table (runtime/call_executor.h): every kind of executor (a
// refusal is none) has one object, at its own index, that says it is that kind. Made
// as a communicator makes it, without one: no processes, no transports, no device.
#include "runtime/call_executor.h"

#include <gtest/gtest.h>

#include <iterator>
#include <set>
#include <string>

#include "cuda/device.h"

namespace braid {
namespace {

constexpr Executor kHostKinds[] = {Executor::kHostWindows, Executor::kHostFifo};
constexpr Executor kDeviceKinds[] = {Executor::kDeviceAlone, Executor::kDeviceWindows,
                                     Executor::kDeviceStaged, Executor::kDeviceLowered};

TEST(Executors, EveryHostKindHasItsOwnObject) {
  const CallExecutors table = makeExecutors();
  for (Executor kind : kHostKinds) {
    const CallExecutor* e = table[static_cast<size_t>(kind)].get();
    ASSERT_NE(e, nullptr) << executorName(kind);
    EXPECT_EQ(e->kind(), kind) << executorName(kind);
    EXPECT_STREQ(e->name(), executorName(kind));
  }
}

TEST(Executors, TheDeviceKindsExistWhereTheLibraryHasADeviceSide) {
  const CallExecutors table = makeExecutors();
  for (Executor kind : kDeviceKinds) {
    const CallExecutor* e = table[static_cast<size_t>(kind)].get();
    if (!cuda::compiled()) {
      EXPECT_EQ(e, nullptr) << executorName(kind) << " in a build without CUDA";
      continue;
    }
    ASSERT_NE(e, nullptr) << executorName(kind);
    EXPECT_EQ(e->kind(), kind) << executorName(kind);
    EXPECT_STREQ(e->name(), executorName(kind));
  }
}

TEST(Executors, EveryKindButARefusalHasASlotAndTheObjectsAreDistinct) {
  // Every Executor but kRefused: the table's size is their number.
  EXPECT_EQ(kExecutorKinds, std::size(kHostKinds) + std::size(kDeviceKinds));
  const CallExecutors table = makeExecutors();
  std::set<const CallExecutor*> objects;
  std::set<std::string> names;
  for (const auto& e : table) {
    if (e == nullptr) continue;
    objects.insert(e.get());
    names.insert(e->name());
  }
  const size_t made = cuda::compiled() ? kExecutorKinds : std::size(kHostKinds);
  EXPECT_EQ(objects.size(), made);
  EXPECT_EQ(names.size(), made);
}

}  // namespace
}  // namespace braid
