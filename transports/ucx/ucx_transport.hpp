// The UCX transport: tagged messages between the ranks of one communicator over UCP (one UCP
// context and worker per rank), for peers on other hosts and, with WEFT_SHM_DISABLE=1, on this
// host. See README.md for the tag layout, threading and how peer failures are detected.
#pragma once

#include <memory>
#include <string>

#include "lib/base/deadline.hpp"
#include "lib/base/env.hpp"
#include "transports/transport.hpp"

namespace weft {

struct UcxTransportOptions {
  // Names the transport in log lines and UCX's own context/worker names (communicator name or id).
  std::string label = "ucx";

  // Bounds set-up, the address exchange included.
  Deadline setupDeadline = Deadline::afterMs(envOrDefaults().timeoutMs);

  // UCX 1.13 grants peer error handling only on tcp (and verbs), so with it two ranks on one host
  // talk over tcp loopback (~10x the latency, ~1/3 the bandwidth of shared memory). By default
  // same-host peers use shared memory without UCX error handling and the transport watches their
  // processes instead (pidfd); true gives every peer UCX error handling (tcp on this host).
  // Every rank of a communicator must pass the same value.
  bool peerErrorHandlingOnHost = false;

  // cancel() of a receive that UCX has already matched (data in flight) waits this long for it
  // to land before closing the endpoint to its sender.
  int64_t cancelGraceMs = 5000;
};

// Creates the transport for rank oob.rank() of oob.nranks() (at most 2^20 ranks): creates the
// UCP context and worker, swaps worker addresses with oob.allGather and connects to every peer,
// this rank included. Throws weft::Error on failure or when options.setupDeadline passes.
std::unique_ptr<Transport> createUcxTransport(OutOfBand& oob, const UcxTransportOptions& options);

}  // namespace weft
