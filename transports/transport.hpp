// The Transport interface: tagged, nonblocking, pairwise byte movement between the ranks of one
// communicator. The executor (algorithms/executor) is its only user; loopback (unit tests), shm
// (ranks of one host), ucx (between processes and hosts) and routed (a transport per peer)
// implement it.
//
// Contract
// - Tags are kTagBits wide. A receive matches the send from `peer` with the same tag; every
//   (sender, receiver, tag) triple is used by at most one message at a time.
// - The sizes of a send and of the receive it matches are equal; a mismatch fails the receive.
// - post* never blocks. Requests complete inside progress() (or, for transports that move data
//   eagerly, inside post*): state becomes Done or Failed, written with release order so that a
//   reader that observes it with acquire order also sees the data and `error`.
// - A request stays owned by its poster and must outlive its completion, or be cancelled.
// - A completed request may leave the transport owing its peer a message; flush() hands it over
//   and the executor calls it before it ends an operation.
// - One thread at a time calls a transport's methods (the communicator serialises its users).
#pragma once

#include <poll.h>
#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lib/base/deadline.hpp"

namespace weft {

inline constexpr int kTagBits = 44;
inline constexpr uint64_t kTagMask = (uint64_t{1} << kTagBits) - 1;

struct Request {
  enum State : uint8_t { kIdle, kPosted, kDone, kFailed, kCancelled };
  std::atomic<uint8_t> state{kIdle};
  size_t bytes = 0;         // bytes received (receives) once Done
  std::string error;        // why it failed, once Failed
  void* handle = nullptr;   // the transport's own bookkeeping
  int peer = -1;            // set by a routed transport (transports/routed) to find it again

  bool finished() const { return state.load(std::memory_order_acquire) >= kDone; }
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;

  virtual void postSend(int peer, uint64_t tag, const void* buf, size_t bytes, Request* req) = 0;
  virtual void postRecv(int peer, uint64_t tag, void* buf, size_t bytes, Request* req) = 0;

  // Advances outstanding requests. Returns true when anything completed or moved.
  virtual bool progress() = 0;

  // Sleeps in the kernel until this transport may have something to do (a message arrived, a
  // connection event) or maxUs microseconds pass; the caller then calls progress() again.
  // Returns false at once, without waiting, when the transport cannot wait that way (the caller
  // yields or naps instead). An executor that made no progress calls it so that ranks that
  // outnumber the cores sleep until their data arrives and the kernel wakes them, instead of
  // spinning or yielding and taking turns on the core with the rank that has work to do.
  // Polls the descriptor armWake() gives.
  virtual bool waitForActivity(int64_t maxUs) {
    const int fd = armWake();
    if (fd == kCannotWake) return false;
    if (fd == kWakeNow) return true;
    pollfd poll{fd, POLLIN, 0};
    pollFor(&poll, 1, maxUs);
    disarmWake();
    return true;
  }

  // Waits until one of `fds` is readable or maxUs pass (EINTR or timeout: the caller progresses
  // and decides).
  static void pollFor(pollfd* fds, size_t count, int64_t maxUs) {
    const timespec limit{static_cast<time_t>(maxUs / 1000000),
                         static_cast<long>(maxUs % 1000000) * 1000};
    ppoll(fds, count, &limit, nullptr);
  }

  // A sleep in two halves, so that a caller can sleep on several transports at once
  // (transports/routed). armWake() prepares it and returns a file descriptor that becomes
  // readable (POLLIN) when this transport has news; the caller polls it, then calls
  // disarmWake() once. It returns kWakeNow instead when news are already there (progress
  // again, do not sleep) and kCannotWake when this transport cannot wake a sleeper; both leave
  // nothing to disarm.
  static constexpr int kCannotWake = -1;
  static constexpr int kWakeNow = -2;
  virtual int armWake() { return kCannotWake; }
  virtual void disarmWake() {}

  // Whether a request posted here has not finished yet. A transport that does not track it says
  // true. A routed transport (transports/routed) arms only its transports that are busy, and
  // progresses the others only on one call in 16.
  virtual bool busy() const { return true; }

  // Hands over what this rank still owes its peers for requests that completed here, and says
  // whether anything is left (true: nothing). A request can complete before the transport has
  // told the peer: UCX finishes a rendezvous receive once it has read the sender's buffer, and
  // when the sender's receive queue is full, the acknowledgement that finishes the sender's
  // request waits in this rank's queue. Only a later progress call on this rank sends it; a rank
  // that has returned from its operation may never make one (it waits for the sender, which
  // waits for it). The executor ends an operation only once this returns true. Progresses;
  // never blocks.
  virtual bool flush() { return true; }

  // Withdraws a request that has not finished (after an error, a timeout or an abort) so that
  // its buffer may be reused. On return the request is finished and the transport no longer
  // touches it or its buffer.
  virtual void cancel(Request* req) = 0;

  // Tears down connections. The caller has passed a barrier with every peer first, so no peer
  // still sends. Waits at most until the deadline.
  virtual void close(Deadline deadline) = 0;

  // A peer this transport knows is gone (its process exited, its connection broke) and why, as
  // "rank 2: process 1234 exited"; empty while every peer is fine. The executor stops an
  // operation when any peer is gone: a collective cannot finish without it even where this rank
  // does not talk to it directly. Transports learn of failures inside progress().
  virtual std::string lostPeer() const { return {}; }
};

// Out-of-band exchange among the ranks of a communicator, used by transports to swap addresses
// at set-up. The bootstrap implements it over sockets; tests implement it in memory.
class OutOfBand {
 public:
  virtual ~OutOfBand() = default;
  virtual int rank() const = 0;
  virtual int nranks() const = 0;
  // Every rank contributes a blob (sizes may differ); returns all blobs indexed by rank.
  virtual std::vector<std::vector<uint8_t>> allGather(std::span<const uint8_t> mine,
                                                      Deadline deadline) = 0;
  virtual void barrier(Deadline deadline) = 0;
};

}  // namespace weft
