// HostStream: an ordered queue of operations run by one worker thread, the
// host counterpart of a CUDA stream (braidStream_t points to one). Tasks run
// in enqueue order; synchronize() returns once every task enqueued before it
// has finished. Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

namespace braid {

class HostStream {
 public:
  HostStream();
  ~HostStream();  // finishes queued tasks, then stops the worker
  HostStream(const HostStream&) = delete;
  HostStream& operator=(const HostStream&) = delete;

  void enqueue(std::function<void()> task);
  void synchronize();

 private:
  void run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace braid

// A stream's memory outlives braidStreamDestroy (impl is emptied, the struct kept), so
// its address is never handed out again: a destroyed stream stays recognisable as one,
// and cannot be mistaken for a CUDA stream that happens to reuse the address.
struct braidStream {
  std::optional<braid::HostStream> impl{std::in_place};
};
