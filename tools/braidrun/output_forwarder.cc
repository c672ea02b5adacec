#include "tools/braidrun/output_forwarder.h"

#include <poll.h>
#include <unistd.h>

#include <cstring>

namespace braid::run {
namespace {

constexpr size_t kReadChunkBytes = size_t{64} * 1024;
constexpr int kReadsPerWakeup = 4;

void warn(const std::string& message) {
  std::string line = "braidrun: " + message + "\n";
  [[maybe_unused]] ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace

void OutputSink::write(std::string_view data) {
  while (!broken && !data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n >= 0) {
      data.remove_prefix(static_cast<size_t>(n));
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      pollfd writable{fd, POLLOUT, 0};  // our stdout was left non-blocking: wait for room
      poll(&writable, 1, -1);
    } else if (errno != EINTR) {
      broken = true;
      warn("writing the ranks' output to " + std::string(name) +
           " failed: " + std::strerror(errno) + "; dropping the rest of it");
    }
  }
}

LineForwarder::LineForwarder(UniqueFd source, OutputSink* sink, std::string prefix,
                             std::string what)
    : source_(std::move(source)), sink_(sink), prefix_(std::move(prefix)), what_(std::move(what)) {}

void LineForwarder::forwardAvailable() {
  char buffer[kReadChunkBytes];
  for (int reads = 0; isOpen() && reads < kReadsPerWakeup; ++reads) {
    ssize_t n = read(source_.get(), buffer, sizeof(buffer));
    if (n > 0) {
      pending_.append(buffer, static_cast<size_t>(n));
      printCompleteLines();
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n < 0) warn("reading " + what_ + " failed: " + std::strerror(errno) + "; closing it");
    close();  // EOF, or an error after which the pipe is no use
  }
}

void LineForwarder::close() {
  if (!pending_.empty()) printLine(pending_);
  pending_.clear();
  source_.reset();
}

void LineForwarder::printCompleteLines() {
  size_t start = 0;
  for (;;) {
    size_t newline = pending_.find('\n', start);
    size_t line_end = newline == std::string::npos ? pending_.size() : newline;
    if (line_end - start > kMaxLineBytes) {  // too long: print a piece of it as a line
      printLine(std::string_view(pending_).substr(start, kMaxLineBytes));
      start += kMaxLineBytes;
      continue;
    }
    if (newline == std::string::npos) break;
    printLine(std::string_view(pending_).substr(start, newline - start));
    start = newline + 1;
  }
  pending_.erase(0, start);
}

void LineForwarder::printLine(std::string_view line) {
  std::string out;
  out.reserve(prefix_.size() + line.size() + 1);
  out.append(prefix_).append(line).push_back('\n');
  sink_->write(out);
}

}  // namespace braid::run
