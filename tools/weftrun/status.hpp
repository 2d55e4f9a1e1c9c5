// What became of a rank, from its wait(2) status: in words, and as weftrun's exit code.
#pragma once

#include <string>

namespace weft::run {

// Non-zero exit or death by a signal.
bool rankFailed(int waitStatus);

// "exited with status 3", "was killed by signal 9 (Killed)", "... (core dumped)".
std::string describeWaitStatus(int waitStatus);

// The exit code that reports this status: the rank's own, or 128 + signal as shells do.
int exitCodeFor(int waitStatus);

// "SIGTERM" for the signals weftrun forwards, "signal N" otherwise.
std::string signalLabel(int signal);

}  // namespace weft::run
