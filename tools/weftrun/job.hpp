// Supervising the ranks of one job: a single poll loop over the ranks' output pipes and a
// signalfd (SIGCHLD, SIGINT, SIGTERM, SIGHUP), with the job's deadline and the kill grace
// period as its timeout. Decides when to stop the ranks and what weftrun exits with.
#pragma once

#include <csignal>
#include <string>

#include "tools/weftrun/options.hpp"

namespace weft::run {

// How long ranks have between SIGTERM and SIGKILL.
constexpr int kKillGraceMs = 5000;

// The signals weftrun takes over; main blocks them before any thread starts so that they are
// read from the signalfd and never delivered to the rendezvous thread.
sigset_t supervisedSignals();

// Starts the ranks and supervises them to the end; every rank is reaped before it returns.
// Returns weftrun's exit code.
int runJob(const LaunchOptions& options, const std::string& uniqueIdHex,
           const char* const* environment);

}  // namespace weft::run
