// --tag-output: a rank's stdout or stderr, read from a pipe, written to weftrun's own stream one
// whole line at a time with "[rank] " in front, so that lines of different ranks never mix.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace weft::run {

// Writes all of `data` to `fd`, retrying on EINTR and waiting out EAGAIN. False when the
// stream is gone (EPIPE, a closed descriptor): the caller stops writing to it.
bool writeAll(int fd, std::string_view data);

class LineTagger {
 public:
  // A line longer than this is written in pieces (each with the prefix), so that a rank
  // printing without newlines cannot make weftrun hold unbounded memory.
  static constexpr size_t kMaxLineBytes = 64 * 1024;

  LineTagger(int rank, int outFd);

  // Writes every complete line in `data` (with what was held back before it); keeps a trailing
  // partial line for later.
  void feed(std::string_view data);
  // At end of stream: writes a held partial line, ending it with a newline.
  void finish();

  bool pending() const { return !partial_.empty(); }

 private:
  void emit(std::string_view line);  // one prefixed line, newline included

  std::string prefix_;
  int outFd_;
  bool outputGone_ = false;
  std::string partial_;
  std::string scratch_;  // reused to build each line so that it leaves in one write
};

}  // namespace weft::run
