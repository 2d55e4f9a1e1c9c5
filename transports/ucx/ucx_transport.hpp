// The UCX transport: tagged messages between the ranks of one communicator over UCP (one UCP
// context and worker per rank, which split children may share), for peers on other hosts and,
// with WEFT_SHM_DISABLE=1, on this host. See README.md for the tag layout, threading, sharing
// and how peer failures are detected.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lib/base/deadline.hpp"
#include "lib/base/env.hpp"
#include "transports/transport.hpp"

namespace weft {

// The most endpoints per peer (UcxTransportOptions::channels).
constexpr int kMaxChannels = 8;

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

  // The ranks to connect to; empty: every rank, this one included. Posting to or from a rank
  // left out fails the request. A communicator whose same-host peers go through weft's shm
  // transport (transports/routed) passes only the ranks on other hosts.
  std::vector<int> peers;

  // Give UCX network transports only (UCX_TLS=^sm: no sysv, posix or cma), for when every rank in
  // `peers` is on another host: the worker then neither opens nor polls shared-memory interfaces
  // nobody would use, and every endpoint to another rank asks for UCX peer error handling. A
  // UCX_TLS in the environment wins.
  bool networkOnly = false;

  // Endpoints per peer reached over the network (1..kMaxChannels), each its own connection (for
  // tcp, its own socket): message k to a peer goes on channel k mod `channels`, so the chunks of
  // a pipelined transfer travel side by side, for links one connection cannot fill (one tcp flow
  // is bound to one core's protocol processing and one congestion window). Self and same-host
  // peers on shared memory always get one. Ranks may differ: a receive matches on the worker,
  // whatever endpoint carried the message.
  int channels = 1;
};

// Creates the transport for rank oob.rank() of oob.nranks() (at most 2^20 ranks): creates the
// UCP context and worker, swaps worker addresses with oob.allGather (every rank takes part) and
// connects to options.peers (every rank, this one included, when empty). Throws weft::Error on
// failure or when options.setupDeadline passes.
std::unique_ptr<Transport> createUcxTransport(OutOfBand& oob, const UcxTransportOptions& options);

// Sharing a rank's UCX worker and endpoints between a communicator and those split from it
// (weftConfig_t::splitShare). `ucx` must come from createUcxTransport or shareUcxTransport.
// Each communicator on a worker has a context id, carried in the UCP tag of its messages
// (tag_layout.hpp), so that theirs never match each other's receives.
struct UcxContextIds {
  uint32_t next;  // the lowest id this rank has not handed out
  uint32_t max;   // the largest the tag can carry with this worker's ranks (0: no sharing)
};
UcxContextIds ucxContextIds(Transport& ucx);

// A transport for rank `rank` of a new communicator over `ucx`'s worker: its rank i is rank
// parentRanks[i] of `ucx`'s communicator. No connection is made and nothing is exchanged: every
// peer it will post to must be one `ucx` connects to (weftInternalError otherwise). `context`
// must be above every id handed out on every rank of the new communicator (the largest of their
// ucxContextIds().next) and at most max; every rank of the new communicator passes the same.
// Closing it withdraws only its own requests; the worker closes with the last communicator on
// it, whichever closes last.
std::unique_ptr<Transport> shareUcxTransport(Transport& ucx, uint32_t context,
                                             std::span<const int> parentRanks, int rank,
                                             std::span<const int> peers, const std::string& label);

}  // namespace weft
