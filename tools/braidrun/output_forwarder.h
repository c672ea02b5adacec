// Forwarding of the ranks' output: each rank's stdout and stderr arrive on pipes, and a
// LineForwarder re-prints one such pipe line by line on braidrun's own stdout or stderr,
// each line prefixed with "[rank] ". Whole lines only, so lines of different ranks never mix.
// Owned and driven by the single-threaded event loop; not thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "tools/braidrun/status.h"

namespace braid::run {

// A line longer than this is printed in pieces of this size, each as its own line, so one
// rank that never writes a newline cannot make braidrun buffer without bound.
inline constexpr size_t kMaxLineBytes = size_t{64} * 1024;

// braidrun's stdout or stderr. When a write to it fails (say the reader of a pipe went
// away), braidrun warns once on stderr and drops that stream's output; the ranks keep running.
struct OutputSink {
  int fd;
  const char* name;  // "stdout" or "stderr", for messages
  bool broken = false;

  void write(std::string_view data);
};

class LineForwarder {
 public:
  // `source`: the read end of a rank's pipe, non-blocking. `prefix`: "[3] " or "".
  // `what`: "rank 3's stdout", for messages.
  LineForwarder(UniqueFd source, OutputSink* sink, std::string prefix, std::string what);

  bool isOpen() const { return source_.valid(); }
  int fd() const { return source_.get(); }

  // Reads what is available (a bounded amount, so one busy rank cannot starve the others)
  // and prints the complete lines. At EOF prints the unfinished last line, then closes.
  void forwardAvailable();

  // Prints the unfinished last line and closes without waiting for EOF, for a pipe still
  // held open by something the rank left behind.
  void close();

 private:
  void printCompleteLines();
  void printLine(std::string_view line);

  UniqueFd source_;
  OutputSink* sink_;
  std::string prefix_;
  std::string what_;
  std::string pending_;  // bytes read but not printed: an unfinished line
};

}  // namespace braid::run
